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

__all__ = ["exact", "numeric", "scalar", "prefill_expressions"]

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


def prefill_expressions(setting: Setting) -> dict[str, Expr]:
    """The whole prefill's FLOPs and HBM bytes as exact expressions in T (the model's shape and
    precision substituted), and its time with the device's and the links' numbers substituted
    (floats): what ``prefill``'s table adds up (:func:`.phases.prefill_time`). Under
    parallelism one device's share: each collective at its group's link
    (:func:`.links.linked`), the ring's K/V passes exposed beyond the attention only, and with
    ``overlap`` the collectives hidden under the compute."""
    from sympy import Integer, Max

    from ..symbols import P_peak, beta_hbm
    from .forms import sympy_part
    from .links import linked

    s = setting
    forms = sympy_part(s.architecture, s.caches, f"prefill-{s.attention}")
    values = s.values()
    timed: list[tuple[dict[str, Any], Expr, Expr]] = []  # (operation, count, its time)

    def exact_times(ops: list[dict[str, Any]], numbers: dict[str, Any], free: tuple[str, ...],
                    bandwidths: dict[str, float]) -> list[None]:
        """The compile step of :func:`.links.linked`: each operation's count and roofline
        time, at its own link's α and β."""
        link = {k: numbers[k] for k in ("alpha_link", "beta_link") if k in numbers}
        at = {**values, **_symbol_values(link)}
        for op in ops:
            f, q = op["flops"].xreplace(at), op["bytes"].xreplace(at)
            times = [f / at[P_peak], q / at[beta_hbm],
                     *(level_q.xreplace(at) / bandwidths[level]
                       for level, level_q in op["levels"].items() if level in bandwidths)]
            count = op["count"]
            count = Integer(count) if isinstance(count, int) else count.xreplace(at)
            timed.append((op, count, count * Max(*times)))
        return []

    if s.parallel:
        degree = {"tp": s.tp, "ep": s.ep, "cp": s.cp}
        linked(s, [op for op in forms["prefill_parallel"]  # no collective of a group of one
                   if degree.get(op["name"].partition(".")[0], 2) > 1], ("T",), exact_times)
    else:
        exact_times(forms["prefill"], s.numbers(), ("T",), s.level_bandwidths)

    def is_compute(op: dict[str, Any]) -> bool:
        return op["kind"] != "communication"

    def ring(op: dict[str, Any]) -> bool:
        return op["name"].startswith("cp.")

    def total(rows: Any) -> Expr:
        return sum(rows, Integer(0))

    work = total(t for op, _, t in timed if is_compute(op))
    attention = total(t for op, _, t in timed if op["kind"] == "attention")
    comm = total(t for op, _, t in timed if not is_compute(op) and not ring(op)) \
        + Max(0, total(t for op, _, t in timed if ring(op)) - attention)
    return {"flops": total(n * op["flops"] for op, n, _ in timed if is_compute(op))
            .xreplace(values),
            "bytes": total(n * op["bytes"] for op, n, _ in timed if is_compute(op))
            .xreplace(values),
            "time": Max(work, comm) if s.overlap else work + comm}
