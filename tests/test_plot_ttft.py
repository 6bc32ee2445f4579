"""The TTFT plot: the plotted data, not pixels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from roofline.errors import InputError  # noqa: E402
from roofline.plot.ttft import plot_ttft  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_stacked_execution_and_queueing(ax):
    out = plot_ttft(0.1, slo=0.2, device="H100-SXM", model="m", dtype="bf16", prompt="1000",
                    ax=ax)
    assert out is ax
    execution, queueing = ax.collections[:2]  # stackplot: one polygon per layer
    top = queueing.get_paths()[0].vertices
    # the upper edge of the stack at rate 5/s is 0.15 s (DistServe Eq. 1, D = 0.1 s)
    rates = np.linspace(0, 9.8, 200)
    i = np.argmin(abs(rates - 5))
    upper = top[(abs(top[:, 0] - rates[i]) < 1e-9) & (top[:, 1] > 0.1 + 1e-12)]
    r = rates[i]
    assert upper[:, 1].max() == pytest.approx(0.1 + r * 0.01 / (2 * (1 - r * 0.1)))
    assert ax.get_xlim()[1] == pytest.approx(9.8)  # 98 % of the steady-state limit
    assert "H100-SXM" in ax.get_title() and "bf16" in ax.get_title()
    assert "prompt 1000" in ax.get_title()
    # the target line and the highest rate meeting it (20/3 per second)
    (target,) = [line for line in ax.lines if line.get_label().startswith("target")]
    assert target.get_ydata()[0] == pytest.approx(0.2)
    (mark,) = [line for line in ax.lines if line.get_label().startswith("highest rate")]
    assert mark.get_xdata()[0] == pytest.approx(20 / 3)


def test_intra_against_inter(ax):
    plot_ttft(0.1, parallel="intra", speedup=1.5, compare=True, ax=ax)
    labels = [line.get_label() for line in ax.lines]
    assert "total, inter-op" in labels and "total, intra-op, K = 1.5" in labels
    (cross,) = [line for line in ax.lines if line.get_label().startswith("inter-op wins")]
    # Eq. 2 = Eq. 3 at that rate
    r = cross.get_xdata()[0]
    inter = 0.1 + r * 0.01 / (4 * (2 - r * 0.1))
    intra = 0.1 / 1.5 + r * 0.01 / (2 * 1.5 * (1.5 - r * 0.1))
    assert inter == pytest.approx(intra)


def test_compare_needs_a_speedup(ax):
    with pytest.raises(InputError, match="^--speedup: comparing intra-op with inter-op needs"):
        plot_ttft(0.1, compare=True, ax=ax)


def test_compare_marks_both_configurations(ax):
    # D = 0.1 s, K = 1.6, target 0.2 s: inter-op (Eq. 2) and intra-op (Eq. 3) by hand
    plot_ttft(0.1, parallel="intra", speedup=1.6, slo=0.2, compare=True, prompt="2048", ax=ax)
    marks = {line.get_label(): line for line in ax.lines
             if line.get_label().startswith("highest rate")}
    assert sorted(marks) == sorted([
        next(k for k in marks if k.startswith("highest rate meeting it, inter-op: ")),
        next(k for k in marks if k.startswith("highest rate meeting it, intra-op, K = 1.6: "))])
    for label, mark in marks.items():
        r = mark.get_xdata()[0]
        assert mark.get_ydata()[0] == pytest.approx(0.2)
        if "inter-op" in label:
            assert 0.1 + r * 0.01 / (4 * (2 - r * 0.1)) == pytest.approx(0.2)
        else:
            d = 0.1 / 1.6
            assert d + r * d * d / (2 * (1 - r * d)) == pytest.approx(0.2)
        assert label.endswith(f"{r:.3g} requests/s")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "execution, intra-op, K = 1.6" in labels and "queueing, intra-op, K = 1.6" in labels
    assert not any("((" in t or "))" in t for t in labels)
    assert ax.get_title().endswith("prompt 2048 tokens")


def test_rate_wording():
    from roofline.plot.ttft import per_second

    assert per_second(1.0) == "1 request/s"
    assert per_second(49.01) == "49 requests/s"
    assert per_second(0.5) == "0.5 requests/s"
