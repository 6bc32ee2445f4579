"""roofline.validate: predictions against hand-worked numbers, the comparison and the knee fit
on synthetic timings with a known answer, the attention kernels against a plain loop, and a tiny
end-to-end run (its report written by roofline.validation_report)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from roofline import validate as V
from roofline import validation_report as R
from roofline.measure import Stats

P, BETA = 1e9, 1e9  # round numbers for hand-worked predictions


def _pt(T: int, predicted: float, measured: float, flops: float = 1.0, nbytes: float = 1.0) -> V.Point:
    return V.Point(T, flops, nbytes, predicted, 0.0, Stats(measured, measured, measured, 1),
                   predicted)


def test_predict_projection_by_hand() -> None:
    # T=2, 3→5 fp32: F = 2·2·3·5 = 60; Q = 4·3·5 + 4·2·(3+5) = 124 bytes
    f, q, t = V.predict_projection(2, 3, 5, P, BETA, t_call=1e-6)
    assert (f, q) == (60.0, 124.0)
    assert t == pytest.approx(1e-6 + 124e-9)
    f, q, t = V.predict_projection(1000, 3, 5, 1e3, 1e9)  # compute-bound
    assert t == pytest.approx(f / 1e3)


def test_projection_crossover_closed_form() -> None:
    # intensity 2·T·d²/(4d² + 8·T·d) = I  ⇒  T = 4·I·d / (2d − 8·I)
    d, ridge = 4096, 320e9 / 20e9
    expected = 4 * ridge * d / (2 * d - 8 * ridge)
    assert V.projection_crossover(d, d, 320e9, 20e9) == pytest.approx(expected)
    f, q, _ = V.predict_projection(round(expected), d, d, P, BETA)
    assert f / q == pytest.approx(ridge, rel=0.02)
    assert V.projection_crossover(8, 8, 1e12, 1.0) is None  # ridge above the T → ∞ limit d/4


def test_predict_attention_by_hand() -> None:
    # T=4, one head, H=2, fp32. naive: F = 4·H·T² = 128; Q = 4·(4·H·T + 4·T²) = 384 bytes
    f, q, t = V.predict_attention("naive", 4, 1, 2, 64.0, P, BETA, t_call=1e-6, calls=9)
    assert (f, q) == (128.0, 384.0) and t == pytest.approx(9e-6 + 384e-9)
    # blocked, M = 64 bytes = 16 elements: B_c = 16/(4·2) = 2 = B_r; T_c = 2; causal rows
    # visited 4·2 − 2·2·1/2 = 6; per head 2TH + TH + 2T + 6·(3H + 4) = 16 + 16 + 60 = 92 elements
    f, q, _ = V.predict_attention("blocked", 4, 1, 2, 64.0, P, BETA)
    assert (f, q) == (2 * 2 * 4 * 5, 4 * 92.0)  # causal F = 2·H·T·(T+1)
    with pytest.raises(ValueError, match="unknown attention form 'flash'"):
        V.predict_attention("flash", 4, 1, 2, 64.0, P, BETA)


def test_block_sizes() -> None:
    assert V.block_sizes(64, 2 * 2**20) == (2048, 64)  # 2 MiB / 4 B = 2^19 elements / 256
    assert V.block_sizes(2, 64) == (2, 2)
    assert V.block_sizes(128, 48 * 1024) == (24, 24)  # 12288 elements / 512


def test_projection_width() -> None:
    assert V.projection_width(480 * 2**20, 24 * 2**30)[0] == 16384  # 1 GiB ≥ 960 MiB
    assert V.projection_width(2**20, 2**34)[0] == 1024  # never below 1024
    d, why = V.projection_width(2**30, 2**30)  # 1 GiB available: capped
    assert 4 * (d * d + 2 * 4096 * d) <= 2**30 / 4 and "capped" in why


@pytest.mark.parametrize("a, b", [(1.0, 0.1), (0.05, 0.001), (2e-3, 1e-3)])
def test_fit_knee_exact_hinge(a: float, b: float) -> None:
    ts = [2**i for i in range(13)]
    knee = V.fit_knee(ts, [max(a, b * t) for t in ts])
    assert knee.knee == pytest.approx(a / b, rel=1e-9)
    assert knee.plateau == pytest.approx(a) and knee.slope == pytest.approx(b)


def test_fit_knee_with_noise_and_edge_cases() -> None:
    ts = [2**i for i in range(13)]
    noise = [1.05, 0.95, 1.02, 0.98, 1.04, 0.97, 1.0, 1.03, 0.96, 1.01, 0.99, 1.05, 0.95]
    knee = V.fit_knee(ts, [max(0.1, 0.001 * t) * n for t, n in zip(ts, noise)])
    assert knee.knee == pytest.approx(100, rel=0.15)
    assert V.fit_knee([1, 2, 4], [1.0, 1.0, 2.0]) is None  # too few points
    assert V.fit_knee([1, 2, 4, 8], [1.0, 0.0, 1.0, 2.0]) is None  # a non-positive time


def test_median_abs_error_and_ratio() -> None:
    # errors |p/m − 1|: 0.5, 0.25, 0.1, 1.0 → median (0.25 + 0.5)/2
    pts = [_pt(1, 1.5, 1.0), _pt(2, 0.75, 1.0), _pt(4, 1.1, 1.0), _pt(8, 4.0, 2.0)]
    assert V.median_abs_error(pts) == pytest.approx(0.375)
    assert V.median_abs_error(pts[:3]) == pytest.approx(0.25)
    assert pts[0].ratio == pytest.approx(1 / 1.5)
    with pytest.raises(ValueError, match="no points"):
        V.median_abs_error([])


def _reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal attention one query row at a time, in float64."""
    heads, n, d = q.shape
    out = np.zeros((heads, n, d))
    for h in range(heads):
        for i in range(n):
            s = k[h, : i + 1].astype(np.float64) @ q[h, i] / math.sqrt(d)
            p = np.exp(s - s.max())
            out[h, i] = p @ v[h, : i + 1] / p.sum()
    return out


@pytest.mark.parametrize("b_c, b_r", [(2, 2), (3, 2), (4, 1), (16, 16)])
def test_attention_kernels_agree_with_a_loop(b_c: int, b_r: int) -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 7, 3), dtype=np.float32) for _ in range(3))
    ref = _reference_attention(q, k, v)
    mask = np.triu(np.full((7, 7), -np.inf, np.float32), 1)
    naive, n_naive = V.naive_attention(q, k, v, mask)
    blocked, n_blocked = V.blocked_attention(q, k, v, b_c, b_r)
    assert np.allclose(naive, ref, atol=1e-5) and np.allclose(blocked, ref, atol=1e-5)
    assert n_naive == 9 and n_blocked > 0


class _Hw(SimpleNamespace):
    def peak(self, dtype: str) -> float:
        return self.flops[dtype]

    def bandwidth(self) -> float:
        return self.memory_bandwidth * self.bandwidth_efficiency


def test_validate_tiny_end_to_end(tmp_path: Path) -> None:
    hw = _Hw(name="fake", path="fake.toml", flops={"fp32": 1e10}, memory_bandwidth=4e9,
             bandwidth_efficiency=0.25, sram_per_sm=4096,
             quantity_notes={"efficiency.bandwidth": "GEMM weight stream: 1 GB/s"})
    v = V.validate(hw, tokens=[1, 2, 4, 8], width=64, attn_tokens=[8, 20], repeats=2,
                   budget_s=0.05)
    assert [p.T for p in v.projection] == [1, 2, 4, 8]
    assert all(p.predicted > 0 and p.measured.median > 0 for p in v.projection)
    # the prediction is the exact model plus the measured overhead term
    f, q, t = V.predict_projection(4, 64, 64, 1e10, 1e9, v.t_call)  # calibrated β = 4e9 · 0.25
    assert v.projection[2].predicted == pytest.approx(t)
    # by hand: Q = 4·64·64 + 4·4·128 = 18432 bytes; F = 2·4·64·64 = 32768 FLOPs (3.3 µs at 1e10)
    assert (f, q) == (32768.0, 18432.0)
    assert v.projection[2].uncalibrated == pytest.approx(v.t_call + 18432 / 4e9)
    assert v.calibrated and v.beta == 1e9 and v.beta_uncalibrated == 4e9
    # intensity 2·T·64²/(4·64² + 8·64·T) = ridge: T = 16384·ridge/(8192 − 512·ridge), ridge =
    # 1e10/1e9 = 10 calibrated, 1e10/4e9 = 2.5 uncalibrated
    assert v.crossover == pytest.approx(163840 / 3072)
    assert v.crossover_uncalibrated == pytest.approx(40960 / 6912)
    assert v.attention["naive"][0].uncalibrated < v.attention["naive"][0].predicted
    assert set(v.attention) == {"naive", "blocked"} and v.m_sram == 4096
    assert v.attention["blocked"][1].overhead > v.attention["naive"][1].overhead
    paths = R.write_report(v, tmp_path / "out")
    assert [p.name for p in paths] == ["validation.md", "validation.png"]
    assert paths[1].stat().st_size > 10_000
    assert "# Validation on fake" in paths[0].read_text()
    assert "P_peak is the hardware file's fp32 peak;" in paths[0].read_text()  # no source given
    assert "uncalibrated predicted" in paths[0].read_text()
