"""Any SymPy expression evaluated for a setting: the symbolic path, for the expressions that
are not among the derived forms (the figures' sweeps, TTFT's chunks, the documents' worked
examples, validation's shapes). Exact substitution for single values; for arrays the expression
is written as Python by :mod:`roofline.codegen`, as the derived forms are, so there is one way
from an expression to a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .setting import Setting

if TYPE_CHECKING:
    from sympy import Expr, Symbol

__all__ = ["exact", "numeric", "scalar"]

Values = Setting | Mapping[Any, Any]


def _symbol_values(where: Values) -> dict[Symbol, Expr]:
    """A setting's exact values, or a mapping whose keys are symbols or symbol names."""
    if isinstance(where, Setting):
        return where.values()
    from sympy import sympify

    from ..symbols import CATALOGUE

    out = {}
    for key, v in where.items():
        symbol = CATALOGUE[key].symbol if isinstance(key, str) else key
        out[symbol] = v if hasattr(v, "free_symbols") else sympify(v)
    return out


def exact(expr: Expr, where: Values, **extra: Any) -> Expr:
    """``expr`` with the setting's (or mapping's) values and ``extra`` (by name) substituted
    exactly: a SymPy number when nothing is left free."""
    vals = {**_symbol_values(where), **_symbol_values(extra)}
    return expr.xreplace(vals)


def scalar(expr: Expr, where: Values, **extra: Any) -> float:
    """:func:`exact`, as a float; a symbol left without a value is a ``ValueError``."""
    out = exact(expr, where, **extra)
    if out.free_symbols:
        names = ", ".join(sorted(s.name for s in out.free_symbols))
        raise ValueError(f"symbols without a value: {names}")
    return float(out)


def numeric(expr: Expr, where: Values, *free: Symbol, **extra: Any) -> Callable[..., Any]:
    """``expr`` as a vectorised function of the ``free`` symbols (positional numpy arrays), every
    other symbol from the setting (or mapping) and ``extra``. The result has the shape of the
    broadcast arguments. A symbol left without a value is a ``ValueError``."""
    import numpy as np

    from ..codegen import function
    from .compiled import bind

    specialised = exact(expr, where, **extra)
    names = tuple(s.name for s in free)
    left = {s.name for s in specialised.free_symbols} - set(names)
    if left:
        raise ValueError(f"symbols without a value: {', '.join(sorted(left))}")
    f = bind(function(specialised), {}, names)

    def call(*xs: Any) -> Any:
        arrays = [np.asarray(x, dtype=float) for x in xs]
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        return np.broadcast_to(np.asarray(f(*arrays), dtype=float), shape).astype(float)

    return call
