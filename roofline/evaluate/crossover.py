"""Crossovers in numbers: every solved branch of :mod:`roofline.evaluate.solved` evaluated for a
setting, without SymPy. A candidate root counts only where its branch really holds (each Max/Min
takes the chosen argument there) and where the defining equality ``grows − other`` changes sign:
a root where the two sides touch without crossing (a tie inside a Min, a double root) is no
crossover. The first sign change from below opens the regime; the next one, if any, closes it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import partial
from typing import Any

from . import arith
from .setting import Setting

__all__ = ["CrossoverValue", "crossover_values", "crossover_value", "real_roots"]

_REL = 1e-9  # relative distance under which two roots are one
_SRAM = re.compile(r"\bM_sram\b")  # the tiled schedules' SRAM size, by name in the text


@dataclass(frozen=True)
class CrossoverValue:
    """A crossover evaluated for one setting: its value, or why it does not exist."""

    name: str
    meaning: str
    value: float | None
    unit: str
    exists: bool
    reason: str
    expr: str  # the closed form of the branch that holds here (``sympy.sstr``)
    latex: str
    ends_at: float | None = None  # where the regime ends again (a second root), if it does
    evaluated: bool = True  # False when the device lacks a number the crossover needs
    simplified: float | None = None  # the wide-layer form (activation traffic neglected)
    simplified_expr: str | None = None


def real_roots(a2: float, a1: float, a0: float) -> list[float]:
    """The real roots of a₂x² + a₁x + a₀ (numerically stable form; none when all are 0).

    >>> real_roots(1, -3, 2)
    [1.0, 2.0]
    >>> real_roots(0, 2, -1)
    [0.5]
    """
    if a2 == 0:
        return [] if a1 == 0 else [-a0 / a1]
    disc = a1 * a1 - 4 * a2 * a0
    if disc < 0:
        return []
    q = -(a1 + math.copysign(math.sqrt(disc), a1)) / 2
    roots = [q / a2] + ([a0 / q] if q != 0 else [])
    return sorted(roots)


def crossover_values(setting: Setting) -> dict[str, CrossoverValue]:
    """Every crossover of the catalogue for this setting (architecture of its model)."""
    return {name: crossover_value(setting, name) for name in setting.crossover_forms}


def crossover_value(setting: Setting, name: str) -> CrossoverValue:
    """One crossover of the catalogue (``name`` without ``crossover.``) for this setting."""
    c = setting.crossover_forms[name]
    vals = setting.numbers(batch=c["unknown"] != "B")
    if c["unknown"] != "T":  # a batch crossover that depends on T: at the model's context limit
        vals["T"] = setting.model.max_position
    return _evaluate(name, c, vals, setting)


def _evaluate(name: str, c: dict[str, Any], vals: dict[str, Any],
              setting: Setting) -> CrossoverValue:
    x, main = c["unknown"], c["branches"][0]
    value = partial(CrossoverValue, name, c["meaning"])
    if "M_sram" not in vals and _SRAM.search(c["grows"] + " " + c["other"]):
        return value(None, c["unit"], False, f"not evaluated: {setting.hardware.name} gives no "
                     "on-chip SRAM per SM (the tiled attention's M)", main["root"],
                     main["latex"], evaluated=False)
    side = _side(c, vals)
    found: list[tuple[float, dict[str, Any]]] = []
    for branch in c["branches"]:
        try:
            coeffs = [arith.value(a, vals) for a in branch["coefficients"]]
            roots = real_roots(*coeffs)
        except (OverflowError, ZeroDivisionError, ValueError):
            continue
        found += [(r, branch) for r in roots
                  if r > 0 and math.isfinite(r) and _holds(branch, vals, x, r)]
    found.sort(key=lambda item: item[0])
    crossings = _crossings(found, side)
    if not crossings:
        return value(None, c["unit"], False, _never(c, vals, setting), main["root"],
                     main["latex"])
    first, branch = crossings[0]
    ends = crossings[1][0] if len(crossings) > 1 else None
    note = "" if ends is None else _ends_note(c, ends)
    approx = c["simplified"] if branch is main else None
    return value(first, c["unit"], True, note, branch["root"], branch["latex"], ends,
                 simplified=_real(approx["expr"], vals) if approx else None,
                 simplified_expr=approx["expr"] if approx else None)


def _side(c: dict[str, Any], vals: dict[str, Any]):
    """The sign of grows − other at x: +1 (grows ahead or equal), −1 (behind)."""
    grows = arith.compile(c["grows"], vals, (c["unknown"],))
    other = arith.compile(c["other"], vals, (c["unknown"],))
    return lambda at: 1 if grows(at) >= other(at) else -1


def _crossings(found: list[tuple[float, dict[str, Any]]], side) -> list[tuple[float, Any]]:
    """The roots where the sign really changes: first from − to +, then from + to −, ..."""
    out: list[tuple[float, Any]] = []
    want = 1  # the first crossing opens the regime
    last = -math.inf
    for r, branch in found:
        if r <= last * (1 + _REL):
            continue  # the same root found by another branch
        last = r
        step = max(r * 1e-6, 1e-9)
        before, after = side(max(r - step, r / 2)), side(r + step)
        if before == -want and after == want:
            out.append((r, branch))
            want = -want
    return out


def _real(text: str, vals: dict[str, Any]) -> float | None:
    try:
        v = arith.value(text, vals)
    except (ValueError, ZeroDivisionError, OverflowError):  # no real value
        return None
    return v if v > 0 and math.isfinite(v) else None


def _ends_note(c: dict[str, Any], ends: float) -> str:
    """Where the regime that the crossover opens closes again (the second root)."""
    if c["kind"] == "intensity":
        return f"memory-bound again from {ends:,.0f} {c['unit']}"
    return f"the two sides are equal again at {ends:,.0f} {c['unit']}"


def _holds(branch: dict[str, Any], vals: dict[str, Any], x: str, r: float) -> bool:
    """Whether every Max/Min of the branch really takes the chosen argument at x = r."""
    at = {**vals, x: r}
    for atom, arg in branch["choices"]:
        a, b = arith.value(atom, at), arith.value(arg, at)
        if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300):
            return False
    return True


def _never(c: dict[str, Any], vals: dict[str, Any], setting: Setting) -> str:
    x = c["unknown"]
    grows = arith.compile(c["grows"], vals, (x,))
    other = arith.compile(c["other"], vals, (x,))
    window = _window_reason(c, vals)
    if c["kind"] == "memory":
        if grows(0) >= other(0):
            return (f"never fits: the weights alone ({grows(0) / 1e9:.4g} GB) exceed the device "
                    f"memory ({other(0) / 1e9:.4g} GB)")
        if window:
            return (f"never: {window}, so the memory in use stops growing at "
                    f"{grows(1e15) / 1e9:.4g} GB: it always fits")
        return "never: it always fits"
    ratio = grows(1e15) / other(1e15)
    if c["kind"] == "intensity":
        return (f"never: the intensity tends to {ratio * setting.ridge:.4g} FLOP/byte as "
                f"{x} → ∞, below the ridge {setting.ridge:.4g} FLOP/byte")
    if window:
        return f"never: {window}, and stays below (ratio {ratio:.3g} as {x} → ∞)"
    return f"never: the left side stays below the right (ratio {ratio:.3g} as {x} → ∞)"


def _window_reason(c: dict[str, Any], vals: dict[str, Any]) -> str:
    """Why a sliding window can remove a crossover, in words; "" without a window in it."""
    if "W" not in vals or "W" not in arith.names(c["grows"]):
        return ""
    w = vals["W"]
    if c["kind"] == "memory":
        return f"the sliding window keeps at most W = {w:,} tokens per windowed layer"
    return (f"beyond the sliding window W = {w:,} tokens a windowed layer's attention grows "
            "only as W·T, linearly like the projections")
