"""The geometry of the roofline's labels (:mod:`.labels`), in points of the laid-out Axes: a
label's box (turned with its line), the segments and boxes that cross it, and a callout's place
and leader where a label finds no place beside its line.

A callout (:func:`callout`) is searched first on a grid of cells of a point (:func:`raster`:
every line, marker, label and leader drawn), its box then held to the exact segments: the
nearest clear place whose leader to its line crosses no label nor marker, each line it crosses
counting as :data:`LEADER` points of its length.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

__all__ = ["LEADER", "Option", "box", "local", "crosses", "through", "segments", "clip",
           "raster", "callout", "meets"]

LEADER = 12.0  # points of a leader's length that each line it crosses counts as


def box(c: tuple[float, float], w: float, h: float, angle: float) -> tuple[float, ...]:
    """The bounding box (left, bottom, right, top) of a w × h label centred at c, turned by
    ``angle`` degrees."""
    a = math.radians(angle)
    half_w = (w * abs(math.cos(a)) + h * abs(math.sin(a))) / 2
    half_h = (w * abs(math.sin(a)) + h * abs(math.cos(a))) / 2
    return c[0] - half_w, c[1] - half_h, c[0] + half_w, c[1] + half_h


def local(p: Any, c: tuple[float, float], angle: float) -> tuple[Any, Any]:
    """p (a point, or arrays of points' u and v) in the frame of a label centred at c and
    turned by ``angle`` degrees."""
    a = math.radians(angle)
    du, dv = p[0] - c[0], p[1] - c[1]
    return du * math.cos(a) + dv * math.sin(a), -du * math.sin(a) + dv * math.cos(a)


def crosses(segs: np.ndarray, c: tuple[float, float], w: float, h: float,
            angle: float) -> bool:
    """Whether any of the segments (rows u1, v1, u2, v2) runs through the label (Liang–Barsky
    clipping, in the label's frame, a point's margin around it)."""
    if not len(segs):
        return False
    u1, v1 = local((segs[:, 0], segs[:, 1]), c, angle)
    u2, v2 = local((segs[:, 2], segs[:, 3]), c, angle)
    du, dv = u2 - u1, v2 - v1
    lo, hi, out = np.zeros(len(segs)), np.ones(len(segs)), np.zeros(len(segs), bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in ((-du, u1 + w / 2 + 1), (du, w / 2 + 1 - u1), (-dv, v1 + h / 2 + 1),
                     (dv, h / 2 + 1 - v1)):
            out |= (p == 0) & (q < 0)  # parallel to that edge, outside it
            lo = np.where(p < 0, np.maximum(lo, q / p), lo)
            hi = np.where(p > 0, np.minimum(hi, q / p), hi)
    return bool(np.any(~out & (lo <= hi)))


def through(seg: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Which of the boxes (rows left, bottom, right, top) the segment (u1, v1, u2, v2) runs
    through (Liang–Barsky)."""
    u1, v1, u2, v2 = seg
    du, dv = u2 - u1, v2 - v1
    lo, hi, out = np.zeros(len(boxes)), np.ones(len(boxes)), np.zeros(len(boxes), bool)
    for p, q in ((-du, u1 - boxes[:, 0]), (du, boxes[:, 2] - u1), (-dv, v1 - boxes[:, 1]),
                 (dv, boxes[:, 3] - v1)):
        if p == 0:
            out |= q < 0
        elif p < 0:
            lo = np.maximum(lo, q / p)
        else:
            hi = np.minimum(hi, q / p)
    return ~out & (lo <= hi)


def segments(*pairs: tuple) -> np.ndarray:
    """Segments given as pairs of points, as rows u1, v1, u2, v2."""
    return np.array([(*p, *q) for p, q in pairs], float).reshape(-1, 4)


class Option(NamedTuple):
    """A place a label may take: its centre, its angle and a point of its own line or marker
    (``anchor``), in points; ``leader``: drawn with a leader from it to its anchor (a
    callout: :func:`callout`), leaving it at ``tail``."""

    centre: tuple[float, float]
    angle: float
    anchor: tuple[float, float]
    leader: bool = False
    tail: float = 0.5  # where along its width its leader leaves it (0: its left end)


def clip(seg: tuple, width: float, height: float) -> tuple | None:
    """The part of a segment inside [0, width] × [0, height] (Liang–Barsky), or None."""
    (u1, v1), (u2, v2) = seg
    du, dv, lo, hi = u2 - u1, v2 - v1, 0.0, 1.0
    for p, q in ((-du, u1), (du, width - u1), (-dv, v1), (dv, height - v1)):
        if p == 0:
            if q < 0:
                return None
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
    return None if lo > hi else ((u1 + lo * du, v1 + lo * dv), (u1 + hi * du, v1 + hi * dv))


def raster(f: Any, boxes: list[tuple[float, ...]], lines: list[tuple]) -> np.ndarray:
    """The Axes in cells of a point: True where a box (left, bottom, right, top) or a segment
    (a pair of points) lies."""
    grid = np.zeros((int(f.height) + 2, int(f.width) + 2), bool)
    for left, bottom, right, top in boxes:
        grid[max(0, int(bottom)):max(0, int(top) + 1), max(0, int(left)):max(0, int(right) + 1)] \
            = True
    for seg in lines:
        seg = clip(seg, f.width, f.height)
        if seg is not None:
            (u1, v1), (u2, v2) = seg
            t = np.linspace(0.0, 1.0, int(2 * max(abs(u2 - u1), abs(v2 - v1))) + 2)
            grid[(v1 + t * (v2 - v1)).astype(int), (u1 + t * (u2 - u1)).astype(int)] = True
    return grid


def callout(anchor: tuple[float, float], f: Any, w: float, h: float,
            taken: list[tuple[float, ...]], leaders: list[tuple]) -> tuple[float, Option] | None:
    """A label whose places beside its marker (a decode batch's star, a ridge's knee, at
    ``anchor``) are none clear: the nearest place clear of every line, marker, label and
    leader, joined to its marker by a leader that crosses no label nor other marker; each line
    the leader crosses counts as :data:`LEADER` points of its length, and where it stops (short
    of its marker) no other marker is as near. ``f``: the Axes' frame
    (:class:`.labels._Frame`); ``taken``: the boxes of the labels placed; ``leaders``: their
    leaders. Returns (its cost: the gap between the label and its marker, plus the lines
    crossed; the place), or None where there is none. At most 40 clear places are weighed,
    nearest first."""
    u, v = anchor
    us, vs = np.meshgrid(np.arange(1.5 + w / 2, f.width - 1 - w / 2, 4.0),
                         np.arange(1.5 + h / 2, f.height - 1 - h / 2, 3.0))
    # first in cells of a point: the places whose box (a point around it) holds nothing drawn
    grid = raster(f, [(t[0] - 5, t[1] - 1.5, t[2] + 5, t[3] + 1.5) for t in taken]
                  + [(pu - r, pv - r, pu + r, pv + r) for pu, pv, r in f.points],
                  [((u1, v1), (u2, v2)) for u1, v1, u2, v2 in f.segs] + leaders)
    total = np.pad(grid.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    j0, j1 = (us - w / 2 - 1).astype(int), (us + w / 2 + 2).astype(int)
    i0, i1 = (vs - h / 2 - 1).astype(int), (vs + h / 2 + 2).astype(int)
    clear = total[i1, j1] - total[i0, j1] - total[i1, j0] + total[i0, j0] == 0
    gap = np.hypot(np.maximum(0, abs(us - u) - w / 2), np.maximum(0, abs(vs - v) - h / 2))
    gap = np.where(clear & (gap >= 8.0), gap, np.inf)  # nearer: a direct label's place
    best: tuple[float, Option] | None = None
    labels = np.array([(t[0] - 1, t[1] - 1, t[2] + 1, t[3] + 1) for t in taken]).reshape(-1, 4)
    marks = np.array(f.points, float).reshape(-1, 3)
    dots = np.column_stack([marks[:, :2] - marks[:, 2:], marks[:, :2] + marks[:, 2:]])
    near = np.hypot(marks[:, 0] - u, marks[:, 1] - v)
    stop = max([0.0, *(marks[near < marks[:, 2], 2] + 0.5)])  # short of what covers it
    apart = near > 0.5  # not its own marker
    tried = 0
    for k in np.argsort(gap, axis=None, kind="stable"):
        d = float(gap.flat[k])
        if d == np.inf or best is not None and d >= best[0] or tried == 40:
            break
        o = Option((float(us.flat[k]), float(vs.flat[k])), 0.0, anchor, leader=True)
        end = np.array(anchor) + (np.array(o.centre) - anchor) * stop / math.dist(o.centre,
                                                                                 anchor)
        leader = segments((o.centre, end))[0]  # as drawn
        if np.any(through(leader, labels)) or np.any(through(leader, dots) & apart) \
                or np.any(np.hypot(*(marks[apart, :2] - end).T) < stop + 0.5):
            continue  # over another label or marker, or ending nearer another marker
        cost = d + LEADER * len(set(f.owner[meets(leader, f.segs)]))
        if best is None or cost < best[0]:
            best = (cost, o)
        tried += 1
    return best


def meets(a: np.ndarray, segs: np.ndarray) -> np.ndarray:
    """Which of the segments (rows u1, v1, u2, v2) the segment ``a`` crosses (each one's ends
    on either side of the other)."""
    def side(p: Any, q: Any, r: Any) -> Any:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    p, q = (a[0], a[1]), (a[2], a[3])
    r, t = (segs[:, 0], segs[:, 1]), (segs[:, 2], segs[:, 3])
    return (side(p, q, r) * side(p, q, t) < 0) & (side(r, t, p) * side(r, t, q) < 0)
