"""Labels placed on a log–log plot's lines and beside its markers, none over another: the
roofline's ceilings (along their lines), ridges, limits and decode batches (:mod:`.roofline`).

Each label tries its candidate places in order (:func:`_candidates`) and takes the first inside
the Axes clear of the labels placed before it and of every marker and line drawn: beside its
own line, not on it, and with no other line between them. A compute ceiling's label that finds
no such place beside its line takes one where its line begins (before its ridge), else is a
callout: the nearest clear place, a leader to its line (:func:`.callouts.callout`); only then
one that a line crosses (then over the markers, then where it overlaps least). The compute
ceilings' labels are placed first. The x axis grows by quarter decades while a compute
ceiling's label finds no clear place beside its line (:func:`draw_labels`). Positions are in
points of the laid-out Axes, so that what is checked is what is drawn.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _style
from .callouts import Option, box, callout, crosses, local, segments

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["draw_labels", "layout", "root"]

_SIZE = _style.MIN_POINTS  # points: every label
_STEP = 10 ** 0.25  # the x axis grows by a quarter decade at a time for the ceilings' labels
_GROWTH = 16  # at most that many times (four decades, where labels crowd most)
_FAR = 50.0  # points: a batch's or a ridge's label no further by its leader (and crossings)
# the orders of the phases in which labels take their places (:func:`_place`): beside their
# lines first, then where their lines begin or callouts, or the start's places the other way
_ORDERS = (("beside", "start", "callout"), ("beside", "either"),
           ("beside", "start-", "callout"))


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
    obstacles a label must avoid: each point's and ridge's marker (centre and radius) and each
    line drawn (its segments, by gid: a ceiling's, a limit's, the lines joining points).
    ``fresh``: lay the figure out first (else as it was last laid out: a trial of another x
    range)."""

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
        segs, owner = [], []  # each line's segments (u1, v1, u2, v2), and its gid
        for n, line in enumerate(ax.get_lines()):
            gid, xs, ys = str(line.get_gid()), line.get_xdata(), line.get_ydata()
            if gid.startswith(("point:", "ridge:")):  # a ridge's small circle: a label may
                # touch it, along its line
                self.points.append((*self.at(xs[0], ys[0]), line.get_markersize() / 2
                                    + (1.0 if gid.startswith("point:") else -0.5)))
            elif len(xs) > 1 and line.get_linestyle() not in ("None", "none", "", " "):
                at = [self.at(x, y) for x, y in zip(xs, ys)]
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
    """The places a label may take, best first (a callout apart: :func:`.callouts.callout`)."""
    kind, _, _, _, a, b = spec
    out = []
    if kind == "compute":  # on its line, rightmost first, above or below (else lifted clear
        # of the markers on the line); left of its ridge only where no line crosses it
        v = f.at(1.0, a)[1]
        knee = f.at(b, 1.0)[0]
        ridge = knee + 3
        for lift in (2.0, 1.0 + max((r for _, _, r in f.points), default=1.0)):
            u = f.width - 3 - w / 2
            while u - w / 2 >= 1 and u + w / 2 >= ridge + 20:  # over some of its line
                out += [Option((u, v + side * (lift + h / 2)), 0.0, (u, v), u - w / 2 < ridge)
                        for side in (1, -1)]
                u -= 4
        u = f.width - 3 - w / 2
        out = out or [Option((u, v + 2 + h / 2), 0.0, (u, v))]  # wider than its room
        # where its line begins: ending at its ridge's circle, level with it, above, below
        out += [Option((knee - 5 - w / 2, v + dv), 0.0, (knee, v), True, start=True)
                for dv in (0.0, 2 + h / 2, -2 - h / 2)]
    elif kind == "ridge":  # beside the knee: left above, right below, left below, right above,
        ku, kv = f.at(b, a)  # then a line further out
        out = [Option((ku + du * (4 + w / 2), kv + dv * (3 + h / 2 + n * (h + 2))), 0.0,
                       (ku, kv)) for n in (0, 1) for du, dv in ((-1, 1), (1, -1), (-1, -1), (1, 1))]
    elif kind == "memory":  # turned with the line, from its foot up to its end: beside it,
        angle = math.atan2(f.py, f.px)  # below or above, then 3 or 6 points further, else on it
        end = f.at(b, 1.0)[0]
        for off in (*(side * (h / 2 + 1.5 + gap) for gap in (0, 3, 6) for side in (-1, 1)), 0.0):
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
        su, sv = f.at(a, b)  # then further right or lower
        r = max((r - 1 for pu, pv, r in f.points if abs(pu - su) + abs(pv - sv) < 0.5),
                default=4.0)  # its star's
        out = [Option((su + du, sv + dv), 0.0, (su, sv))
               for du, dv in ((r + 2 + w / 2, 0), (r / 2 + w / 2, -r - 1 - h / 2),
                              (0, -r - 1 - h / 2), (-r - 2 - w / 2, 0),
                              (-r / 2 - w / 2, r + 1 + h / 2), (r + 2 + w / 2, -h),
                              (r + 2 + w, -h / 2), (0, -r - 3 - 1.5 * h))]
    return out


def _overlap(area: tuple[float, ...], taken: list[tuple[float, ...]], f: _Frame) -> float:
    """How much of ``area`` (a label's box) lies over the labels taken or outside the Axes
    (points²)."""
    def common(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return (max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
                * max(0.0, min(a[3], b[3]) - max(a[1], b[1])))

    inside = common(area, (0.0, 0.0, f.width, f.height))
    return sum(common(area, t) for t in taken) + (area[2] - area[0]) * (area[3] - area[1]) \
        - inside


def _place(specs: list[tuple], f: _Frame, order: tuple[str, ...] = _ORDERS[0]
           ) -> tuple[list[tuple], tuple[float, ...], list[tuple]]:
    """Each label's place, inside the Axes and clear of every label placed before it (a point
    and a half above or below, a space beside) and of every leader: where it can, clear of
    every marker and crossed by no line (nor has one between it and its own line). The
    compute ceilings' labels first, in phases, each over them in the order given (``order``):
    "beside" its line; "start", where its line begins (before its ridge; "start-": below its
    line first); "callout" (:func:`.callouts.callout`); "either" (where its line begins, else
    a callout). Then the other labels: beside their lines (or stars, or knees), else callouts
    (a batch's, a ridge's, their leaders short). Each label left: clear of the markers, else
    anywhere (else where it overlaps the labels least). Returns (spec, option) for each; how
    crowded the labels are: how many compute ceilings' labels found no place clear of the
    markers, how many a line crosses, how many are callouts, how many lie where their lines
    begin, how many other labels a line crosses or found no place clear of the markers, and
    the callouts' leaders in points (:func:`.callouts.callout`); and the labels that found no
    place clear of the markers."""
    taken: list[tuple[float, ...]] = []
    leaders: list[tuple] = []
    marks = np.array(f.points, float).reshape(-1, 3)

    def free(o: Option, w: float, h: float, own: str, level: int) -> bool:
        c, angle = o.centre, o.angle
        left, bottom, right, top = box(c, w, h, angle)
        if left < 1 or bottom < 1 or right > f.width - 1 or top > f.height - 1:
            return False
        if any(left < t[2] + 5 and t[0] < right + 5 and bottom < t[3] + 1.5
               and t[1] < top + 1.5 for t in taken):  # a space apart along a line
            return False
        if level < 3 and len(f.points):
            lu, lv = local((marks[:, 0], marks[:, 1]), c, angle)
            if np.any((abs(lu) < w / 2 + marks[:, 2]) & (abs(lv) < h / 2 + marks[:, 2])):
                return False
        if level > 1:
            return True
        if own.startswith("compute:") and not bottom <= o.anchor[1] <= top:
            # beside its line: no other line between them either
            low, high = min(bottom, o.anchor[1] + 2), max(top, o.anchor[1] - 2)
            c, h = ((left + right) / 2, (low + high) / 2), high - low
        return not crosses(f.segs[f.owner != own], c, w, h, angle) \
            and not crosses(segments(*leaders), c, w, h, angle)

    sizes = [f.size(spec[1]) for spec in specs]
    options = [_candidates(spec, f, w, h) for spec, (w, h) in zip(specs, sizes)]

    def _try(n: int, phase: str) -> None:
        spec, (w, h) = specs[n], sizes[n]
        if phase != "callout":
            pool = [o for o in options[n] if o.start == (phase != "beside")]
            o = next((o for o in (pool[::-1] if phase == "start-" else pool)
                      if free(o, w, h, spec[3], 0)), None)
            if o is not None:
                placed[n] = (0, o, 0.0)
        if phase in ("callout", "either") and n not in placed \
                and spec[0] in ("compute", "batch", "ridge"):
            found = callout(spec, f, w, h, taken, leaders)
            # a batch's or a ridge's label rather crossed than far from its marker
            if found is not None and (spec[0] == "compute" or found[0] <= _FAR):
                placed[n] = (1, found[1], found[0])
        if n in placed:
            _take(placed[n][1], w, h, taken, leaders)

    def _last(mine: list[int]) -> None:  # the others: crossed, else anywhere
        for n in mine:
            if n not in placed:
                w, h = sizes[n]
                placed[n] = next(((level, o, 0.0) for level in (2, 3) for o in options[n]
                                  if not o.clear and free(o, w, h, specs[n][3], level)),
                                 None) or (4, min(options[n], key=lambda o: _overlap(
                                     box(o.centre, w, h, o.angle), taken, f)), 0.0)
                _take(placed[n][1], w, h, taken, leaders)

    placed: dict[int, tuple[int, Option, float]] = {}
    compute = [n for n, spec in enumerate(specs) if spec[0] == "compute"]
    others = [n for n in range(len(specs)) if n not in compute]
    for mine, phases in ((compute, order), (others, ("beside", "callout"))):
        for phase in phases:
            for n in mine:
                if n not in placed:
                    _try(n, phase)
        _last(mine)
    crowded, out, stuck = [0, 0, 0, 0, 0, 0.0], [], []
    for n, spec in enumerate(specs):
        level, o, leader = placed[n]
        if spec[0] == "compute" and (level > 0 or o.start):
            crowded[0 if level > 2 else 1 if level == 2 else 2 if level else 3] += 1
        elif level > 1:  # another label crossed, or over markers
            crowded[4] += 1
        crowded[5] += leader
        if level > 2:
            stuck.append(spec)
        out.append((spec, o))
    return out, tuple(crowded), stuck


def _take(o: Option, w: float, h: float, taken: list, leaders: list) -> None:
    """The label's box (and its leader) taken: later labels keep clear of them."""
    taken.append(box(o.centre, w, h, o.angle))
    if o.leader:
        leaders.append((o.centre, o.anchor))


def _cost(crowded: tuple[float, ...]) -> float:
    """How crowded labels are: a compute ceiling's label over markers counts 100, one that a
    line crosses 16 (four decades' growth of the x axis), a callout 10 and each 20 points of
    its leader (:func:`.callouts.callout`) 1, one where its line begins 8, another label over
    markers 1."""
    over, crossed, callouts, starts, others, leaders = crowded
    return 100 * over + 16 * crossed + 10 * callouts + 8 * starts + others + leaders / 20


def _arrange(specs: list[tuple], f: _Frame, orders: tuple = _ORDERS[:1]
             ) -> tuple[list[tuple], tuple[float, ...]]:
    """:func:`_place` in each order of phases given, and again with the labels that found no
    place clear of the markers placed first (twice at most): the places of the least crowded
    arrangement (:func:`_cost`) and how crowded it is."""
    best: tuple[list[tuple], tuple[float, ...]] | None = None
    for order in orders:
        given = specs
        for _ in range(3):
            out, crowded, stuck = _place(given, f, order)
            if best is None or _cost(crowded) < _cost(best[1]):
                best = out, crowded
            if not stuck:
                break
            given = stuck + [spec for spec in given if spec not in stuck]
    assert best is not None
    return best


def draw_labels(ax: Axes, specs: list[tuple]) -> None:
    """The labels on the ceilings, ridges, limits and decode steps, placed (:func:`_arrange`)
    in points of the laid-out Axes, its x axis grown (by quarter decades, up to four decades)
    as far as the compute ceilings' labels need: to the first x range where each lies beside
    its line (or where it begins) clear of the markers and of every line, else to the least
    crowded one, each quarter decade counted as a label over markers (:func:`_cost`), and no
    further than two decades past the last that was less crowded. There the labels are placed in
    each order of phases (:data:`_ORDERS`), the least crowded kept. Each is drawn at its offset
    from a point of its own line, so that it moves with its line; a callout with a thin leader
    to that point."""
    x0, x1 = ax.get_xlim()
    tried: list[tuple[float, int]] = []
    for n in range(_GROWTH + 1):  # trials on the Axes as laid out: the ticks change little
        ax.set_xlim(x0, x1 * _STEP**n)
        crowded = _arrange(specs, _Frame(ax, fresh=n == 0))[1]
        tried.append((_cost(crowded) + n, n))
        if crowded[:4] == (0, 0, 0, 0) or n - min(tried)[1] >= 8:  # clear, or no better
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
    placed, _ = _arrange(specs, f, _ORDERS)
    for spec, o in placed:
        kind, text, color, gid = spec[:4]
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
                                    shrinkB=end) if o.leader else None)
