"""Labels placed on a log–log plot's lines and beside its markers, none over another: the
roofline's ceilings (along their lines), ridges, limits and decode batches (:mod:`.roofline`).

Each label tries its candidate places in order (:func:`_candidates`) and takes the first inside
the Axes, clear of the labels placed before it, of every marker and of every line but its own
(then clear of the markers only, then anywhere, where it overlaps least); the x axis grows by
quarter decades while a compute ceiling's label finds no clear place (:func:`draw_labels`).
Positions are in points of the laid-out Axes, so that what is checked is what is drawn.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _style

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["draw_labels", "layout", "root"]

_SIZE = _style.MIN_POINTS  # points: every label
_STEP = 10 ** 0.25  # the x axis grows by a quarter decade at a time for the ceilings' labels
_GROWTH = 16  # at most that many times (four decades, where labels crowd most)


def root(ax: Axes) -> Any:
    try:
        return ax.get_figure(root=True)  # the Figure, also for an Axes in a SubFigure
    except TypeError:  # matplotlib < 3.10
        return ax.figure


def layout(fig: Any) -> Any:
    """Lay the figure out (its layout engine alone, else a draw); returns its renderer."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
    else:
        fig.draw_without_rendering()
    return fig._get_renderer()


class _Frame:
    """The laid-out Axes in points from its lower-left corner, on its log–log scales, with the
    obstacles a label must avoid: each point's marker (centre and radius) and each ceiling
    (a segment, by gid). ``fresh``: lay the figure out first (else as it was last laid out:
    a trial of another x range)."""

    def __init__(self, ax: Axes, fresh: bool = True) -> None:
        self.fig = fig = root(ax)
        self.renderer = layout(fig) if fresh else fig._get_renderer()
        self.k = 72.0 / fig.dpi  # points per pixel
        box = ax.get_window_extent()
        self.width, self.height = box.width * self.k, box.height * self.k
        (self.x0, x1), (self.y0, y1) = np.log10(ax.get_xlim()), np.log10(ax.get_ylim())
        self.px = self.width / (x1 - self.x0)  # points per decade
        self.py = self.height / (y1 - self.y0)
        self.points: list[tuple[float, float, float]] = []
        self.lines: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
        for line in ax.get_lines():
            gid, xs, ys = str(line.get_gid()), line.get_xdata(), line.get_ydata()
            if gid.startswith("point:"):
                self.points.append((*self.at(xs[0], ys[0]), line.get_markersize() / 2 + 1))
            elif gid.startswith(("memory:", "ceiling-", "compute:", "sram:")):
                self.lines[gid] = (self.at(xs[0], ys[0]), self.at(xs[-1], ys[-1]))

    def at(self, x: float, y: float) -> tuple[float, float]:
        """Where the data point (x, y) falls, in points."""
        return (math.log10(x) - self.x0) * self.px, (math.log10(y) - self.y0) * self.py

    def data(self, u: float, v: float) -> tuple[float, float]:
        return 10 ** (self.x0 + u / self.px), 10 ** (self.y0 + v / self.py)

    def size(self, text: str) -> tuple[float, float]:
        """Width and height in points of a label as drawn."""
        from matplotlib.text import Text

        label = Text(0, 0, text, fontsize=_SIZE)
        label.set_figure(self.fig)
        box = label.get_window_extent(self.renderer)
        return box.width * self.k, box.height * self.k


def _box(c: tuple[float, float], w: float, h: float, angle: float) -> tuple[float, ...]:
    """The bounding box (left, bottom, right, top) of a w × h label centred at c, turned by
    ``angle`` degrees."""
    a = math.radians(angle)
    half_w = (w * abs(math.cos(a)) + h * abs(math.sin(a))) / 2
    half_h = (w * abs(math.sin(a)) + h * abs(math.cos(a))) / 2
    return c[0] - half_w, c[1] - half_h, c[0] + half_w, c[1] + half_h


def _local(p: tuple[float, float], c: tuple[float, float], angle: float) -> tuple[float, float]:
    """p in the frame of a label centred at c and turned by ``angle`` degrees."""
    a = math.radians(angle)
    du, dv = p[0] - c[0], p[1] - c[1]
    return du * math.cos(a) + dv * math.sin(a), -du * math.sin(a) + dv * math.cos(a)


def _crosses(segment: tuple, c: tuple[float, float], w: float, h: float, angle: float) -> bool:
    """Whether a line segment runs through the label (Liang–Barsky clipping, in the label's
    frame, a point's margin around it)."""
    (u1, v1), (u2, v2) = (_local(p, c, angle) for p in segment)
    du, dv = u2 - u1, v2 - v1
    lo, hi = 0.0, 1.0
    for p, q in ((-du, u1 + w / 2 + 1), (du, w / 2 + 1 - u1), (-dv, v1 + h / 2 + 1),
                 (dv, h / 2 + 1 - v1)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
        if lo > hi:
            return False
    return True


def _candidates(spec: tuple, f: _Frame, w: float, h: float) -> list[tuple]:
    """The places a label may take, best first: (centre, angle, anchor, only where no line
    crosses it), in points; the anchor is a point of its own line or marker, from which it is
    drawn offset."""
    kind, _, _, _, a, b = spec
    out = []
    if kind == "compute":  # on its line, rightmost first, above or below (else lifted clear
        # of the markers on the line); left of its ridge only where no line crosses it
        v = f.at(1.0, a)[1]
        ridge = f.at(b, 1.0)[0] + 3
        for lift in (2.0, 1.0 + max((r for _, _, r in f.points), default=1.0)):
            u = f.width - 3 - w / 2
            while u - w / 2 >= 1 and u + w / 2 >= ridge + 20:  # over some of its line
                out += [((u, v + side * (lift + h / 2)), 0.0, (u, v), u - w / 2 < ridge)
                        for side in (1, -1)]
                u -= 4
        u = f.width - 3 - w / 2
        out = out or [((u, v + 2 + h / 2), 0.0, (u, v), False)]  # wider than its room
    elif kind == "ridge":  # beside the knee: left above, right below, left below, right above,
        ku, kv = f.at(b, a)  # then a line further out
        out = [((ku + du * (4 + w / 2), kv + dv * (3 + h / 2 + n * (h + 2))), 0.0, (ku, kv),
                False) for n in (0, 1) for du, dv in ((-1, 1), (1, -1), (-1, -1), (1, 1))]
    elif kind == "memory":  # turned with the line, from its foot up to its end: on it, else
        angle = math.atan2(f.py, f.px)  # beside it, below or above
        end = f.at(b, 1.0)[0]
        for off in (0.0, -(h / 2 + 1.5), h / 2 + 1.5):
            u = 0.0
            while u <= min(end, f.width):
                c = (u, (math.log10(a) + f.x0 + u / f.px - f.y0) * f.py)
                out.append(((c[0] - off * math.sin(angle), c[1] + off * math.cos(angle)),
                            math.degrees(angle), c, False))
                u += 3
    elif kind == "limit":  # beside the vertical line, turned upright, from the foot up
        cu, v = f.at(a, 1.0)[0], 3 + w / 2
        while v + w / 2 <= f.height:
            out += [((cu + side * (2 + h / 2), v), 90.0, (cu, v), False) for side in (-1, 1)]
            v += 4
    elif kind == "batch":  # beside its star: right, below right, below, left, above left,
        su, sv = f.at(a, b)  # then further right or lower
        r = max((r - 1 for pu, pv, r in f.points if abs(pu - su) + abs(pv - sv) < 0.5),
                default=4.0)  # its star's
        out = [((su + du, sv + dv), 0.0, (su, sv), False)
               for du, dv in ((r + 2 + w / 2, 0), (r / 2 + w / 2, -r - 1 - h / 2),
                              (0, -r - 1 - h / 2), (-r - 2 - w / 2, 0),
                              (-r / 2 - w / 2, r + 1 + h / 2), (r + 2 + w / 2, -h),
                              (r + 2 + w, -h / 2), (0, -r - 3 - 1.5 * h))]
    return out


def _overlap(box: tuple[float, ...], taken: list[tuple[float, ...]], f: _Frame) -> float:
    """How much of ``box`` lies over the labels taken or outside the Axes (points²)."""
    def common(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return (max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
                * max(0.0, min(a[3], b[3]) - max(a[1], b[1])))

    inside = common(box, (0.0, 0.0, f.width, f.height))
    return sum(common(box, t) for t in taken) + (box[2] - box[0]) * (box[3] - box[1]) - inside


def _place(specs: list[tuple], f: _Frame) -> tuple[list[tuple], tuple[int, int, int],
                                                   list[tuple]]:
    """Each label's place, in the order given, inside the Axes and clear of every label placed
    before it (a point and a half above or below, a space beside): where it can, clear of
    every marker and crossed by no line but its own, else clear of the markers, else anywhere
    (else where it overlaps the labels least); returns (spec, centre, angle, anchor) for each,
    how crowded the labels are: how many compute ceilings' labels found no place clear of the
    markers, how many a line crosses, and how many other labels found no place clear of the
    markers; and the labels that found no place clear of the markers."""
    taken: list[tuple[float, ...]] = []
    out, crowded, stuck = [], [0, 0, 0], []

    def free(c: tuple[float, float], w: float, h: float, angle: float, own: str,
             level: int) -> bool:
        left, bottom, right, top = box = _box(c, w, h, angle)
        if left < 1 or bottom < 1 or right > f.width - 1 or top > f.height - 1:
            return False
        if any(box[0] < t[2] + 5 and t[0] < box[2] + 5 and box[1] < t[3] + 1.5
               and t[1] < box[3] + 1.5 for t in taken):  # a space apart along a line
            return False
        if level < 2 and any(abs(lu) < w / 2 + r and abs(lv) < h / 2 + r for lu, lv, r in (
                (*_local((pu, pv), c, angle), r) for pu, pv, r in f.points)):
            return False
        return level > 0 or not any(_crosses(seg, c, w, h, angle)
                                    for gid, seg in f.lines.items() if gid != own)

    for spec in specs:
        w, h = f.size(spec[1])
        options = _candidates(spec, f, w, h)
        found = next(((level, o) for level in range(3) for o in options
                      if (level == 0 or not o[3]) and free(o[0], w, h, o[1], spec[3], level)),
                     None) or (3, min(options, key=lambda o: _overlap(_box(o[0], w, h, o[1]),
                                                                       taken, f)))
        if spec[0] == "compute" and found[0] > 0:
            crowded[0 if found[0] > 1 else 1] += 1
        elif found[0] > 1:
            crowded[2] += 1
        if found[0] > 1:
            stuck.append(spec)
        centre, angle, anchor, _ = found[1]
        taken.append(_box(centre, w, h, angle))
        out.append((spec, centre, angle, anchor))
    return out, (crowded[0], crowded[1], crowded[2]), stuck


def _cost(crowded: tuple[int, int, int]) -> int:
    """How crowded labels are: a compute ceiling's label over markers counts 100, one that a
    line crosses 4 (a decade's growth of the x axis), another label over markers 1."""
    over, crossed, others = crowded
    return 100 * over + 4 * crossed + others


def _arrange(specs: list[tuple], f: _Frame) -> tuple[list[tuple], tuple[int, int, int]]:
    """:func:`_place`, and again with the labels that found no place clear of the markers
    placed first (twice at most): the places of the least crowded arrangement (:func:`_cost`)
    and how crowded it is."""
    best: tuple[list[tuple], tuple[int, int, int]] | None = None
    for _ in range(3):
        out, crowded, stuck = _place(specs, f)
        if best is None or _cost(crowded) < _cost(best[1]):
            best = out, crowded
        if not stuck:
            break
        specs = stuck + [spec for spec in specs if spec not in stuck]
    assert best is not None
    return best


def draw_labels(ax: Axes, specs: list[tuple]) -> None:
    """The labels on the ceilings, ridges, limits and decode steps, placed (:func:`_arrange`)
    in points of the laid-out Axes, its x axis grown (by quarter decades, up to four decades)
    as far as the compute ceilings' labels need: to the first x range where each lies clear
    of the markers and of every line but its own, else to the least crowded one, each quarter
    decade counted as a label over markers (:func:`_cost`). Each is drawn at its offset from
    a point of its own line, so that it moves with its line."""
    x0, x1 = ax.get_xlim()
    tried = []
    for n in range(_GROWTH + 1):  # trials on the Axes as laid out: the ticks change little
        ax.set_xlim(x0, x1 * _STEP**n)
        crowded = _arrange(specs, _Frame(ax, fresh=n == 0))[1]
        tried.append((_cost(crowded) + n, n))
        if crowded[:2] == (0, 0):  # every compute ceiling's label clear
            break
    cost, n = min(tried)
    final = []  # laid out at that range (its ticks may move the Axes' edge a little), and
    for m in range(n, min(n + 3, _GROWTH + 1)):  # a quarter decade further while worse
        ax.set_xlim(x0, x1 * _STEP**m)
        f = _Frame(ax)
        final.append((_cost(_arrange(specs, f)[1]) + m, m, f))
        if final[-1][0] <= cost:
            break
    _, m, f = min(final, key=lambda t: t[:2])
    if m != final[-1][1]:  # laid out again at the range chosen
        ax.set_xlim(x0, x1 * _STEP**m)
        f = _Frame(ax)
    placed, _ = _arrange(specs, f)
    for spec, centre, angle, anchor in placed:
        kind, text, color, gid = spec[:4]
        name = "ceiling" if kind == "compute" else kind
        ax.annotate(text, f.data(*anchor), xytext=(centre[0] - anchor[0], centre[1] - anchor[1]),
                    textcoords="offset points", ha="center", va="center", rotation=angle,
                    rotation_mode="anchor", fontsize=_SIZE, color=color,
                    annotation_clip=False, in_layout=False, gid=f"{name}-label:{text}",
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8)
                    if kind == "memory" else None)
