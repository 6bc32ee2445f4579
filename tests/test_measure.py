"""roofline.measure: statistics, system readers, the plan, the progress bar, tiny measurements.

Expected values are worked by hand; the full measurement is a command, not a test. The writing of
the file (formats, TOML, atomic write, checks) is tested in test_hwfile.py.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from roofline import hwfile as H
from roofline import measure as M
from roofline.specs.hardware import load_hardware

TINY = M.Plan(matmul_n=32, matmul_repeats=2, stream_elements=20_000, stream_repeats=2,
              chunk=4096, threads=2, why="tiny test sizes", gemm_d_in=64, gemm_d_out=256,
              gemm_repeats=2)


def test_summarize_and_rate() -> None:
    s = M.summarize([0.4, 0.1, 0.2, 0.3])
    assert (s.min, s.median, s.max, s.runs) == (0.1, 0.25, 0.4, 4)
    r = s.rate(2.0)  # 2 units of work: slowest run 5/s, median 8/s, fastest 20/s
    assert (r.min, r.median, r.max) == pytest.approx((5.0, 8.0, 20.0))


@pytest.mark.parametrize("bad", [[], [0.0], [1.0, -1.0], [math.inf]])
def test_summarize_rejects(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="timings must be positive and finite"):
        M.summarize(bad)


def test_time_call_counts_warmup_and_budget() -> None:
    calls = []
    times = M.time_call(lambda: calls.append(1), repeats=4, warmup=2)
    assert len(calls) == 6 and len(times) == 4 and all(t >= 0 for t in times)
    calls.clear()
    times = M.time_call(lambda: calls.append(1), repeats=10, warmup=0, budget_s=0.0)
    assert len(times) == 3  # the budget is spent at once, but three runs are kept


def _fake_sysfs(root: Path, caches: list[tuple[int, str, str, str]]) -> Path:
    for i, (level, kind, size, shared) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "shared_cpu_list").write_text(f"{shared}\n")
    return root


def test_cache_levels_from_sysfs(tmp_path: Path) -> None:
    root = _fake_sysfs(tmp_path, [(1, "Data", "48K", "0"), (1, "Instruction", "64K", "0"),
                                  (2, "Unified", "2048K", "0"), (3, "Unified", "32M", "0-3,8")])
    levels = M.cache_levels(root)
    assert [(c.level, c.type, c.size, c.shared_cpus) for c in levels] == [
        (1, "Data", 48 * 1024, 1), (1, "Instruction", 64 * 1024, 1),
        (2, "Unified", 2 * 2**20, 1), (3, "Unified", 32 * 2**20, 5)]
    assert M.last_level_cache(levels).size == 32 * 2**20
    assert M.per_core_cache(levels).size == 2 * 2**20
    assert M.last_level_cache([]) is None and M.per_core_cache([]) is None


def test_cache_levels_fallback(tmp_path: Path) -> None:
    levels = M.cache_levels(tmp_path / "missing")  # no sysfs: os.sysconf, or nothing
    assert all(c.source.startswith("os.sysconf") and c.size > 0 for c in levels)


def test_memory_bytes(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n")
    assert M.memory_bytes(f) == (24000000 * 1024, 20000000 * 1024)
    assert M.memory_bytes(tmp_path / "none") == (None, None)


def test_plan_sizes_from_caches() -> None:
    levels = [M.CacheLevel(2, "Unified", 2**20, 1, "x"), M.CacheLevel(3, "Unified", 2**25, 4, "y")]
    p = M.plan(levels=levels, available=2**34, n_threads=2)
    assert p.stream_elements == 4 * 2**25 // 8  # each array 4x the 32 MiB LLC, fp64
    assert p.chunk == 2**20 // 4 // 8  # a quarter of the private cache, fp64
    assert (p.matmul_n, p.matmul_repeats, p.threads) == (4096, 5, 2)
    # GEMM weight stream: fp32 W of d × 4d ≥ 2 × 32 MiB → 16·d² ≥ 2^26 → d = 2048 (64 MiB)
    assert (p.gemm_d_in, p.gemm_d_out, p.gemm_repeats) == (2048, 8192, 10)
    q = M.plan(quick=True, levels=levels, available=2**34, n_threads=1)
    assert q.stream_elements == 2 * 2**25 // 8 and q.matmul_n == 2048
    assert (q.gemm_d_in, q.gemm_repeats) == (2048, 3)
    capped = M.plan(levels=levels, available=2**28, n_threads=1)  # 256 MiB available
    assert 3 * 8 * capped.stream_elements <= 0.4 * 2**28 and "capped" in capped.why


def test_progress_bar() -> None:
    out = io.StringIO()
    bar = M.Progress(4, stream=out, width=8, tty=True)
    bar.step("one")
    bar.step("two", n=3)
    bar.close()
    text = out.getvalue()
    assert "[##......]  25%  one" in text and "[########] 100%  two" in text
    assert text.endswith("\n")
    silent = io.StringIO()
    M.Progress(2, enabled=False, stream=silent, tty=True).step("x")
    assert silent.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal() -> None:
    redirected = io.StringIO()  # a file or a pipe: isatty() is False
    bar = M.Progress(2, stream=redirected)
    bar.step("x", n=2)
    bar.close()
    assert redirected.getvalue() == "" and not bar.enabled
    terminal = _Terminal()
    bar = M.Progress(2, stream=terminal, width=4)
    bar.step("x", n=2)
    bar.close()
    assert terminal.getvalue() == "\r[####] 100%  x" + " " * 39 + "\n"


def test_kernels_tiny() -> None:
    work, times = M.measure_matmul("float32", 8, repeats=3)
    assert work == 2 * 8**3 and len(times) == 3
    res = M.measure_stream(10_000, repeats=2, chunk=1000, threads=2)
    assert res["copy"][0] == 16 * 10_000 and res["triad"][0] == 24 * 10_000
    assert all(len(t) == 2 for _, t in res.values())


def test_provenance_strings() -> None:
    prov = M.provenance()
    assert {"cpu", "cores", "numpy", "blas", "threads", "date"} <= set(prov)
    assert all(isinstance(v, str) and v for v in prov.values())
    assert int(prov["cores"]) >= 1


def test_measure_tiny_writes_a_loadable_file(tmp_path: Path) -> None:
    result = M.measure(the_plan=TINY)
    path = H.write_atomic(tmp_path / "me.toml", result.toml("tiny-machine"))
    hw = load_hardware(path)
    assert hw.name == "tiny-machine" and hw.kind == "cpu"
    for dtype in ("fp32", "fp64"):
        value = hw.peak_flops[dtype]
        low, high = hw.ranges[f"peak_flops.{dtype}"]
        assert math.isfinite(value) and 0 < low <= value <= high
    low, high = hw.ranges["memory.bandwidth"]
    assert math.isfinite(hw.memory_bandwidth) and 0 < low <= hw.memory_bandwidth <= high
    assert hw.memory_capacity > 0 and hw.sm_count >= 1
    assert "copy:" in hw.quantity_notes["memory.bandwidth"]
    assert "bf16" in hw.notes and hw.provenance["cores"] == str(M.cores())
    written = result.document("tiny-machine")["efficiency"]["bandwidth"]
    assert 0 < written["value"] <= 1 and hw.bandwidth_efficiency == written["value"]
    assert hw.bandwidth() == pytest.approx(hw.memory_bandwidth * written["value"])
    assert hw.quantity_notes["efficiency.bandwidth"].startswith("GEMM weight stream: ")
    assert set(result.gemm) == {"gemm", "gemv"}
    assert all(math.isfinite(s.median) and 0 < s.min <= s.median <= s.max
               for s in result.gemm.values())


def _measurement(triad: float, gemm: float) -> M.Measurement:
    """A measurement with chosen medians (bytes/s); the ranges are ±10%."""
    def s(x: float) -> M.Stats:
        return M.Stats(0.9 * x, x, 1.1 * x, 5)

    levels = [M.CacheLevel(2, "Unified", 2**21, 1, "l2"), M.CacheLevel(3, "Unified", 2**25, 2, "l3")]
    return M.Measurement(TINY, {"fp32": s(1e11)}, {"triad": s(triad), "copy": s(triad)}, levels,
                         2**34, {"cores": "2"}, gemm={"gemm": s(gemm), "gemv": s(3 * gemm)})


def test_efficiency_written_and_loaded(tmp_path: Path) -> None:
    # GEMM weight stream 8 GB/s against a 20 GB/s triad: efficiency 8/20 = 0.4
    path = H.write_atomic(tmp_path / "m.toml", _measurement(20e9, 8e9).toml("known"))
    hw = load_hardware(path)
    assert hw.memory_bandwidth == 20e9  # memory.bandwidth stays the triad
    assert hw.bandwidth_efficiency == 0.4 and hw.bandwidth() == pytest.approx(8e9)
    note = hw.quantity_notes["efficiency.bandwidth"]
    assert note.startswith("GEMM weight stream: 8 GB/s median (7.2 GB/s–8.8 GB/s)")
    assert "GEMV (1 row" in note and "24 GB/s median" in note and "recorded as 1" not in note
    assert "streaming its weights" in hw.sources["efficiency.bandwidth"]
    # faster than the triad: clamped to 1, and the note says so
    fast = load_hardware(H.write_atomic(tmp_path / "f.toml", _measurement(20e9, 25e9).toml("f")))
    assert fast.bandwidth_efficiency == 1.0 and fast.bandwidth() == 20e9
    assert "faster than the triad (ratio 1.25): recorded as 1" in fast.quantity_notes[
        "efficiency.bandwidth"]
