"""Speed benchmark: run ``python benchmarks/bench_speed.py`` from the repository root (after
``pip install .``, not an editable install). Every figure is a ratio to ``python -c "import
sympy"`` measured in the same run, interleaved with it, median of several fresh processes of
the installed ``roofline`` command, so a shared, noisy machine moves both sides alike.

Each process runs outside the checkout, with ``XDG_CACHE_HOME`` pointing at a cache of the
benchmark's own: "first" calls start from an empty cache (a fresh install, or a model whose
structure no earlier call derived), "later" calls find the code that the first wrote.

1. A shipped model, cache warm: ``prefill --json`` and ``crossover --json`` (≤ 0.3 ×).
2. Models of the user's own whose structure no shipped model has (tied embeddings; a sliding
   window; latent attention without a query latent): the first ``prefill --json`` (≤ 4 ×), the
   first ``crossover --json`` (≤ 8 ×), and every later call of either (≤ 0.3 ×).
3. ``roofline report``: the first after a fresh install (≤ 15 ×) and a later one (≤ 10 ×).
4. The API: ``roofline.prefill`` over 1,000 prompt lengths in a fresh process, cache warm, and a
   sweep of 1,000,000 prompt lengths of the whole prefill's time (numpy), per point.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 5
SETTING = ["--hardware", "A100-80GB-SXM", "--model", "Llama-2-7B"]
ELSEWHERE = Path(tempfile.mkdtemp(prefix="roofline-bench-"))


def _user_models() -> dict[str, Path]:
    """config.json files whose structure no shipped model has: Llama-3-8B with tied
    embeddings, with a sliding window, and DeepSeek-V2-Lite without its first dense layer."""
    from roofline.specs._shipped import shipped_files

    presets = {p.stem: p for p in shipped_files("models", ".json")}
    llama = json.loads(presets["Llama-3-8B"].read_text())
    deepseek = json.loads(presets["DeepSeek-V2-Lite"].read_text())
    variants = {"tied": {**llama, "tie_word_embeddings": True},
                "window": {**llama, "model_type": "mistral", "sliding_window": 4096},
                "latent": {**deepseek, "first_k_dense_replace": 0}}
    out = {}
    for name, config in variants.items():
        path = ELSEWHERE / f"{name}.json"
        path.write_text(json.dumps(config))
        out[name] = path
    return out


def _process(argv: list[str], cache: Path) -> float:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          cwd=ELSEWHERE, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {done.stderr.strip()}")
    return elapsed


def _sympy(cache: Path) -> float:
    return _process([sys.executable, "-c", "import sympy"], cache)


def _command() -> list[str]:
    found = shutil.which("roofline")
    return [found] if found else [sys.executable, "-m", "roofline"]


def _ratio(label: str, argv: list[str], target: float, first: bool, runs: int = RUNS) -> None:
    """Median over ``runs`` of the command's time, each beside an ``import sympy`` measured
    just before it; ``first``: each run in a new, empty cache."""
    times, ratios = [], []
    warm = Path(tempfile.mkdtemp(dir=ELSEWHERE))
    if not first:
        _process(argv, warm)  # the first call writes what the later ones read
    for _ in range(runs):
        cache = Path(tempfile.mkdtemp(dir=ELSEWHERE)) if first else warm
        base = _sympy(cache)
        t = _process(argv, cache)
        times.append(t)
        ratios.append(t / base)
    ratio = statistics.median(ratios)
    verdict = "met" if ratio <= target else "MISSED"
    print(f"{label:<52} {statistics.median(times):7.3f} s  {ratio:6.2f} ×  "
          f"(target ≤ {target} ×: {verdict})")


def main() -> None:
    roofline = _command()
    print(f"roofline: {' '.join(roofline)}; python: {sys.executable}")
    print(f"load: {os.getloadavg()[0]:.2f} (1-minute average, {os.cpu_count()} cores)\n")
    _ratio("shipped model, warm: prefill --json", [*roofline, "prefill", *SETTING, "--prompt",
                                                  "2048", "--json"], 0.3, first=False)
    _ratio("shipped model, warm: crossover --json", [*roofline, "crossover", *SETTING,
                                                    "--json"], 0.3, first=False)
    for name, path in _user_models().items():
        user = ["--hardware", "H100-SXM", "--model", str(path)]
        prefill = [*roofline, "prefill", *user, "--prompt", "2048", "--json"]
        crossover = [*roofline, "crossover", *user, "--json"]
        _ratio(f"own model ({name}): first prefill --json", prefill, 4, first=True, runs=3)
        _ratio(f"own model ({name}): first crossover --json", crossover, 8, first=True, runs=3)
        _ratio(f"own model ({name}): later prefill --json", prefill, 0.3, first=False)
        _ratio(f"own model ({name}): later crossover --json", crossover, 0.3, first=False)
    report = [*roofline, "report", "-o", str(ELSEWHERE / "report")]
    _ratio("report, first after a fresh install", report, 15, first=True, runs=3)
    _ratio("report, later", report, 10, first=False, runs=3)
    _api()


API = """
import time
start = time.perf_counter()
import roofline
roofline.prefill("A100-80GB-SXM", "Llama-2-7B", range(1, 1001))
print(time.perf_counter() - start)
"""
SWEEP = """
import time
import numpy as np
from roofline import api
from roofline.evaluate import prefill_time
s = api.setting("A100-80GB-SXM", "Llama-2-7B")
tokens = np.arange(1, 1_000_001)
prefill_time(s, tokens[:10])
start = time.perf_counter()
prefill_time(s, tokens)
print(time.perf_counter() - start)
"""


def _api() -> None:
    cache = Path(tempfile.mkdtemp(dir=ELSEWHERE))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}

    def run(code: str) -> float:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             cwd=ELSEWHERE, env=env, check=True).stdout
        return float(out.strip().splitlines()[-1])

    run(API)  # writes the cache
    per_point = statistics.median(run(API) for _ in range(RUNS)) / 1000
    sweep = statistics.median(run(SWEEP) for _ in range(3)) / 1e6
    print(f"{'API: roofline.prefill, 1,000 lengths, fresh process':<52} "
          f"{per_point * 1e6:7.1f} µs a point (import included)")
    print(f"{'API: prefill time over 1,000,000 lengths (numpy)':<52} "
          f"{sweep * 1e6:7.3f} µs a point")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(ELSEWHERE, ignore_errors=True)
