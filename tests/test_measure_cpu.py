"""roofline.measure.cpu: the plan from cache sizes, a tiny measurement written and loaded back,
the efficiency entry. Expected values are worked by hand; the full measurement is a command, not a
test. Number formats and TOML are tested in test_measure_hwfile.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline.measure import cpu, system, timing
from roofline.measure.hwfile import write_hardware
from roofline.specs.hardware import load_hardware

TINY = cpu.Plan(matmul_n=32, matmul_repeats=2, stream_elements=20_000, stream_repeats=2,
                chunk=4096, threads=2, why="tiny test sizes", gemm_d_in=64, gemm_d_out=256,
                gemm_repeats=2)


def test_plan_sizes_from_caches() -> None:
    levels = [system.CacheLevel(2, "Unified", 2**20, 1, "x"),
              system.CacheLevel(3, "Unified", 2**25, 4, "y")]
    p = cpu.plan(levels=levels, available=2**34, n_threads=2)
    assert p.stream_elements == 4 * 2**25 // 8  # each array 4x the 32 MiB LLC, fp64
    assert p.chunk == 2**20 // 4 // 8  # a quarter of the private cache, fp64
    assert (p.matmul_n, p.matmul_repeats, p.threads) == (4096, 5, 2)
    # GEMM weight stream: fp32 W of d × 4d ≥ 2 × 32 MiB → 16·d² ≥ 2^26 → d = 2048 (64 MiB)
    assert (p.gemm_d_in, p.gemm_d_out, p.gemm_repeats) == (2048, 8192, 10)
    q = cpu.plan(quick=True, levels=levels, available=2**34, n_threads=1)
    assert q.stream_elements == 2 * 2**25 // 8 and q.matmul_n == 2048
    assert (q.gemm_d_in, q.gemm_repeats) == (2048, 3)
    capped = cpu.plan(levels=levels, available=2**28, n_threads=1)  # 256 MiB available
    assert 3 * 8 * capped.stream_elements <= 0.4 * 2**28 and "capped" in capped.why


def test_measure_tiny_writes_a_loadable_file(tmp_path: Path) -> None:
    result = cpu.measure(the_plan=TINY)
    path = write_hardware(tmp_path / "me.toml", result.document("tiny-machine"))
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
    assert "bf16" in hw.notes and hw.provenance["cores"] == str(system.cores())
    written = result.document("tiny-machine")["efficiency"]["bandwidth"]
    assert 0 < written["value"] <= 1 and hw.bandwidth_efficiency == written["value"]
    assert hw.bandwidth() == pytest.approx(hw.memory_bandwidth * written["value"])
    assert hw.quantity_notes["efficiency.bandwidth"].startswith("GEMM weight stream: ")
    assert set(result.gemm) == {"gemm", "gemv"}
    assert all(math.isfinite(s.median) and 0 < s.min <= s.median <= s.max
               for s in result.gemm.values())


def _measurement(triad: float, gemm: float) -> cpu.Measurement:
    """A measurement with chosen medians (bytes/s); the ranges are ±10%."""
    def s(x: float) -> timing.Stats:
        return timing.Stats(0.9 * x, x, 1.1 * x, 5)

    levels = [system.CacheLevel(2, "Unified", 2**21, 1, "l2"),
              system.CacheLevel(3, "Unified", 2**25, 2, "l3")]
    return cpu.Measurement(plan=TINY, flops={"fp32": s(1e11)},
                           stream={"triad": s(triad), "copy": s(triad)}, levels=levels,
                           memory_total=2**34, provenance={"cores": "2"},
                           gemm={"gemm": s(gemm), "gemv": s(3 * gemm)})


def test_efficiency_written_and_loaded(tmp_path: Path) -> None:
    # GEMM weight stream 8 GB/s against a 20 GB/s triad: efficiency 8/20 = 0.4
    path = write_hardware(tmp_path / "m.toml", _measurement(20e9, 8e9).document("known"))
    hw = load_hardware(path)
    assert hw.memory_bandwidth == 20e9  # memory.bandwidth stays the triad
    assert hw.bandwidth_efficiency == 0.4 and hw.bandwidth() == pytest.approx(8e9)
    note = hw.quantity_notes["efficiency.bandwidth"]
    assert note.startswith("GEMM weight stream: 8 GB/s median (7.2 GB/s–8.8 GB/s)")
    assert "GEMV (1 row" in note and "24 GB/s median" in note and "recorded as 1" not in note
    assert "streaming its weights" in hw.sources["efficiency.bandwidth"]
    # faster than the triad: clamped to 1, and the note says so
    fast = load_hardware(write_hardware(tmp_path / "f.toml",
                                        _measurement(20e9, 25e9).document("f")))
    assert fast.bandwidth_efficiency == 1.0 and fast.bandwidth() == 20e9
    assert "faster than the triad (ratio 1.25): recorded as 1" in fast.quantity_notes[
        "efficiency.bandwidth"]
