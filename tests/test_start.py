"""A light start: the package face and the hot paths of the command line import no SymPy,
numpy, matplotlib or pint (each costs a fraction of a second in a fresh process)."""

import subprocess
import sys

import pytest

HEAVY = ("sympy", "numpy", "matplotlib", "pint")
PROBE = """
import contextlib, io, sys
{body}
print("loaded:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _heavy_after(body: str) -> list[str]:
    code = PROBE.format(body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return [m for m in out.removeprefix("loaded:").split(",") if m]


def test_import_roofline_is_light():
    assert _heavy_after("import roofline") == []


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["derive", "no.such.name"],
    ["prefill", "--hardware", "A100-80GB-SXM", "--model", "Llama-2-7B", "--prompt", "2048",
     "--json"],
    ["crossover", "--hardware", "H100-SXM", "--model", "Mixtral-8x7B", "--json"],
])
def test_hot_paths_load_nothing_heavy(argv):
    body = ("from roofline.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), "
            "contextlib.redirect_stderr(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass")
    assert _heavy_after(body) == []
