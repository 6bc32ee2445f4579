"""roofline.measure.validation: the comparison and the knee fit on synthetic timings with a
known answer, the records, and a tiny end-to-end run (its report written by
roofline.measure.report)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from roofline.measure import predict
from roofline.measure import report as R
from roofline.measure import validation as V
from roofline.measure.timing import Stats

P, BETA = 1e9, 1e9  # round numbers for hand-worked predictions


def _pt(T: int, predicted: float, measured: float, flops: float = 1.0,
        nbytes: float = 1.0) -> V.Point:
    return V.Point(T=T, flops=flops, bytes=nbytes, predicted=predicted, overhead=0.0,
                   measured=Stats(measured, measured, measured, 1), no_overlap=predicted)


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


class _Hw(SimpleNamespace):
    def peak(self, dtype: str) -> float:
        return self.flops[dtype]

    def bandwidth(self) -> float:
        return self.memory_bandwidth * self.bandwidth_efficiency


def test_records_are_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        V.Point(1, 1.0, 1.0, 1.0, 0.0, Stats(1.0, 1.0, 1.0, 1))  # type: ignore[misc]
    p = _pt(1, 1.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.T = 2  # type: ignore[misc]


def test_validate_tiny_end_to_end(tmp_path: Path) -> None:
    hw = _Hw(name="fake", path="fake.toml", flops={"fp32": 1e10}, memory_bandwidth=4e9,
             bandwidth_efficiency=0.25, sram_per_sm=4096,
             quantity_notes={"efficiency.bandwidth": "GEMM weight stream: 1 GB/s"})
    v = V.validate(hw, tokens=[1, 2, 4, 8], width=64, attn_tokens=[8, 20], repeats=2,
                   budget_s=0.05)
    m, proj, attn = v.machine, v.projection, v.attention
    assert [p.T for p in proj.points] == [1, 2, 4, 8]
    assert all(p.predicted > 0 and p.measured.median > 0 for p in proj.points)
    # the prediction is the exact model plus the measured overhead term
    f, q, t = predict.predict_projection(4, 64, 64, 1e10, 1e9, m.t_call)  # β = 4e9 · 0.25
    assert proj.points[2].predicted == pytest.approx(t)
    # by hand: Q = 4·64·64 + 4·4·128 = 18432 bytes; F = 2·4·64·64 = 32768 FLOPs (3.3 µs at 1e10)
    assert (f, q) == (32768.0, 18432.0)
    assert proj.points[2].uncalibrated == pytest.approx(m.t_call + 18432 / 4e9)
    assert m.calibrated and m.beta == 1e9 and m.beta_uncalibrated == 4e9
    # intensity 2·T·64²/(4·64² + 8·64·T) = ridge: T = 16384·ridge/(8192 − 512·ridge), ridge =
    # 1e10/1e9 = 10 calibrated, 1e10/4e9 = 2.5 uncalibrated
    assert proj.crossover == pytest.approx(163840 / 3072)
    assert proj.crossover_uncalibrated == pytest.approx(40960 / 6912)
    assert attn.forms["naive"][0].uncalibrated < attn.forms["naive"][0].predicted
    assert set(attn.forms) == {"naive", "blocked"} and attn.m_sram == 4096
    assert attn.forms["blocked"][1].overhead > attn.forms["naive"][1].overhead
    paths = R.write_report(v, tmp_path / "out")
    assert [p.name for p in paths] == ["validation.md", "validation.png"]
    assert paths[1].stat().st_size > 10_000
    assert "# Validation on fake" in paths[0].read_text()
    assert "P_peak is the hardware file's fp32 peak;" in paths[0].read_text()  # no source given
    assert "uncalibrated predicted" in paths[0].read_text()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["validation.md",
                                                                   "validation.png"]
