"""Which ceiling labels of a figure a line drawn runs through (tests/test_plot_roofline.py,
tests/test_plot_print.py): each label's box as drawn, turned with it, held against every
segment of every line on its axes, clipped to them; found from the figure's artists alone, not
from the placer's own geometry (roofline.plot.labels, roofline.plot.callouts)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from roofline.plot import _style


def crossed(fig) -> list[tuple[str, str]]:
    """(label, line) for each ceiling's label (a compute or a memory level's, the link's) whose
    box, turned with it, a line drawn on the axes runs through, its own line included: a label
    sits beside its line, not on it."""
    canvas = FigureCanvasAgg(fig)
    with _style.style():
        canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    for ax in fig.axes:
        edge = ax.get_window_extent(renderer)
        lines = [line.get_transform().transform(np.column_stack([line.get_xdata(),
                                                                 line.get_ydata()]))
                 for line in ax.get_lines() if len(line.get_xdata()) > 1
                 and line.get_linestyle() not in ("None", "none", "", " ")]
        names = [str(line.get_gid()) for line in ax.get_lines() if len(line.get_xdata()) > 1
                 and line.get_linestyle() not in ("None", "none", "", " ")]
        for t in ax.texts:
            if not str(t.get_gid()).startswith(("ceiling-label:", "memory-label:")):
                continue
            drawn = Text.get_window_extent(t, renderer)  # the text alone, not its leader
            flat = Text(0, 0, t.get_text(), fontsize=t.get_fontsize())
            flat.set_figure(fig)
            size = flat.get_window_extent(renderer)
            centre = ((drawn.x0 + drawn.x1) / 2, (drawn.y0 + drawn.y1) / 2)
            for name, xy in zip(names, lines):
                if any(_through(p, q, edge, centre, size.width, size.height, t.get_rotation())
                       for p, q in zip(xy[:-1], xy[1:])):
                    out.append((t.get_text(), name))
    return out


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
