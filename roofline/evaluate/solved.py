"""Every crossover of an architecture solved by SymPy, each branch kept as text: what
:mod:`roofline.evaluate.crossover` evaluates without solving (``sympy.sstr``; read back by
:mod:`roofline.evaluate.arith`)."""

from __future__ import annotations

from typing import Any

from ..derive.architecture import Architecture

__all__ = ["solve_crossovers"]


def solve_crossovers(arch: Architecture) -> dict[str, dict[str, Any]]:
    """Every crossover of ``arch`` with every branch solved, as text."""
    from sympy import sstr

    from ..derive.crossovers import crossovers
    from ..symbols import latex

    out = {}
    for name, c in crossovers(arch).items():
        approx = c.simplified()
        out[name] = {
            "meaning": c.meaning, "unit": c.unit, "unknown": c.unknown.name, "kind": c.kind,
            "grows": sstr(c.grows), "other": sstr(c.other),
            "simplified": None if approx is None else {"expr": sstr(approx),
                                                       "latex": latex(approx)},
            "branches": [{"coefficients": [sstr(a) for a in b.coefficients],
                          "choices": [[sstr(atom), sstr(arg)] for atom, arg in b.choices],
                          "root": sstr(b.root), "latex": latex(b.root)}
                         for b in c.branches],
        }
    return out
