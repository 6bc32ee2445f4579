"""Every crossover of an architecture solved by SymPy, each branch kept as text: what
:mod:`roofline.evaluate.crossover` evaluates without solving (``sympy.sstr``; read back by
:mod:`roofline.evaluate.arith`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..derive.architecture import Architecture
from .forms import Derived

if TYPE_CHECKING:
    from ..derive.crossovers import Crossover

__all__ = ["solve_crossovers"]


def solve_crossovers(arch: Architecture) -> dict[str, Mapping[str, Any]]:
    """Every crossover of ``arch``, as text. Each part is solved on first use (``Derived``): the
    coefficients of every branch are needed to evaluate a crossover, the closed form only of
    the branch that is reported; writing the shipped file reads them all."""
    from sympy import sstr

    from ..derive.crossovers import Branch, crossovers
    from ..symbols import latex

    def branch(b: Branch) -> Derived:
        return Derived({"coefficients": lambda: [sstr(a) for a in b.coefficients],
                        "choices": lambda: [[sstr(atom), sstr(arg)] for atom, arg in b.choices],
                        "root": lambda: sstr(b.root), "latex": lambda: latex(b.root)})

    def simplified(c: Crossover) -> dict[str, str] | None:
        approx = c.simplified()
        return None if approx is None else {"expr": sstr(approx), "latex": latex(approx)}

    return {name: Derived({
        "meaning": lambda c=c: c.meaning, "unit": lambda c=c: c.unit,
        "unknown": lambda c=c: c.unknown.name, "kind": lambda c=c: c.kind,
        "grows": lambda c=c: sstr(c.grows), "other": lambda c=c: sstr(c.other),
        "simplified": lambda c=c: simplified(c),
        "branches": lambda c=c: [branch(b) for b in c.branches],
    }) for name, c in crossovers(arch).items()}
