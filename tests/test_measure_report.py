"""roofline.measure.report and roofline.plot.validate: the report's text and figures on
synthetic validations with a known answer (targets met or missed, the knee's fit domain, the
calibrated comparison) and the plotted data."""

from __future__ import annotations

import dataclasses

import pytest

from roofline.measure import report as R
from roofline.measure import validation as V
from roofline.measure.timing import Stats

P, BETA = 1e9, 1e9  # round numbers for hand-worked predictions


def _synthetic(ts: list[int], a: float, b: float, calibrated: bool = False) -> V.Validation:
    """Plateau a, slope b; measured 1.1× the prediction. ``calibrated``: the file's bandwidth
    efficiency is 1/2, so the uncalibrated prediction's plateau is a/2."""
    pts = tuple(V.Point(T=t, flops=b * t * P, bytes=a * BETA, predicted=max(a, b * t),
                        overhead=0.0, measured=Stats(*[max(a, b * t) * 1.1] * 3, 1),
                        no_overlap=max(a, b * t), uncalibrated=max(a / 2, b * t))
                for t in ts)
    machine = V.Machine(name="synthetic", hardware_path="hw.toml", dtype="fp32", p_peak=P,
                        beta=BETA, beta_uncalibrated=2 * BETA if calibrated else BETA,
                        t_call=1e-6,
                        calibration="GEMM weight stream: 1 GB/s median" if calibrated else "")
    projection = V.ProjectionSweep(d_in=8, d_out=8, sizing="test", points=pts, crossover=a / b,
                                   crossover_uncalibrated=a / (2 * b) if calibrated else a / b)
    attention = V.AttentionSweep(heads=1, head_dim=2, m_sram=64.0, m_sram_source="test",
                                 note="note", forms={"naive": pts[:4]})
    return V.Validation(machine=machine, projection=projection, attention=attention)


def test_markdown_reports_targets() -> None:
    v = _synthetic([2**i for i in range(10)], 1e-3, 1e-5)  # knee at T = 100
    assert v.projection.mae == pytest.approx(1 - 1 / 1.1)
    assert v.projection.knee.knee == pytest.approx(100)
    text = R.markdown(v)
    assert "**9.1%** (target ≤ 25%: met)" in text
    assert "Knee / crossover = 1.00 (target within a factor of 2: met)" in text
    assert "| 1 |" in text and "### naive" in text and "![measured against predicted]" in text
    skipped = dataclasses.replace(v, gpu_skipped="PyTorch is not installed")
    assert "GPU part skipped: PyTorch is not installed" in R.markdown(skipped)
    assert "GPU part skipped" not in text
    assert not v.machine.calibrated and "uncalibrated" not in text  # efficiency 1: one prediction


def _reviewed(ts: list[int], times: list[float], source: str = "") -> V.Validation:
    """A validation whose measured medians are ``times`` (the predictions do not matter here)."""
    pts = tuple(V.Point(T=t, flops=1.0, bytes=1.0, predicted=y, overhead=0.0,
                        measured=Stats(y, y, y, 1), no_overlap=y) for t, y in zip(ts, times))
    machine = V.Machine(name="box", hardware_path="hw.toml", dtype="fp32", p_peak=P, beta=BETA,
                        beta_uncalibrated=BETA, t_call=1e-6, peak_source=source)
    return V.Validation(machine=machine, projection=V.ProjectionSweep(
        d_in=8, d_out=8, sizing="test", points=pts, crossover=72.4))


def test_measured_knee_leaves_out_t_equal_one() -> None:
    # A --quick run reviewed by hand: T = 1 (numpy's GEMV path) runs 3× faster than the plateau.
    ts, times = [1, 4, 16, 64, 256, 1024], [0.0351, 0.108, 0.114, 0.179, 0.463, 1.65]
    v = _reviewed(ts, times, "roofline measure: numpy matmul 2048^3 fp32, median of 3")
    assert [p.T for p in v.projection.knee_points] == [4, 16, 64, 256, 1024]
    # the best split is three flat points and two sloped ones: the plateau is the geometric mean
    # of 108, 114 and 179 ms, the slope that of 463/256 and 1650/1024 ms per token
    plateau = (0.108 * 0.114 * 0.179) ** (1 / 3)
    slope = (0.463 / 256 * 1.65 / 1024) ** (1 / 2)
    knee = v.projection.knee
    assert knee.plateau == pytest.approx(plateau) and knee.knee == pytest.approx(plateau / slope)
    assert knee.knee == pytest.approx(76.2, abs=0.1)  # against 37.6 with T = 1 in the fit
    assert V.fit_knee(ts, times).knee == pytest.approx(37.6, abs=0.1)
    text = R.markdown(v)
    assert ("hinge fit t = max(a, b·T) in log–log on T = 4…1024; T = 1 is left out: it takes "
            "the matrix–vector (GEMV) path, which the model does not cover; plateau 130 ms") in text
    assert "Knee / crossover = 1.05 (target within a factor of 2: met)." in text
    assert "the measured knee is therefore fitted on T ≥ 2 only." in text
    # the compute-bound paragraph quotes the shape P_peak was measured on
    assert ("P_peak is the rate of a square 2048³ product (the hardware file's source: "
            "\"roofline measure: numpy matmul 2048^3 fp32, median of 3\")") in text
    assert "4096³" not in text


def test_peak_sentence_without_a_matmul_source() -> None:
    text = R.markdown(_reviewed([2, 4, 8, 16], [1.0, 1.0, 2.0, 4.0], "vendor datasheet"))
    assert "P_peak is the hardware file's fp32 peak (its source: \"vendor datasheet\")" in text
    assert "on T = 2…16; plateau" in text  # no T = 1 measured: nothing left out
    few = R.markdown(_reviewed([1, 2, 4, 8], [1.0, 1.0, 2.0, 4.0]))
    assert "- Measured knee: no fit (fewer than four points with T ≥ 2)" in few


def test_calibrated_comparison_known_answer() -> None:
    # T = 1…512, knee at 100; the uncalibrated plateau a/2 meets b·T at T = 50. Errors against
    # measured = 1.1 × calibrated: calibrated 1 − 1/1.1 everywhere; uncalibrated 1 − 1/2.2 for
    # T = 1…32 (six points), |0.64/1.1 − 1| at T = 64, 1 − 1/1.1 for T = 128…512 (three):
    # the median of ten is the mean of the 5th and 6th smallest, both 1 − 1/2.2.
    v = _synthetic([2**i for i in range(10)], 1e-3, 1e-5, calibrated=True)
    assert v.machine.calibrated
    assert v.projection.mae == pytest.approx(1 - 1 / 1.1)
    assert v.projection.mae_uncalibrated == pytest.approx(1 - 1 / 2.2)
    text = R.markdown(v)
    assert ("**9.1%** (target ≤ 25%: met); uncalibrated (beta_hbm = memory.bandwidth): "
            "54.5%.") in text
    assert ("beta_hbm (calibrated) = memory.bandwidth 2 GB/s × efficiency.bandwidth 0.5 = "
            "**1 GB/s**; ridge 1.0 FLOP/byte (uncalibrated: 0.5)") in text
    assert "**T = 100.0** (uncalibrated: T = 50.0)." in text
    assert "bandwidth calibration (hardware file's note): GEMM weight stream: 1 GB/s" in text
    assert "| uncalibrated predicted | measured/uncalibrated |" in text
    assert "| 1.10 | 500 µs | 2.20 |" in text  # T = 1: predicted 1 ms, uncalibrated 0.5 ms
    assert "T = 1: numpy's one-row product takes BLAS's matrix–vector (GEMV) path" in text
    assert "(measured/predicted 1.10 here)" in text


def test_plots_show_the_data() -> None:
    from matplotlib.figure import Figure

    from roofline.plot import validate as PV

    v = _synthetic([2**i for i in range(10)], 1e-3, 1e-5)
    ax = Figure().subplots()
    assert PV.plot_projection(v, ax) is ax
    lines = {line.get_label(): line for line in ax.get_lines()}
    pred = lines["projection: predicted max(F/P, Q/β) + overhead"]
    assert list(pred.get_ydata()) == [p.predicted for p in v.projection.points]
    assert list(lines["predicted crossover T = 100"].get_xdata()) == [100, 100]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() and "(s)" in ax.get_ylabel()
    ax2 = PV.plot_attention(v, Figure().subplots())
    assert "naive: predicted max(F/P, Q/β) + overhead" in [ln.get_label() for ln in ax2.get_lines()]
    fig = PV.figure(v)
    assert "synthetic" in fig.get_suptitle()
    assert "uncalibrated prediction (β = memory.bandwidth)" not in lines  # efficiency 1
    cal = _synthetic([2**i for i in range(10)], 1e-3, 1e-5, calibrated=True)
    ax3 = PV.plot_projection(cal, Figure().subplots())
    thin = {ln.get_label(): ln for ln in ax3.get_lines()}[
        "uncalibrated prediction (β = memory.bandwidth)"]
    assert list(thin.get_ydata()) == [max(5e-4, 1e-5 * p.T) for p in cal.projection.points]
    assert "uncalibrated 55%" in ax3.get_title()
    assert "β = 1 GB/s = 2 GB/s × 0.50 calibrated" in PV.figure(cal).get_suptitle()
