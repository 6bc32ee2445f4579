"""Where a function of one unknown changes sign: the numerical part of a crossover
(:mod:`.crossover`), which knows nothing of crossovers.

The function is evaluated on a logarithmic grid of the unknown from 10⁻³ to 10¹⁵ (8 points a
decade). Where its sign changes between two points, regula falsi narrows the root to 13 digits;
a guess (a closed form's value) between the two points, where the sign changes within 10⁻¹⁰ of
it, is taken as the root without narrowing. Where three points of one sign bend towards zero,
the vertex of the parabola through them is evaluated too, so that a regime that opens and
closes within one step of the grid is not missed (on one branch a crossover's equality is a
polynomial of degree ≤ 2: the parabola is exact there). A root where the function touches zero
without crossing (a tie inside a Min, a double root) changes no sign and is no root here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

__all__ = ["sign_changes", "GRID"]

_LOW, _HIGH, _PER_DECADE = 1e-3, 1e15, 8  # the unknown's range searched, and the grid's step
GRID = tuple(_LOW * 10 ** (k / _PER_DECADE)  # where the function is sampled (``each``'s
             for k in range(round(math.log10(_HIGH / _LOW)) * _PER_DECADE + 1))  # points)
_DIGITS = 1e-13  # bisection stops at this relative width


def sign_changes(f: Callable[[float], float],
                 each: Callable[[Sequence[float]], list[float]] | None = None,
                 guesses: Iterable[float] = ()) -> list[float]:
    """Where ``f`` changes sign on (10⁻³, 10¹⁵): first from negative to non-negative (the regime
    opens), then back, alternately; each root to 13 digits. ``each``, where given, is ``f`` at
    many points at once (the grid's). ``guesses``: candidates for the first root (closed
    forms' values, read in order until one is taken, so that they may be computed as read):
    one in the first bracket across which ``f`` changes sign within 10⁻¹⁰ of it is taken as
    it is, without bisecting.

    >>> [round(r, 9) for r in sign_changes(lambda x: (x - 2) * (x - 5))]  # ahead at first
    [5.0]
    >>> [round(r, 9) for r in sign_changes(lambda x: (x - 2) * (5 - x))]
    [2.0, 5.0]
    >>> [round(r, 9) for r in sign_changes(lambda x: (x - 100) ** 2)]  # a touch: no crossing
    []
    >>> sign_changes(lambda x: x * x - 2, guesses=[1.5, 2 ** 0.5])  # a wrong guess, a right one
    [1.4142135623730951]
    """
    points = _sampled(f, each(GRID) if each else [f(x) for x in GRID])
    out: list[float] = []
    want = True  # the next crossing wanted: into f ≥ 0
    for (a, fa), (b, fb) in zip(points, points[1:]):
        if (fa >= 0) != want and (fb >= 0) == want:
            guessed = _guessed(f, a, b, guesses) if not out else None
            out.append(_bisect(f, a, b, want) if guessed is None else guessed)
            want = not want
    return out


def _guessed(f: Callable[[float], float], a: float, b: float,
             guesses: Iterable[float]) -> float | None:
    """The guess in (a, b) at which ``f`` turns from negative to non-negative within 10⁻¹⁰ of
    it (the first root, where a closed form gives it), or None."""
    for r in guesses:
        if a < r < b:
            below, above = f(r * (1 - 1e-10)), f(r * (1 + 1e-10))
            if below < 0 <= above:  # (a NaN is neither)
                return r
    return None


def _sampled(f: Callable[[float], float], grid: list[float]) -> list[tuple[float, float]]:
    """The grid's points with ``f``'s values there, ``grid`` (points where it is NaN left out),
    and the vertex of the parabola through three points of one sign added where it lies
    between them on the other side."""
    points = [(x, v) for x, v in zip(GRID, grid) if not math.isnan(v)]
    out = points[:2]
    for p2 in points[2:]:
        (x0, v0), (x1, v1), (x2, v2) = out[-2], out[-1], p2
        if (v0 >= 0) == (v1 >= 0) == (v2 >= 0):
            vertex = _vertex(x0, v0, x1, v1, x2, v2)
            if vertex is not None and not math.isnan(fv := f(vertex)) and (fv >= 0) != (v1 >= 0):
                out.insert(len(out) - 1 if vertex < x1 else len(out), (vertex, fv))
        out.append(p2)
    return out


def _vertex(x0: float, v0: float, x1: float, v1: float, x2: float, v2: float) -> float | None:
    """The abscissa of the extremum of the parabola through three points, if it lies strictly
    between the outer two and the parabola's value there has the other sign."""
    d01, d12 = (v1 - v0) / (x1 - x0), (v2 - v1) / (x2 - x1)
    a = (d12 - d01) / (x2 - x0)
    if a == 0 or not math.isfinite(a):
        return None
    b = d01 - a * (x0 + x1)
    xv = -b / (2 * a)
    if not x0 < xv < x2:
        return None
    at = v1 + (xv - x1) * (d01 + a * (xv - x0))  # Newton's form of the parabola
    return xv if (at >= 0) != (v1 >= 0) else None


def _bisect(f: Callable[[float], float], a: float, b: float, want: bool) -> float:
    """The sign change of f in (a, b), where ``f(a) ≥ 0`` is ``not want`` and ``f(b) ≥ 0`` is
    ``want``: the smallest point found at which f is on the ``want`` side. Regula falsi with
    the Illinois modification (Dowell & Jarratt 1971): superlinear on the polynomial pieces of
    a crossover's equality, a few steps where bisection takes 45; a step that does not shrink
    the bracket by half every third time is a bisection. Once the estimate settles (two in a
    row within the tolerance, or f exactly 0), a point just short of it closes the bracket:
    the estimate converges from one side, and the far end would otherwise be halved towards
    it step by step."""
    fa, fb = f(a), f(b)
    side, stalls, last = 0, 0, math.nan
    while b - a > _DIGITS * b:
        width = b - a
        if math.isfinite(fa) and math.isfinite(fb) and fa != fb and stalls < 2:
            mid = b - fb * (b - a) / (fb - fa)
            if not a < mid < b:
                mid = (a + b) / 2
        else:
            mid, stalls = (a + b) / 2, 0
        fm = f(mid)
        if math.isnan(fm):
            break
        settled = fm == 0 or abs(mid - last) <= _DIGITS * mid
        last = mid
        if (fm >= 0) == want:
            b, fb = mid, fm
            if side == 1:
                fa /= 2  # Illinois: halve the end that stayed
            side = 1
            probe = b - _DIGITS * b / 2  # just short of it, on the other side?
            if settled and a < probe and not math.isnan(fp := f(probe)) and (fp >= 0) != want:
                a, fa = probe, fp
        else:
            a, fa = mid, fm
            if side == -1:
                fb /= 2
            side = -1
            probe = a + _DIGITS * b / 2
            if settled and probe < b and not math.isnan(fp := f(probe)) and (fp >= 0) == want:
                b, fb = probe, fp
        stalls = stalls + 1 if b - a > width / 2 else 0
    return b
