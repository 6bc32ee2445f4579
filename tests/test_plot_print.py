"""Issue "Figures a paper can print": every figure kind, at a column's and a page's width, for a
dense, an MoE, a windowed and a latent-attention model, on one device and three, with and without
tensor parallelism, checked as a reviewer would look at it, on the laid-out figure's artists
(not pixels):

- the figure is as wide as asked (3.33 in, 7 in; the PNG as many pixels at its dpi);
- no text under 7 pt (the figure is drawn at its printed size: points are the paper's);
- no panel collapsed (each at least an inch wide and 0.8 in high);
- no legend over a quarter of the figure's area, and none of more than seven entries;
- no text drawn over another (their boxes after layout; an annotation's text, not its leader),
  none past the figure's edge;
- on the roofline, no ceiling's label crossed by a line drawn (tests/label_crossings.py);
- no figure taller than a page's text block can take: at a column's width at most 8.5 in (a
  journal column's text block is about 9 in tall, with room for the caption), at a page's at
  most 9 in.
"""

import functools
import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from matplotlib.text import Text

sys.path.insert(0, str(Path(__file__).parent))  # the labels' geometry lives beside the tests
from label_crossings import crossed  # noqa: E402

from roofline import plot  # noqa: E402
from roofline.api import setting  # noqa: E402
from roofline.errors import InputError  # noqa: E402
from roofline.plot import _style  # noqa: E402

SIZES = {"column": 3.33, "page": 7.0}
CASES = {  # name: (model, devices, tensor-parallel degree)
    "dense": ("Llama-3-8B", ["H100-SXM"], 1),
    "moe-3": ("Mixtral-8x7B", ["H100-SXM", "MI300X", "TPU-v5e"], 1),
    "window-tp": ("Mistral-7B", ["H100-SXM"], 4),
    "latent": ("DeepSeek-V2-Lite", ["H100-SXM"], 1),
}
MAX_ENTRIES = 7
TALLEST = {"column": 8.5, "page": 9.0}  # inches


@functools.lru_cache(maxsize=None)
def _built(kind, case, size):
    """:func:`_figure`, built once for the checks that only look at it (each figure takes a
    second or more)."""
    return _figure(kind, case, size)


def _figure(kind, case, size):
    model, devices, tp = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weights past a device's memory: drawn all the same
        if kind == "ttft":
            from roofline.api import ttft

            result = ttft(devices[0], model, prompt=2048, rate=2.0, tp=tp)
            return plot.ttft_figure(result, size=size)
        settings = [setting(h, model, tp=1 if kind == "scaling" else tp) for h in devices]
        return plot.figure(kind, settings, prompts=[128, 2048, 8192],
                           batches=[1, 64] if kind in ("roofline", "phases") else [1],
                           size=size)


def _drawn_texts(fig, renderer):
    """Every text artist drawn, with its box in pixels: titles, labels, tick labels within the
    view, legends' texts and titles, annotations, the figure's own texts."""
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        out.append(t)
    ticks = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.add(id(tick.label1))
                ticks.add(id(tick.label2))
                loc = tick.get_loc()
                inside = loc is not None and low * (1 - 1e-9) <= loc <= high * (1 + 1e-9)
                if not inside:
                    ticks.discard(id(tick.label1))
                    ticks.discard(id(tick.label2))
                    for label in (tick.label1, tick.label2):
                        if label in out:
                            out.remove(label)
    boxes = []
    for t in out:
        box = Text.get_window_extent(t, renderer)  # an annotation's text, without its leader
        if box.width > 0 and box.height > 0:
            boxes.append((t, box))
    return boxes


def _name(t):
    return f"{t.get_text()[:40]!r} ({t.get_gid() or type(t).__name__})"


KINDS = ["roofline", "time", "attention", "phases", "scaling", "ttft"]


def print_problems(fig, size: str) -> list[str]:
    """What a printed figure must not have, read from its laid-out artists: a width other
    than its size's, a collapsed panel, a legend over a quarter of the figure or of more than
    MAX_ENTRIES entries, text under 7 pt, past the figure's edge or over other text."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    with _style.style():
        canvas.draw()
    renderer = canvas.get_renderer()
    dpi, frame = fig.dpi, fig.bbox
    width = fig.get_size_inches()[0]
    problems = [] if width == pytest.approx(SIZES[size]) else [f"{width:.2f} in wide"]
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        box = ax.get_window_extent(renderer)
        if box.width < 1.0 * dpi or box.height < 0.8 * dpi:
            problems.append(f"panel {ax.get_title()[:30]!r} collapsed to "
                            f"{box.width / dpi:.2f} × {box.height / dpi:.2f} in")
    for legend in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        if box.width * box.height > 0.25 * frame.width * frame.height:
            problems.append(f"a legend covers {box.width * box.height / (frame.width * frame.height):.0%} "
                            "of the figure")
        entries = [t for t in legend.get_texts() if t.get_text().strip()]
        if len(entries) > MAX_ENTRIES:
            problems.append(f"a legend of {len(entries)} entries: "
                            + "; ".join(t.get_text()[:25] for t in entries))
    texts = _drawn_texts(fig, renderer)
    for t, box in texts:
        if t.get_fontsize() < _style.MIN_POINTS - 1e-9:
            problems.append(f"{_name(t)} at {t.get_fontsize():.1f} pt")
        if box.x0 < frame.x0 - 1 or box.y0 < frame.y0 - 1 or box.x1 > frame.x1 + 1 \
                or box.y1 > frame.y1 + 1:
            problems.append(f"{_name(t)} runs past the figure's edge")
    for (a, box_a), (b, box_b) in itertools.combinations(texts, 2):
        dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if dx > 1 and dy > 1:  # more than a pixel each way: text rounds
            problems.append(f"{_name(a)} overlaps {_name(b)}")
    return problems


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_a_figure_prints_at_its_size(kind, case, size):
    if kind in ("scaling", "ttft") and len(CASES[case][1]) > 1:
        pytest.skip(f"the {kind} figure draws one device")
    fig = _built(kind, case, size)
    problems = print_problems(fig, size)
    if kind == "roofline":
        problems += [f"{label!r} crossed by {line}" for label, line in crossed(fig)]
    assert problems == []


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_a_figure_fits_on_a_page(kind, case, size):
    """A figure's height, which follows from its panels, legends and notes: at most 8.5 in at
    a column's width (three stacked panels of a sliding-window model's attention were 11.5 in,
    the phases of Mixtral-8x7B on three devices 10.2 in), at most 9 in at a page's."""
    if kind in ("scaling", "ttft") and len(CASES[case][1]) > 1:
        pytest.skip(f"the {kind} figure draws one device")
    height = _built(kind, case, size).get_size_inches()[1]
    assert height <= TALLEST[size], f"{height:.2f} in tall at a {size}'s width"


@pytest.mark.parametrize("kind", KINDS)
def test_the_png_is_as_wide_as_a_column(kind, tmp_path):
    """The PNG written at --size column is 3.33 in at its dpi (no tight bounding box that
    would change it)."""
    from PIL import Image

    fig = _figure(kind, "dense", "column")
    path = plot.save(fig, tmp_path / "f.png", dpi=300)
    with Image.open(path) as image:
        assert image.size[0] == round(3.33 * 300)
        assert image.info.get("dpi", (300, 300))[0] == pytest.approx(300, abs=0.01)


def test_a_size_is_a_column_a_page_or_inches():
    s = setting("H100-SXM", "Llama-3-8B")
    assert np.isclose(plot.figure("phases", s, size=5).get_size_inches()[0], 5.0)
    for bad in ("letter", 1.0, 25, True, "3"):
        with pytest.raises(InputError):
            plot.figure("phases", s, size=bad)


@pytest.mark.parametrize("kind", ["roofline", "time"])
def test_a_moe_figure_says_its_expert_count_is_an_upper_bound(kind):
    """A prefill of Mixtral reads min(n_e, B·T·n_a) experts' weights (uniform routing): more
    than the n_e·(1 − (1 − n_a/n_e)^T) its tokens reach in expectation (5.5 of 8 at T = 4), so
    the note under the figure says so; a dense model's says nothing of experts."""
    from roofline import api
    from roofline.plot import figure

    def texts(model):
        fig = figure(kind, [api.setting("MI300X", model)], size="page")
        return " ".join(" ".join(t.get_text().split()) for t in fig.findobj(Text))

    assert 8 * (1 - (1 - 2 / 8) ** 4) == pytest.approx(5.47, abs=0.01)
    assert "min(n_e, B·T·n_a) experts read, an upper bound" in texts("Mixtral-8x7B")
    assert "experts" not in texts("Llama-3-8B")
