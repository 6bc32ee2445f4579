"""Speed benchmark (issue 3): run ``python benchmarks/bench_speed.py`` from the repository root.

1. A sweep of 1,000,000 prompt lengths of whole-model prefill time (every operation at its own
   roof, max(F/P, Q/β) per operation, summed) for H100-SXM and Llama-3-8B: the first call
   (which substitutes and compiles the expression with ``lambdify``) and the sweep itself,
   per point. Target: the sweep under 0.5 s, ≥ 10× faster per point than the fastest peer
   measured on this kind of machine (about 3 µs per point), i.e. ≤ 0.3 µs.
2. The cold start of ``roofline crossover --json`` against ``python -c "import sympy"``, both as
   fresh processes, median of several runs. Target: within 2.5× the bare SymPy import.

Ratios are measured in one run, so a shared, noisy machine moves both sides alike.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import numpy as np

POINTS = 1_000_000
RUNS = 7


def sweep() -> dict[str, float]:
    from roofline.api import setting
    from roofline.evaluate import prefill_time

    s = setting("H100-SXM", "Llama-3-8B")
    prompts = np.arange(1, POINTS + 1)
    start = time.perf_counter()
    prefill_time(s, prompts[:1])
    first = time.perf_counter() - start
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        prefill_time(s, prompts)
        runs.append(time.perf_counter() - start)
    best, median = min(runs), statistics.median(runs)
    return {"compile_s": first, "sweep_median_s": median, "sweep_best_s": best,
            "per_point_us": median / POINTS * 1e6}


def _process(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def cold_start() -> dict[str, float]:
    cli = [sys.executable, "-m", "roofline", "crossover", "--hardware", "H100-SXM", "--model",
           "Llama-3-8B", "--json"]
    bare = [sys.executable, "-c", "import sympy"]
    _process(cli), _process(bare)  # warm the file-system cache, not the processes
    ours, theirs = [], []
    for _ in range(RUNS):  # interleaved, so both see the same load
        ours.append(_process(cli))
        theirs.append(_process(bare))
    return {"crossover_cli_s": statistics.median(ours),
            "import_sympy_s": statistics.median(theirs),
            "ratio": statistics.median(ours) / statistics.median(theirs)}


def main() -> None:
    s = sweep()
    print(f"sweep of {POINTS:,} prompt lengths (H100-SXM, Llama-3-8B, all operations):")
    print(f"  first call (substitute + lambdify): {s['compile_s']:.3f} s")
    print(f"  sweep: median {s['sweep_median_s']:.3f} s, best {s['sweep_best_s']:.3f} s "
          f"= {s['per_point_us']:.3f} µs per point (target ≤ 0.5 s; ≤ 0.3 µs per point)")
    c = cold_start()
    print("cold start, fresh processes, median of", RUNS)
    print(f"  roofline crossover --json: {c['crossover_cli_s']:.3f} s")
    print(f"  python -c 'import sympy':  {c['import_sympy_s']:.3f} s")
    print(f"  ratio: {c['ratio']:.2f}× (target ≤ 2.5×)")


if __name__ == "__main__":
    main()
