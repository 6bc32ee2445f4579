"""What runs through or lies under the roofline's labels (tests/test_plot_roofline.py,
tests/test_plot_print.py), found from the drawn figure's artists alone, not from the placer's
own geometry (roofline.plot.labels, roofline.plot.callouts):

- :func:`crossed`: each ceiling's label (or, with ``every``, each label on the axes: ridges,
  limits, decode batches too) whose box, turned with it, a line drawn on the axes runs through,
  clipped to them, or another label's leader;
- :func:`covered`: each label on the axes over a marker (its filled outline, exactly);
- :func:`collisions`: each pair of texts drawn anywhere in the figure whose boxes overlap by
  more than a pixel each way (labels, ticks, titles, legends, the note).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.markers import MarkerStyle
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.transforms import Affine2D, Bbox

from roofline.plot import _style

CEILINGS = ("ceiling-label:", "memory-label:")


def _drawn(fig):
    canvas = FigureCanvasAgg(fig)
    with _style.style():
        canvas.draw()
    return canvas.get_renderer()


def _labels(ax, every: bool = True) -> list[Text]:
    return [t for t in ax.texts if (str(t.get_gid()).startswith(CEILINGS) if not every
                                    else "-label:" in str(t.get_gid()))]


def _lines(ax) -> list[tuple[str, np.ndarray]]:
    """Each line drawn on the axes (not a marker alone), its gid and its vertices in pixels."""
    return [(str(line.get_gid()), line.get_transform().transform(
        np.column_stack([line.get_xdata(), line.get_ydata()])))
        for line in ax.get_lines() if len(line.get_xdata()) > 1
        and line.get_linestyle() not in ("None", "none", "", " ")]


def _leaders(ax) -> list[tuple[Text, np.ndarray]]:
    """Each callout's leader as drawn (its arrow's path, in pixels): from its text's box to the
    point it names."""
    return [(t, t.arrow_patch.get_path().vertices) for t in ax.texts
            if t.arrow_patch is not None]


def crossed(fig, every: bool = False) -> list[tuple[str, str]]:
    """(label, line) for each ceiling's label (a compute or a memory level's, the link's; with
    ``every``, each label on the axes) whose box, turned with it, a line drawn on the axes
    runs through, its own line included: a label sits beside its line, not on it; with
    ``every``, another label's leader too."""
    renderer = _drawn(fig)
    out = []
    for ax in fig.axes:
        edge = ax.get_window_extent(renderer)
        lines = _lines(ax)
        if every:
            lines += [(f"leader of {t.get_text()!r}", xy) for t, xy in _leaders(ax)]
        for t in _labels(ax, every):
            drawn = Text.get_window_extent(t, renderer)  # the text alone, not its leader
            flat = Text(0, 0, t.get_text(), fontsize=t.get_fontsize())
            flat.set_figure(fig)
            size = flat.get_window_extent(renderer)
            centre = ((drawn.x0 + drawn.x1) / 2, (drawn.y0 + drawn.y1) / 2)
            for name, xy in lines:
                if name == f"leader of {t.get_text()!r}":
                    continue
                if any(_through(p, q, edge, centre, size.width, size.height, t.get_rotation())
                       for p, q in zip(xy[:-1], xy[1:])):
                    out.append((t.get_text(), name))
    return out


def covered(fig) -> list[tuple[str, str]]:
    """(label, marker's gid) for each label on the axes whose box (less half a pixel all
    round) a marker's filled outline meets, and for each leader that runs over a marker other
    than the one it names (whose centre is where it points), or ends nearer another marker's
    centre than the point it names (a ridge's label whose leader stops under a star over the
    ridge reads as the star's): the prefill's and the decode steps' markers, the ridges'
    circles, the bars' caps."""
    renderer = _drawn(fig)
    out = []
    for ax in fig.axes:
        marks = []
        for line in ax.get_lines():
            style = MarkerStyle(line.get_marker())
            if line.get_marker() in (None, "None", "none", "", " ") or not len(line.get_xdata()):
                continue
            xy = line.get_transform().transform(np.column_stack([line.get_xdata(),
                                                                 line.get_ydata()]))
            every = line.get_markevery()
            if every is not None:
                xy = xy[np.atleast_1d(every)]
            scale = line.get_markersize() * fig.dpi / 72
            path = style.get_path().transformed(style.get_transform() + Affine2D().scale(scale))
            marks += [(str(line.get_gid()), p, path.transformed(Affine2D().translate(*p)))
                      for p in xy]
        for t in _labels(ax):  # in the label's frame: its box as drawn, not turned
            drawn = Text.get_window_extent(t, renderer)
            flat = Text(0, 0, t.get_text(), fontsize=t.get_fontsize())
            flat.set_figure(fig)
            w, h = flat.get_window_extent(renderer).size
            turn = Affine2D().translate(-(drawn.x0 + drawn.x1) / 2, -(drawn.y0 + drawn.y1) / 2) \
                .rotate_deg(-t.get_rotation())
            inner = Bbox.from_extents(-w / 2 + 0.5, -h / 2 + 0.5, w / 2 - 0.5, h / 2 - 0.5)
            out += [(t.get_text(), gid) for gid, _, path in marks
                    if path.transformed(turn).intersects_bbox(inner, filled=True)]
        for t, xy in _leaders(ax):
            named = ax.transData.transform(t.xy)
            leader = Path(xy[[0, -1]])
            out += [(f"leader of {t.get_text()!r}", gid) for gid, at, path in marks
                    if math.dist(at, named) > 0.5 and (path.intersects_path(leader, filled=True)
                                                       or math.dist(xy[-1], at)
                                                       < math.dist(xy[-1], named))]
    return out


def _texts(fig, renderer) -> list[tuple[Text, Bbox]]:
    """Every text drawn, with its box in pixels (an annotation's text, not its leader): tick
    labels within the axes' view only."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                loc = tick.get_loc()
                if loc is None or not low * (1 - 1e-9) <= loc <= high * (1 + 1e-9):
                    hidden |= {id(tick.label1), id(tick.label2)}
    out = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and id(t) not in hidden:
            box = Text.get_window_extent(t, renderer)
            if box.width > 0 and box.height > 0:
                out.append((t, box))
    return out


def collisions(fig) -> list[tuple[str, str]]:
    """(text, text) for each pair of texts drawn in the figure whose boxes overlap by more
    than a pixel each way (text rounds)."""
    out = []
    for (a, p), (b, q) in itertools.combinations(_texts(fig, _drawn(fig)), 2):
        if min(p.x1, q.x1) - max(p.x0, q.x0) > 1 and min(p.y1, q.y1) - max(p.y0, q.y0) > 1:
            out.append((a.get_text(), b.get_text()))
    return out


def problems(fig) -> dict[str, list[tuple[str, str]]]:
    """Every label's crossings (:func:`crossed` with ``every``), the markers under labels
    (:func:`covered`), the texts over one another (:func:`collisions`)."""
    return {"crossed": crossed(fig, every=True), "covered": covered(fig),
            "collisions": collisions(fig)}


def _through(p, q, edge, centre, w, h, angle) -> bool:
    """Whether the segment p–q, clipped to the axes' box ``edge``, runs through a w × h box
    centred at ``centre`` and turned by ``angle`` degrees (Liang–Barsky, twice)."""
    def clip(p, q, boxes):
        d = q - p
        lo, hi = 0.0, 1.0
        for x0, y0, x1, y1 in boxes:
            for a, b in ((-d[0], p[0] - x0), (d[0], x1 - p[0]), (-d[1], p[1] - y0),
                         (d[1], y1 - p[1])):
                if a == 0:
                    if b < 0:
                        return None
                elif a < 0:
                    lo = max(lo, b / a)
                else:
                    hi = min(hi, b / a)
        return None if lo > hi else (p + lo * d, p + hi * d)

    inside = clip(np.asarray(p, float), np.asarray(q, float),
                  [(edge.x0, edge.y0, edge.x1, edge.y1)])
    if inside is None:
        return False
    a = math.radians(angle)
    turn = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    p, q = (turn @ (z - np.asarray(centre)) for z in inside)
    return clip(p, q, [(-w / 2, -h / 2, w / 2, h / 2)]) is not None
