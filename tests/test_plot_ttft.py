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
    assert "prompt 1,000 tokens" in ax.get_title()
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
    with pytest.raises(InputError, match="^speedup: comparing intra-op with inter-op needs"):
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
    assert ax.get_title().endswith("prompt 2,048 tokens")
    # the unit on each tick, as the other figures: "100 ms", not "0.100" under "(s)"
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert ticks and all(t.endswith("s") for t in ticks) and ax.get_ylabel().endswith("token")


def test_rate_wording():
    from roofline.plot.ttft import per_second

    assert per_second(1.0) == "1 request/s"
    assert per_second(49.01) == "49 requests/s"
    assert per_second(0.5) == "0.5 requests/s"
    assert per_second(5234.4) == "5,234 requests/s"  # never "5.23e+03"
    assert per_second(0.000012) == "0.000012 requests/s"


def test_every_mark_lies_inside_the_axes(ax):
    # issue 14: with --compare the inter-op mark sat on the right edge, cut in half, or beyond
    # it. D = 0.1 s, K = 1.6, target 2 s: inter-op meets it up to R with
    # 0.1 + R·0.01/(4(2 − 0.1R)) = 2, R = 15.2/0.77 ≈ 19.74/s, beyond 98 % of its stable rate
    # 20/s (19.6/s), where the old x axis ended
    plot_ttft(0.1, parallel="intra", speedup=1.6, slo=2, compare=True, ax=ax)
    (mark,) = [line for line in ax.lines
               if line.get_label().startswith("highest rate meeting it, inter-op")]
    r = mark.get_xdata()[0]
    assert r == pytest.approx(15.2 / 0.77)
    left, right = ax.get_xlim()
    assert r <= right - 0.03 * (right - left)


def test_rate_batching_and_chunking_from_the_library(ax):
    from roofline.api import ttft
    from roofline.plot.ttft import plot_ttft_result

    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=20, slo=0.3, batch_prompts=4,
                  chunk=512, attention="naive")
    plot_ttft_result(result, ax=ax)
    lines = {line.get_label(): line for line in ax.lines}
    (at,) = [v for k, v in lines.items() if k.startswith("at 20 requests/s")]
    assert at.get_ydata()[0] == pytest.approx(result.point.total_s)
    first = lines["first of 4 batched (no queueing)"]
    r, y = first.get_xdata(), first.get_ydata()
    b = result.batching
    assert y == pytest.approx(b.execution_s + 3 / r)  # waits (4 − 1)/R for the batch
    assert lines["last of 4 batched (execution only)"].get_ydata()[0] == \
        pytest.approx(b.execution_s)
    chunked = lines["total, chunks of 512 tokens"]
    c = result.chunking
    t = result.mean_s - c.one_shot_s + c.total_s  # the layers chunked, the edges as one-shot
    r, y = chunked.get_xdata()[1], chunked.get_ydata()[1]
    assert y == pytest.approx(t + r * t * t / (2 * (1 - r * t)))
    assert "naive attention" in ax.get_title()


def test_plot_ttft_command_takes_the_ttft_options(tmp_path, capsys):
    from roofline import cli

    out = tmp_path / "t.png"
    assert cli.main(["plot", "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                     "--prompt", "2048", "--rate", "20", "--batch-prompts", "4", "--chunk",
                     "512", "--weight-dtype", "int4", "--kv-dtype", "fp8", "--attention",
                     "tiled_fa2", "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    assert cli.main(["plot", "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                     "--prompt", "2048", "--batch-prompts", "4", "-o", str(out)]) == 2
    assert capsys.readouterr().err.endswith(
        "roofline: error: --rate: batching needs an arrival rate: the first prompt waits for the "
        "batch to fill\n")


def test_batched_prompts_are_in_view(ax):
    # 8 prompts of 2,048 tokens batched at up to ~28 requests/s: the first waits 7/R for the
    # batch, 0.25 s at the right edge, on top of the batch's 0.27 s; the axis stopped at twice
    # the 0.2 s target, so its curve was in the legend and nowhere on the plot
    from roofline.api import ttft
    from roofline.plot.ttft import plot_ttft_result

    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=10, slo=0.2, batch_prompts=8)
    plot_ttft_result(result, ax=ax)
    first = next(line for line in ax.lines
                 if line.get_label() == "first of 8 batched (no queueing)")
    r, y = first.get_xdata(), first.get_ydata()
    assert y.min() == pytest.approx(result.batching.execution_s + 7 / r.max())
    assert y.min() > 2 * 0.2 and ax.get_ylim()[1] > y.min()


def _note(ax):
    (note,) = [t for t in ax.texts if t.get_gid() == "ttft-note"]
    return " ".join(note.get_text().split())


def test_the_note_names_the_queue_model(ax):
    """One prompt length: M/D/1 by Pollaczek–Khinchine (DistServe Eq. 1); a distribution of
    lengths: M/G/1; with --compare each configuration's service time (Eq. 2, Eq. 3)."""
    plot_ttft(0.1, slo=0.2, rate=5, ax=ax)
    note = _note(ax)
    assert note.startswith("Queue: M/D/1, one prompt length") and "Pollaczek–Khinchine" in note
    assert "● highest rate meeting the target: 6.67 requests/s" in note
    assert "▼ 150 ms at 5 requests/s" in note  # 0.1 + 5·0.01/(2·0.5) s
    ax.clear()
    plot_ttft(0.1, 0.02, parallel="intra", speedup=1.6, compare=True, ax=ax)
    note = _note(ax)
    assert note.startswith("Queue: M/G/1, prompt lengths from a distribution")
    assert "inter-op: s the slowest pipeline stage, a prompt's execution the stages' sum " \
        "(Eq. 2)" in note
    assert "intra-op: s the prefill time over K (Eq. 3)" in note


@pytest.mark.parametrize("pipeline, words", [
    ("chunked", "inter-op: s a prompt's time through the pipeline, its chunks filling the "
     "stages"),
    ("whole", "inter-op: s the slowest pipeline stage, a prompt's execution the stages' sum")])
def test_the_note_names_the_pipelines_schedule(ax, pipeline, words):
    """``--parallel inter`` queues as the setting's schedule runs a prompt: the note says which
    (chunked: one prompt at a time, e = s; whole: the slowest stage serves, e the sum)."""
    from roofline.api import ttft
    from roofline.plot.ttft import plot_ttft_result

    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=5, parallel="inter",
                  pipeline=pipeline)
    plot_ttft_result(result, ax=ax)
    assert words in _note(ax)
    staged = result.queue.execution != pytest.approx(result.queue.mean, rel=1e-9)
    assert staged == (pipeline == "whole")


def test_every_curve_says_whether_it_queues(ax):
    """The chunked total includes the queue (its own test above); the batched curves do not
    (:func:`roofline.serving.batching` counts no queueing behind an earlier batch): their
    labels and the note say so."""
    from roofline.api import ttft
    from roofline.plot.ttft import plot_ttft_result

    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=20, slo=0.3, batch_prompts=4,
                  chunk=512)
    plot_ttft_result(result, ax=ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["prompt execution", "queueing", "first of 4 batched (no queueing)",
                      "last of 4 batched (execution only)", "total, chunks of 512 tokens",
                      "target 0.3 s"]
    assert "no queueing behind an earlier batch" in _note(ax)


def test_house_colours_and_a_second_cue(ax):
    """Okabe–Ito colours (and a grey), no tab10; the curves that cross (inter-op and intra-op
    totals, the batched and chunked ones) differ in line style too."""
    from matplotlib.colors import to_hex

    from roofline.api import ttft
    from roofline.plot import _style
    from roofline.plot.ttft import plot_ttft_result

    house = {c.lower() for c in _style.OKABE_ITO.values()} | {"#999999"}
    plot_ttft(0.1, parallel="intra", speedup=1.6, slo=0.2, rate=3, compare=True, ax=ax)
    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=20, slo=0.3, batch_prompts=4,
                  chunk=512)
    fig, other = plt.subplots()
    plot_ttft_result(result, ax=other)
    for axes in (ax, other):
        drawn = {to_hex(line.get_color()) for line in axes.lines}
        drawn |= {to_hex(c.get_facecolor()[0]) for c in axes.collections}
        assert drawn <= house
    styles = {line.get_label(): line.get_linestyle() for line in [*ax.lines, *other.lines]}
    assert styles["total, inter-op"] != styles["total, intra-op, K = 1.6"]
    assert styles["first of 4 batched (no queueing)"] != styles["total, chunks of 512 tokens"]
    plt.close(fig)


@pytest.mark.parametrize("size", ["column", "page"])
def test_the_legend_lies_under_the_axes(size):
    """With batching and chunking the legend covered a curve: it lies under the axes (and
    their x label) at both sizes, the note under it."""
    from roofline.api import ttft
    from roofline.plot import ttft_figure

    result = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=20, slo=0.3, batch_prompts=4,
                  chunk=512)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ttft_figure(result, size=size)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    label = ax.xaxis.label.get_window_extent(renderer)
    (note,) = [t for t in ax.texts if t.get_gid() == "ttft-note"]
    assert legend.y1 < label.y0 and note.get_window_extent(renderer).y1 < legend.y0
    assert len(ax.get_legend().get_texts()) <= 6
