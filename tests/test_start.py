"""A light start: the package face and the hot paths of the command line import no SymPy,
numpy, matplotlib or pint (each costs a fraction of a second in a fresh process), and the paths
that a shipped device takes neither ``typing`` nor ``tomllib`` (9–17 ms of a fresh process on a
2-core machine)."""

import subprocess
import sys

import pytest

HEAVY = ("sympy", "numpy", "matplotlib", "pint")
SLOW = ("typing", "tomllib")
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


def test_the_api_on_a_shipped_device_loads_neither_typing_nor_tomllib():
    body = ("import roofline\n"
            "roofline.prefill('A100-80GB-SXM', 'Llama-2-7B', range(1, 1001))")
    assert _heavy_after(body, HEAVY + SLOW) == []


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "4096", "--json"],
    ["crossover", "--hardware", "MI300X", "--model", "Llama-2-7B", "--json"],
    ["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-70B", "--prompt", "4096",
     "--tp", "16", "--network", "InfiniBand-NDR", "--json"],
])
def test_the_commands_on_a_shipped_device_load_neither_typing_nor_tomllib(argv):
    body = ("from roofline.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit as stop:\n"
            "        assert not stop.code, stop.code")
    assert _heavy_after(body, SLOW) == []
