"""Labels placed on a log–log plot's lines and beside its markers, none over another label, a
marker or a line: the roofline's ceilings (along their lines), ridges, limits and decode
batches (:mod:`.roofline`).

The compute ceilings' labels are placed first, all of them in one of two ways:

- beside their lines, each just above or below its own, as far right as it finds a clear place
  (the x axis as the data leave it);
- else, where they crowd, at their lines' ends (:func:`_ends`): the Axes run on past the data
  by as much as the widest label (the short texts where the long would take a third of their
  width), the x axis drawn over the data alone, the compute ceilings end there, and their
  labels stand in that strip in the order of their lines, each level with its line or, where
  they crowd, moved up or down just as far as they need (:func:`_stack`), a short leader from
  its line's end.

Then each other label takes the first of its places (:func:`_candidates`) inside the Axes and
clear of every label and leader placed, of every marker drawn and of every line; a decode
batch's or a ridge's label else a callout with a short leader (:func:`.callouts.callout`). A
label that finds no clear place is not drawn: the figure says it in its note
(:func:`draw_labels`). Positions are in points of the laid-out Axes, so that what is checked is
what is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _style
from .callouts import Option, box, callout, crosses, local, segments

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["draw_labels", "layout", "root"]

_SIZE = _style.MIN_POINTS  # points: every label
_FAR = 20.0  # points: a batch's or a ridge's callout no further from its marker
_GAP = 6.0  # points between the compute ceilings' ends and their labels: the leaders' room
_APART = 1.5  # points between labels stacked at the compute ceilings' ends


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
    obstacles a label must avoid: each marker drawn (centre and radius: the points', the
    ridges' circles, the bars' caps) and each line drawn (its segments, by gid: a ceiling's, a
    limit's, a bar, the lines joining points). ``fresh``: lay the figure out first (else as it
    was last laid out)."""

    def __init__(self, ax: Axes, fresh: bool = True) -> None:
        from matplotlib.markers import MarkerStyle

        self.fig = fig = root(ax)
        self.renderer = layout(fig) if fresh else fig._get_renderer()
        self.k = 72.0 / fig.dpi  # points per pixel
        box = ax.get_window_extent()
        self.width, self.height = box.width * self.k, box.height * self.k
        (self.x0, x1), (self.y0, y1) = np.log10(ax.get_xlim()), np.log10(ax.get_ylim())
        self.px = self.width / (x1 - self.x0)  # points per decade
        self.py = self.height / (y1 - self.y0)
        self.points: list[tuple[float, float, float]] = []
        segs, owner = [], []  # each line's segments (u1, v1, u2, v2), and its gid
        for n, line in enumerate(ax.get_lines()):
            xs, ys = line.get_xdata(), line.get_ydata()
            at = [self.at(x, y) for x, y in zip(xs, ys)]
            if line.get_marker() not in (None, "None", "none", "", " "):
                style = MarkerStyle(line.get_marker())  # as far as its outline reaches
                reach = abs(style.get_path().transformed(style.get_transform()).vertices).max()
                every, r = line.get_markevery(), line.get_markersize() * reach + 1
                self.points += [(*at[i], r) for i in (range(len(at)) if every is None
                                                      else np.atleast_1d(every))]
            if len(xs) > 1 and line.get_linestyle() not in ("None", "none", "", " "):
                segs += [(*p, *q) for p, q in zip(at[:-1], at[1:])]
                owner += [line.get_gid() or f"_{n}"] * (len(at) - 1)
        self.segs = np.array(segs, float).reshape(-1, 4)
        self.owner = np.array(owner, str)

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


def _candidates(spec: tuple, f: _Frame, w: float, h: float) -> list[Option]:
    """The places a label may take beside its line (its knee, its star), best first."""
    kind, _, _, _, a, b = spec[:6]
    out = []
    if kind == "compute":  # over its line (some of it), rightmost first, above or below
        # (else lifted clear of the markers on the line)
        v, ridge = f.at(1.0, a)[1], f.at(b, 1.0)[0] + 3
        for lift in (2.0, 1.0 + max((r for _, _, r in f.points), default=1.0)):
            u = f.width - 3 - w / 2
            while u - w / 2 >= 1 and u + w / 2 >= ridge + 20:
                out += [Option((u, v + side * (lift + h / 2)), 0.0, (u, v)) for side in (1, -1)]
                u -= 4
    elif kind == "ridge":  # beside the knee: left above, right below, left below, right above,
        ku, kv = f.at(b, a)  # then a line further out
        out = [Option((ku + du * (4 + w / 2), kv + dv * (3 + h / 2 + n * (h + 2))), 0.0,
                      (ku, kv)) for n in (0, 1) for du, dv in ((-1, 1), (1, -1), (-1, -1), (1, 1))]
    elif kind == "memory":  # turned with the line, from its foot up to its end: beside it,
        angle = math.atan2(f.py, f.px)  # below or above, then 3 or 6 points further
        end = f.at(b, 1.0)[0]
        for off in (side * (h / 2 + 1.5 + gap) for gap in (0, 3, 6) for side in (-1, 1)):
            u = 0.0
            while u <= min(end, f.width):
                c = (u, (math.log10(a) + f.x0 + u / f.px - f.y0) * f.py)
                out.append(Option((c[0] - off * math.sin(angle), c[1] + off * math.cos(angle)),
                                  math.degrees(angle), c))
                u += 3
    elif kind == "limit":  # beside the vertical line, turned upright, from the foot up
        cu, v = f.at(a, 1.0)[0], 3 + w / 2
        while v + w / 2 <= f.height:
            out += [Option((cu + side * (2 + h / 2), v), 90.0, (cu, v)) for side in (-1, 1)]
            v += 4
    elif kind == "batch":  # beside its star: right, below right, below, left, above left,
        su, sv = f.at(a, b)  # above, then further right or lower
        r = max((r - 1 for pu, pv, r in f.points if abs(pu - su) + abs(pv - sv) < 0.5),
                default=4.0)  # its star's
        out = [Option((su + du, sv + dv), 0.0, (su, sv))
               for du, dv in ((r + 2 + w / 2, 0), (r / 2 + w / 2, -r - 1 - h / 2),
                              (0, -r - 1 - h / 2), (-r - 2 - w / 2, 0),
                              (-r / 2 - w / 2, r + 1 + h / 2), (0, r + 1 + h / 2),
                              (r + 2 + w / 2, -h), (r + 2 + w, -h / 2), (0, -r - 3 - 1.5 * h))]
    return out


def _stack(wanted: list[float], heights: list[float], low: float, high: float) -> list[float]:
    """Centres as near the ``wanted`` ones as may be, in their order, neighbours half their
    heights and :data:`_APART` apart, between ``low`` and ``high``: neighbours that would
    overlap move as one group, centred on where its members want to be."""
    groups: list[list[int]] = []

    def settle(group: list[int]) -> tuple[float, list[float]]:
        offsets = [0.0]
        for a, b in zip(group, group[1:]):
            offsets.append(offsets[-1] + (heights[a] + heights[b]) / 2 + _APART)
        base = sum(wanted[m] - o for m, o in zip(group, offsets)) / len(group)
        base = max(base, low + heights[group[0]] / 2)
        return min(base, high - heights[group[-1]] / 2 - offsets[-1]), offsets

    for n in sorted(range(len(wanted)), key=lambda n: wanted[n]):
        groups.append([n])
        while len(groups) > 1:
            (b1, o1), (b2, _) = settle(groups[-2]), settle(groups[-1])
            below, above = groups[-2][-1], groups[-1][0]
            if b1 + o1[-1] + (heights[below] + heights[above]) / 2 + _APART <= b2 + 1e-6:
                break
            groups[-2:] = [groups[-2] + groups[-1]]
    out = [0.0] * len(wanted)
    for group in groups:
        base, offsets = settle(group)
        for m, o in zip(group, offsets):
            out[m] = base + o
    return out


def _ends(ax: Axes, f: _Frame, specs: list[tuple], sizes: list[tuple[float, float]]
          ) -> tuple[_Frame, list[Option]]:
    """The compute ceilings' labels at their lines' ends: each label stands right of its
    line's end, stacked (:func:`_stack`), a leader from that end to the label's left where it
    is moved up or down, as wide a gap between them as half the furthest move (at least
    :data:`_GAP`, at most thrice that); the x axis runs on past the data as far as the widest
    label and that gap need (its right end found twice: its ticks may move the Axes' edge),
    its line and ticks as far as the data. ``f``: the Axes' frame as laid out. Returns the
    Axes' frame then and each label's place."""
    def stacked(f: _Frame) -> tuple[list[float], list[float]]:
        wanted = [f.at(1.0, spec[4])[1] for spec in specs]
        return wanted, _stack(wanted, [h for _, h in sizes], 1.0, f.height - 1.0)

    x0, x1 = ax.get_xlim()
    gap = min(3 * _GAP, max([_GAP] + [abs(v - want) / 2 for want, v in zip(*stacked(f))]))
    room, span = max(w for w, _ in sizes) + gap + 3, math.log10(x1 / x0)
    ax.spines["bottom"].set_bounds(x0, x1)
    for _ in range(2):
        ax.set_xlim(x0, x0 * 10 ** (span * f.width / max(f.width - room, f.width / 3)))
        for minor in (False, True):
            ax.set_xticks([x for x in ax.xaxis.get_ticklocs(minor=minor) if x0 <= x <= x1],
                          minor=minor)
        f = _Frame(ax)
    end = f.width - room
    lines = {line.get_gid(): line for line in ax.get_lines()}
    for spec in specs:
        lines[spec[3]].set_xdata([spec[5], f.data(end, 1.0)[0]])
    out = [Option((end + gap + w / 2, v), 0.0, (end, want), leader=abs(v - want) > 0.5,
                  tail=0.0) for (w, _), want, v in zip(sizes, *stacked(f))]
    return _Frame(ax, fresh=False), out


class _Taken:
    """The labels and leaders placed, and whether a place is clear of them and of what is
    drawn."""

    def __init__(self, f: _Frame) -> None:
        self.f, self.boxes, self.leaders = f, [], []
        self.marks = np.array(f.points, float).reshape(-1, 3)

    def add(self, o: Option, w: float, h: float) -> None:
        self.boxes.append(box(o.centre, w, h, o.angle))
        if o.leader:  # from where it leaves the label (turned with it)
            a, d = math.radians(o.angle), (o.tail - 0.5) * w
            self.leaders.append(((o.centre[0] + d * math.cos(a), o.centre[1] + d * math.sin(a)),
                                 o.anchor))

    def clear(self, o: Option, w: float, h: float, own: str) -> bool:
        """Whether the label's place lies inside the Axes clear of the labels placed (a space
        beside, a point and a half above or below), of every marker, of every line but its own
        and of every leader, and has no other line between it and its own compute ceiling."""
        f, c, angle = self.f, o.centre, o.angle
        left, bottom, right, top = box(c, w, h, angle)
        if left < 1 or bottom < 1 or right > f.width - 1 or top > f.height - 1:
            return False
        if any(left < t[2] + 5 and t[0] < right + 5 and bottom < t[3] + 1.5
               and t[1] < top + 1.5 for t in self.boxes):
            return False
        if len(self.marks):
            lu, lv = local((self.marks[:, 0], self.marks[:, 1]), c, angle)
            if np.any((abs(lu) < w / 2 + self.marks[:, 2]) & (abs(lv) < h / 2 + self.marks[:, 2])):
                return False
        if own.startswith("compute:") and not bottom <= o.anchor[1] <= top:
            low, high = min(bottom, o.anchor[1] + 2), max(top, o.anchor[1] - 2)
            c, h = ((left + right) / 2, (low + high) / 2), high - low
        return not crosses(f.segs[f.owner != own], c, w, h, angle) \
            and not crosses(segments(*self.leaders), c, w, h, angle)


def _place(ax: Axes, specs: list[tuple]) -> tuple[_Frame, dict[int, Option], list[tuple]]:
    """Each label's place (by its index in ``specs``, which takes the compute ceilings' short
    texts where they stand at their lines' ends and the widest would take more than a third of
    the Axes' width), as the module says; the Axes' frame then; the labels left out."""
    f = _Frame(ax)
    sizes = [f.size(spec[1]) for spec in specs]
    compute = [n for n, spec in enumerate(specs) if spec[0] == "compute"]
    taken, placed = _Taken(f), {}
    for n in compute:  # beside their lines, the highest first
        (w, h), own = sizes[n], specs[n][3]
        o = next((o for o in _candidates(specs[n], f, w, h) if taken.clear(o, w, h, own)), None)
        if o is None:
            break
        placed[n] = o
        taken.add(o, w, h)
    if len(placed) < len(compute):  # at their lines' ends
        if max(sizes[n][0] for n in compute) > f.width / 3:
            for n in compute:
                specs[n] = (specs[n][0], specs[n][-1], *specs[n][2:])
                sizes[n] = f.size(specs[n][1])
        f, ends = _ends(ax, f, [specs[n] for n in compute], [sizes[n] for n in compute])
        taken, placed = _Taken(f), dict(zip(compute, ends))
        for n in compute:
            taken.add(placed[n], *sizes[n])
    dropped = []
    for n, spec in enumerate(specs):
        if n in placed:
            continue
        (w, h), own = sizes[n], spec[3]
        options = _candidates(spec, f, w, h)
        o = next((o for o in options if taken.clear(o, w, h, own)), None)
        if o is None and spec[0] in ("batch", "ridge"):
            found = callout(f.at(*spec[4:6]) if spec[0] == "batch" else f.at(spec[5], spec[4]),
                            f, w, h, taken.boxes, taken.leaders)
            o = found[1] if found is not None and found[0] <= _FAR else None
        if o is None:
            dropped.append(spec)
        else:
            placed[n] = o
            taken.add(o, w, h)
    return f, placed, dropped


def draw_labels(ax: Axes, specs: list[tuple],
                said: Callable[[list[tuple]], None] | None = None) -> list[tuple]:
    """The labels on the ceilings, ridges, limits and decode steps (each spec: kind, text,
    colour, the gid of its line, and two numbers: a compute ceiling's peak and ridge (and its
    short text), a memory level's bandwidth and end, a limit's intensity, a batch's star, a
    ridge's peak and intensity), placed as the module says (:func:`_place`), each drawn at its
    offset from a point of its own line (its knee, its star), so that it moves with it; a
    callout with a thin leader to that point. ``said``: called with the labels that found no
    clear place, before any is drawn (the figure says them in its note); where that moves the
    Axes' edges, the labels are placed once more (and ``said`` called again where others
    found none). Returns the labels not drawn."""
    xlim, axis = ax.get_xlim(), ax.xaxis
    locators = axis.get_major_locator(), axis.get_minor_locator()
    ends = {line: line.get_xdata() for line in ax.get_lines()
            if str(line.get_gid()).startswith("compute:")}
    told: list[tuple] = []
    for attempt in range(2):
        if attempt:  # as it was: the x axis, its ticks, the compute ceilings' ends
            ax.set_xlim(*xlim)
            axis.set_major_locator(locators[0])
            axis.set_minor_locator(locators[1])
            ax.spines["bottom"].set_bounds(*xlim)
            for line, xs in ends.items():
                line.set_xdata(xs)
        f, placed, dropped = _place(ax, mine := list(specs))
        if said is None or dropped == told:
            break
        said(told := dropped)
        moved = _Frame(ax)
        if abs(moved.width - f.width) < 0.5 and abs(moved.height - f.height) < 0.5:
            break
    for n, o in sorted(placed.items()):
        kind, text, color, _ = mine[n][:4]
        name = "ceiling" if kind == "compute" else kind
        (u, v), (au, av) = o.centre, o.anchor
        # a leader ends at its line, or short of the ridge's circle or the star it points to
        end = max([0.0] + [r + 0.5 for pu, pv, r in f.points
                           if math.dist((pu, pv), o.anchor) < r])
        ax.annotate(text, f.data(au, av), xytext=(u - au, v - av), textcoords="offset points",
                    ha="center", va="center", rotation=o.angle, rotation_mode="anchor",
                    fontsize=_SIZE, color=color, annotation_clip=False, in_layout=False,
                    gid=f"{name}-label:{text}",
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8)
                    if kind == "memory" else None,
                    arrowprops=dict(arrowstyle="-", color=color, lw=0.6, shrinkA=0,
                                    shrinkB=end, relpos=(o.tail, 0.5)) if o.leader else None)
    return dropped
