"""roofline.measure.calibrate: the GEMM weight-stream shape and bytes by hand, a tiny run, the entry."""

from __future__ import annotations

import math
import tomllib

import pytest

from roofline.measure import calibrate as C
from roofline.measure.hwfile import toml_document
from roofline.measure.timing import Stats


def test_gemm_shape_by_hand() -> None:
    # fp32 W of d × 4d is 16·d² bytes. 2 × 480 MiB: d = 4096 gives 256 MiB, d = 8192 gives 1 GiB
    assert C.gemm_shape(480 * 2**20, 24 * 2**30) == (8192, 32768)
    assert C.gemm_shape(None, None) == (4096, 16384)  # 64 MiB assumed: 2 × 64 MiB ≤ 256 MiB
    assert C.gemm_shape(2**10, None) == (256, 1024)  # never below 256
    d_in, d_out = C.gemm_shape(480 * 2**20, 2**31)  # W capped at a quarter of 2 GiB
    assert 4 * d_in * d_out <= 2**31 / 4 and d_out == 4 * d_in


def test_stream_bytes_by_hand() -> None:
    # b_w·d_in·d_out + b_a·rows·(d_in + d_out) = 4·64·256 + 4·8·320
    assert C.stream_bytes(8, 64, 256) == 65536 + 10240
    assert C.stream_bytes(1, 64, 256, elem=2) == 2 * 64 * 256 + 2 * 320


def test_measure_gemm_stream_tiny() -> None:
    res = C.measure_gemm_stream(64, 256, repeats=3)
    assert set(res) == {"gemm", "gemv"}
    assert res["gemm"][0] == C.stream_bytes(8, 64, 256)
    assert res["gemv"][0] == C.stream_bytes(1, 64, 256)
    assert all(len(t) == 3 and all(math.isfinite(x) and x > 0 for x in t) for _, t in res.values())


def _cal(gemm: float, triad: float) -> C.Calibration:
    return C.Calibration(8192, 32768, 8, Stats(0.9 * gemm, gemm, 1.1 * gemm, 10),
                         Stats(27e9, 30e9, 31e9, 10), triad)


def test_calibration_entry() -> None:
    cal = _cal(7.5e9, 18e9)  # 7.5/18 = 0.41666… → 0.4167
    assert cal.efficiency == 0.4167
    entry = cal.entry("2.13× the L3")
    assert tomllib.loads(toml_document({"e": {"b": entry}}))["e"]["b"]["value"] == 0.4167
    assert entry["note"].startswith("GEMM weight stream: 7.5 GB/s median (6.75 GB/s–8.25 GB/s) "
                                    "over 10 runs, triad 18 GB/s; X 8×8192 @ W 8192×32768 fp32 "
                                    "(W 1 GiB, 2.13× the L3)")
    assert "GEMV (1 row, the matrix–vector path, not used by the model): 30 GB/s" in entry["note"]
    assert "achievable fraction of the triad bandwidth" in entry["source"]
    fast = _cal(20e9, 16e9)
    assert fast.ratio == pytest.approx(1.25) and fast.efficiency == 1.0
    assert fast.entry("x")["note"].endswith("faster than the triad (ratio 1.25): recorded as 1")
