"""Speed benchmark: run ``python benchmarks/bench_speed.py`` from the repository root (after
``pip install .``). Every target but the API's is a ratio to ``python -c "import sympy"``
measured in the same run, interleaved, median of several fresh processes, so a shared, noisy
machine moves both sides alike.

1. Cold starts of the command line (fresh processes of the installed ``roofline`` command):
   ``roofline --help``, an unknown ``derive`` name, ``prefill … --json`` and ``crossover …
   --json`` (targets ≤ 0.25 × import sympy), ``derive NAME`` (≤ 1.5 ×) and ``report``
   (≤ 12 ×).
2. ``roofline.prefill`` over 1,000 prompt lengths in a fresh process, ``import roofline`` and
   loading the files included (target ≤ 50 µs per point; also as a ratio to ``python -c
   "import sympy"``, see :data:`API_RATIO`); then, apart, reading every point's records (each
   point's operations, built when read).
3. A sweep of 1,000,000 prompt lengths of the whole prefill's time (numpy; every operation at
   its own roof), per point.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
SETTING = ["--hardware", "A100-80GB-SXM", "--model", "Llama-2-7B"]
COMMANDS = {
    "--help": (["--help"], 0.25),
    "derive (unknown name)": (["derive", "no.such.name"], 0.25),
    "prefill --json": (["prefill", *SETTING, "--prompt", "2048", "--json"], 0.25),
    "crossover --json": (["crossover", *SETTING, "--json"], 0.25),
    "derive NAME": (["derive", "projection.flops"], 1.5),
}
API = """
import time
start = time.perf_counter()
import roofline
table = roofline.prefill("A100-80GB-SXM", "Llama-2-7B", range(1, 1001))
done = time.perf_counter()
records = list(table.points)
print(done - start, time.perf_counter() - done)
"""
API_CALL = """
import roofline
roofline.prefill("A100-80GB-SXM", "Llama-2-7B", range(1, 1001))
"""  # the call alone, for the whole process's time (its start and exit too)


# Every process runs outside the checkout: ``python -m roofline`` from the repository root would
# import the source tree (compiled afresh where bytecode is not written) instead of the installed
# package that a user runs.
ELSEWHERE = tempfile.mkdtemp(prefix="roofline-bench-")


def _process(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ELSEWHERE)
    return time.perf_counter() - start


def _medians(commands: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall time of each command, the commands interleaved run by run."""
    for argv in commands.values():  # warm the file-system cache, not the processes; and a
        # command that fails would time its error: refuse it (an unknown name is refused by
        # design, with status 2)
        code = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              cwd=ELSEWHERE).returncode
        if code != (2 if "no.such.name" in argv else 0):
            raise SystemExit(f"{' '.join(argv)} exited with status {code}")
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(_process(argv))
    return {name: statistics.median(t) for name, t in times.items()}


def _command() -> list[str]:
    """The installed ``roofline`` command beside this interpreter: what a user types and what
    the issue times. ``python -m roofline`` only where there is none: it starts through
    ``runpy``, which imports ``importlib.util`` and ``contextlib`` first (3 ms here)."""
    script = Path(sys.executable).with_name("roofline")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "roofline"]


def cold_starts() -> None:
    cli = _command()
    print(f"the command: {' '.join(cli)}")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"import sympy": [sys.executable, "-c", "import sympy"],
                    **{name: [*cli, *argv] for name, (argv, _) in COMMANDS.items()},
                    "report": [*cli, "report", "-o", tmp]}
        medians = _medians(commands, RUNS)
    base = medians["import sympy"]
    print(f"cold starts, fresh processes, median of {RUNS} (python -c 'import sympy': "
          f"{base:.3f} s)")
    targets = {**{name: t for name, (_, t) in COMMANDS.items()}, "report": 12.0}
    for name, target in targets.items():
        ratio = medians[name] / base
        verdict = "met" if ratio <= target else "NOT met"
        print(f"  {name:<24} {medians[name]:6.3f} s  {ratio:5.2f} × (target ≤ {target} ×: "
              f"{verdict})")


# The API's target is absolute (50 µs a point), the others ratios to ``python -c "import
# sympy"``. This machine's speed moves by half from hour to hour, so the API's time is also
# given as a ratio to that baseline timed in the same run, beside the ratio the issue's own
# figures imply: its report's ≤ 12 × is "about 3 s", a baseline of about 0.25 s, and 50 ms of
# that is 0.2 ×. Both the time in the process (from before ``import roofline``) and the whole
# process's (Python's own start too) are given.
API_RATIO = 0.05 / (3.0 / 12)


def api_points() -> None:
    """The API's call (the numbers of every point as columns), and then reading every point's
    record (built when read) apart; each run after a ``python -c "import sympy"`` (the cold
    starts' baseline)."""
    runs, walls, sympy = [], [], []
    for _ in range(RUNS):
        sympy.append(_process([sys.executable, "-c", "import sympy"]))
        walls.append(_process([sys.executable, "-c", API_CALL]))
        runs.append(tuple(map(float, subprocess.run([sys.executable, "-c", API],
                                                    capture_output=True, text=True,
                                                    cwd=ELSEWHERE, check=True).stdout.split())))
    call, read = (statistics.median(r[i] for r in runs) for i in (0, 1))
    base = statistics.median(sympy)
    ratios = {"in the process": call / base,
              "the whole process": statistics.median(walls) / base}
    print(f"roofline.prefill over 1,000 prompt lengths, fresh process, import included: "
          f"{call:.3f} s = {call / 1000 * 1e6:.1f} µs per point (target ≤ 50 µs: "
          f"{'met' if call <= 0.05 else 'NOT met'}); reading every point's records after it: "
          f"{read / 1000 * 1e6:.1f} µs per point")
    for what, ratio in ratios.items():
        print(f"  {what}: {ratio:.2f} × python -c 'import sympy' ({base:.3f} s; the target "
              f"at the issue's import sympy, {API_RATIO:.2f} ×: "
              f"{'met' if ratio <= API_RATIO else 'NOT met'})")


def sweep() -> None:
    import numpy as np

    from roofline.api import setting
    from roofline.evaluate import prefill_time

    s = setting("H100-SXM", "Llama-3-8B")
    prompts = np.arange(1, 1_000_001)
    start = time.perf_counter()
    prefill_time(s, prompts[:1])
    first = time.perf_counter() - start
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        prefill_time(s, prompts)
        runs.append(time.perf_counter() - start)
    median = statistics.median(runs)
    print(f"sweep of 1,000,000 prompt lengths (H100-SXM, Llama-3-8B): first call {first:.3f} s, "
          f"sweep {median:.3f} s = {median:.3f} µs per point")


if __name__ == "__main__":
    where = subprocess.run([sys.executable, "-c", "import roofline; print(roofline.__file__)"],
                           capture_output=True, text=True, cwd=ELSEWHERE, check=True).stdout
    print(f"timing the roofline installed at {where.strip()}")
    try:
        cold_starts()
        api_points()
        sweep()
    finally:
        shutil.rmtree(ELSEWHERE, ignore_errors=True)
