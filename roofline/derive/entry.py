"""The record of one named derivation, as the catalogue keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from ..symbols import CATALOGUE as SYMBOLS
from ..symbols import latex

__all__ = ["Entry"]


@dataclass(frozen=True)
class Entry:
    """One derivation: ``expr`` is exact (integers, ``Rational``, symbols; no floats)."""

    name: str
    expr: sympy.Basic
    meaning: str
    unit: str
    source: str
    assumptions: tuple[str, ...] = ()
    topic: str = ""
    steps: tuple[tuple[str, sympy.Basic], ...] = field(default=(), compare=False)
    # where the form holds (relations in its symbols), and the values of the worked example that
    # this entry takes instead of the documents' common ones, so that its example lies there:
    # (symbol, value, why)
    holds: tuple[sympy.Basic, ...] = field(default=(), compare=False)
    example: tuple[tuple[sympy.Symbol, sympy.Basic, str], ...] = field(default=(), compare=False)

    @property
    def symbols(self) -> list[str]:
        """Names of the catalogue symbols the expression uses, sorted."""
        return sorted(s.name for s in self.expr.free_symbols if s.name in SYMBOLS)

    def as_dict(self) -> dict[str, object]:
        """The JSON form: ``expr`` reads back with ``parse_expr(expr, local_dict=...)``."""
        return {
            "name": self.name,
            "meaning": self.meaning,
            "unit": self.unit,
            "expr": sympy.sstr(self.expr),
            "latex": latex(self.expr),
            "symbols": [
                {"name": n, "meaning": SYMBOLS[n].meaning, "unit": SYMBOLS[n].unit,
                 "assumptions": SYMBOLS[n].assumptions}
                for n in self.symbols
            ],
            "assumptions": list(self.assumptions),
            "source": self.source,
        }
