"""A light start: the package face imports no SymPy, numpy, matplotlib or pint (each costs a
fraction of a second in a fresh process), and once the generated code is in the user's cache the
hot paths of the command line import none of them either: a later call reads what SymPy wrote."""

import subprocess
import sys

import pytest

HEAVY = ("sympy", "numpy", "matplotlib", "pint")
PROBE = """
import contextlib, io, sys
{body}
print("loaded:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _heavy_after(body: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    code = PROBE.format(body=body, heavy=heavy)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return [m for m in out.removeprefix("loaded:").split(",") if m]


def test_import_roofline_is_light():
    assert _heavy_after("import roofline") == []


def _command(argv: list[str]) -> str:
    return ("from roofline.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), "
            "contextlib.redirect_stderr(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass")


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["derive", "no.such.name"],
    ["derive", "projection.flops"],
    ["prefill", "--hardware", "A100-80GB-SXM", "--model", "Llama-2-7B", "--prompt", "2048",
     "--json"],
    ["crossover", "--hardware", "H100-SXM", "--model", "Mixtral-8x7B", "--json"],
    ["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-70B", "--prompt", "4096",
     "--tp", "16", "--network", "InfiniBand-NDR", "--json"],
])
def test_a_later_call_loads_nothing_heavy(argv):
    first = _heavy_after(_command(argv))  # may derive, and write the cache
    assert _heavy_after(_command(argv)) == [], first


def test_the_first_call_of_a_new_architecture_derives_with_sympy(tmp_path):
    """A negative control: with nothing in the cache, the first call needs SymPy (so the test
    above sees an import when there is one)."""
    body = (f"import os; os.environ['XDG_CACHE_HOME'] = {str(tmp_path)!r}\n"
            + _command(["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B"]))
    assert "sympy" in _heavy_after(body)


def test_the_api_loads_nothing_heavy_once_cached():
    body = ("import roofline\n"
            "roofline.prefill('A100-80GB-SXM', 'Llama-2-7B', range(1, 1001))")
    _heavy_after(body)
    assert _heavy_after(body) == []
