"""Issue 28: series that can cross told apart by a second cue besides colour (a marker, a
line style), so that a figure printed in greyscale still shows which line is which."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from roofline import api, plot  # noqa: E402

DEVICES = ("H100-SXM", "A100-80GB-SXM", "L4")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _group(model: str, **kwargs):
    with warnings.catch_warnings():  # Mixtral's weights exceed each device's memory
        warnings.simplefilter("ignore")
        return [api.setting(h, model, **kwargs) for h in DEVICES]


def _by_gid(ax, gid: str):
    found = [a for a in ax.findobj() if a.get_gid() == gid]
    assert len(found) == 1, (gid, len(found))
    return found[0]


def _grey(color) -> float:
    """The lightness a greyscale print gives a colour (Rec. 601 luma, 0 to 1)."""
    r, g, b = to_rgb(color)
    return 0.299 * r + 0.587 * g + 0.114 * b


def _marker(line) -> str:
    m = line.get_marker()
    return "" if m in (None, "None", "none", " ", "") else str(m)


@pytest.mark.parametrize("size", ["column", "page"])
def test_attention_devices_tiled_lines_differ_by_marker(size):
    # the reviewer's figure: naive, three devices' tiled lines and the kernel, solid, within a
    # decade; A100's orange and L4's sky blue the same grey. Each device's tiled line has a
    # marker of its own, shown in its legend entry
    fig = plot.attention_figure(_group("Mistral-7B"), size=size)
    traffic = fig.axes[0]
    lines = [_by_gid(traffic, f"traffic:tiled:{name}") for name in DEVICES]
    cues = [(str(line.get_linestyle()), _marker(line)) for line in lines]
    assert len(set(cues)) == len(DEVICES), cues
    assert all(marker for _, marker in cues), cues  # a marker each, not only a colour
    # no other curve of the panel takes a device's cue
    others = [line for line in traffic.get_lines()
              if str(line.get_gid()).startswith("traffic:") and line not in lines]
    assert others
    for line in others:
        assert (str(line.get_linestyle()), _marker(line)) not in cues, line.get_gid()
    # the markers are drawn on the lines (some points, not none)
    for line in lines:
        every = line.get_markevery()
        assert every is not None
        shown = np.arange(len(line.get_xdata()))[slice(every[0], None, every[1])] \
            if isinstance(every, tuple) else []
        assert len(shown) >= 3, (line.get_gid(), every)
    # the legend shows each device's marker
    legend = traffic.get_legend()
    handles = dict(zip([" ".join(t.get_text().split()) for t in legend.get_texts()],
                       legend.legend_handles))
    for name, (_, marker) in zip(DEVICES, cues):
        (handle,) = [h for label, h in handles.items() if label.startswith(f"{name}: tiled")]
        assert _marker(handle) == marker


def test_attention_naive_asymptote_stays_visible():
    # "Grey dash-dot: naive's asymptote" lay under the naive curve, which runs along it at
    # large T: it is drawn over the curves, in a grey a greyscale print tells from the curve's
    fig = plot.attention_figure(_group("Mistral-7B"), size="column")
    traffic = fig.axes[0]
    naive = _by_gid(traffic, "traffic:naive")
    asymptote = _by_gid(traffic, "asymptote:naive")
    assert asymptote.get_zorder() > max(line.get_zorder() for line in traffic.get_lines()
                                        if line is not asymptote)
    assert asymptote.get_linewidth() < naive.get_linewidth()
    assert abs(_grey(asymptote.get_color()) - _grey(naive.get_color())) > 0.2
    # the note says where it coincides
    note = " ".join(t.get_text() for t in traffic.texts + fig.texts + [
        t for ax in fig.axes for t in ax.texts])
    assert "on the naive curve at large T" in " ".join(note.split())


def _ridge_cue(line) -> tuple:
    return (repr(line.get_linestyle()), repr(getattr(line, "_unscaled_dash_pattern", None)),
            to_rgb(line.get_color()), _marker(line))


@pytest.mark.parametrize(("model", "kwargs"), [("Mixtral-8x7B", {}),
                                                ("Llama-3-8B", {"tp": 4})])
@pytest.mark.parametrize("size", ["column", "page"])
def test_phases_l2_ridge_differs_from_every_ridge(model, kwargs, size):
    # H100's thin dashed black L2 ridge (160 FLOP/byte) lay on A100's orange dash-dot ridge
    # (153): it carries the L2's marker (+, as the prefill's curve per L2 byte), which no
    # other ridge has, and is drawn over them
    group = _group(model, **kwargs)
    fig = plot.phases_figure(group, prompts=(128, 2048, 8192), batches=(1, 64), context=8192,
                             size=size)
    left = fig.axes[0]
    l2 = _by_gid(left, "ridge:l2:H100-SXM")
    others = [_by_gid(left, f"ridge:{name}") for name in DEVICES]
    marker = _marker(l2)
    assert marker, "the L2 ridge has a marker"
    for other in others:
        assert _ridge_cue(other) != _ridge_cue(l2)
        assert _marker(other) != marker
        assert l2.get_zorder() > other.get_zorder()
    # still the ridge P/β_L2: a horizontal line at that intensity
    s = group[0]
    ys = np.asarray(l2.get_ydata(), float)
    assert ys == pytest.approx(np.full(ys.shape, s.peak / s.level_bandwidths["l2"]))
    # markers along it, clear of the panel's edges
    xs = np.asarray(l2.get_xdata(), float)
    shown = xs[l2.get_markevery()]
    assert len(shown) >= 5 and shown.min() > 0 and shown.max() < 1
    note = " ".join(t.get_text() for t in left.texts if t.get_gid() == "note")
    assert "(thin, dashed, +)" in " ".join(note.split())
