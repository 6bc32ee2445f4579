"""Expressions compiled for a setting: an expression tree (:mod:`.arith`) turned once into a
function of its free symbols, every other symbol's number folded in, so that what is left to
evaluate per point is small.

:func:`compile` gives a function of Python numbers (``array=False``) or of numpy arrays
(``array=True``, numpy imported only then). :func:`compile_each` evaluates an expression of one
free name at many points at once without numpy: each node maps its operation over the points (a
C loop per node, not a Python call per node and point), the crossovers' grid of 145 points in a
fraction of the point-by-point time. A :class:`Folding` gives both, and a value at one point,
for several trees folded together.

>>> f = compile("Max(a*T, b) + 1", {"a": 2, "b": 5}, ("T",))
>>> f(1), f(4)
(6, 9)
>>> compile_each("Max(a*T, b) + 1", {"a": 2, "b": 5}, "T")([1, 4])
[6, 9]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat

from .arith import BINARY, NARY, SCALAR, Tree, check, number, parse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["compile", "compile_each", "Folding"]


def _array_calls() -> dict[str, Callable[..., Any]]:
    import numpy as np

    def fold(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *xs: f.reduce(xs) if len(xs) > 2 else f(*xs)

    return {"Max": fold(np.maximum), "Min": fold(np.minimum), "sqrt": np.sqrt,
            "ceiling": np.ceil, "floor": np.floor, "Abs": np.abs}


# Compilation runs in two steps. :meth:`Folding.fold` reads the tree once, with the bound names
# folded into constants and, where there is one free name, every polynomial in it collected into
# its coefficients: a node is ("c", value), ("p", coefficients, lowest power first), ("x", i):
# the i-th of several free names, ("op", operator, left, right), ("neg", operand) or ("call",
# function name, arguments). :func:`_scalar` then builds the function of one point (closures),
# :func:`_values` evaluates at many (maps, one C loop per node). The derived expressions are
# sums of products (expanded only in part), so collecting the polynomials leaves a few nodes
# where the tree has hundreds: the roofline's Max of the FLOP and byte polynomials, the block
# counts and cache terms between them.
_MAX_DEGREE = 8  # a product of higher degree stays a product (no crossover form comes near)


class Folding:
    """Trees folded with ``bound``'s numbers, as functions of the ``free`` names: each list of a
    tree folded once however often it is met, in one tree or several (a tree read from the
    shipped file holds a repeated subtree as one object: :mod:`.sharing`). ``one`` and ``each``
    give what :func:`compile` and :func:`compile_each` give; ``at``, one value.

    ``grid``: points at which several trees are evaluated (a root finder's): each node's
    values there are kept, so that a node the trees share is evaluated there once.

    >>> f = Folding({"a": 2, "b": 5}, ("T",))
    >>> f.one("Max(a*T, b) + 1")(4), f.each("a*T")([1, 2])
    (9, [2, 4])
    """

    def __init__(self, bound: Mapping[str, Any], free: Sequence[str],
                 grid: tuple[Any, ...] | None = None):
        self.bound, self.free, self.grid = bound, tuple(free), grid
        self._memo: dict[int, tuple[list, tuple]] = {}  # id of a list → (the list, folded)
        self._names: dict[str, tuple] = {}  # a name → its folded leaf
        self._on_grid: dict[int, tuple[tuple, list]] = {}  # a node's values at ``grid``

    def fold(self, node: Tree) -> tuple:
        """The folded node of ``node`` (see above: ("c", value), ("p", coefficients), ...)."""
        kind = type(node)
        if kind is list:
            hit = self._memo.get(id(node))
            if hit is None:
                hit = self._memo[id(node)] = node, self._fold_list(node)  # the list kept
            return hit[1]  # alive with its id
        if kind is str:
            leaf = self._names.get(node)
            if leaf is None:
                leaf = self._names[node] = self._name(node)
            return leaf
        return "c", number(node)

    def _fold_list(self, node: list) -> tuple:
        """A list not folded before: its operands folded (those met before, and the names,
        looked up here: a call saved per operand, the most frequent step), then combined."""
        memo, names, operands = self._memo, self._names, []
        for a in check(node)[1:]:
            kind = type(a)
            if kind is list:
                hit = memo.get(id(a))
                operands.append(self.fold(a) if hit is None else hit[1])
            elif kind is str:
                leaf = names.get(a)
                operands.append(self.fold(a) if leaf is None else leaf)
            else:
                operands.append(("c", number(a)))
        return _combine(node[0], operands)

    def _name(self, name: str) -> tuple:
        if name not in self.free:
            return "c", self.bound[name]
        return ("p", (0, 1)) if len(self.free) == 1 else ("x", self.free.index(name))

    def one(self, expr: str | Tree, array: bool = False) -> Callable[..., Any]:
        node = self.fold(parse(expr))
        if node[0] == "c":
            value = node[1]
            return lambda *xs: value
        body = _scalar(node, _array_calls() if array else SCALAR)
        if len(self.free) == 1:
            return body
        return lambda *xs: body(xs)

    def at(self, expr: str | Tree, x: Any) -> Any:
        """``expr`` at one value ``x`` of the one free name, evaluated node by node without
        building a function (a value needed once: :meth:`one` for one needed many times)."""
        return _at(self.fold(parse(expr)), x)

    def each(self, expr: str | Tree) -> Callable[[Sequence[Any]], list[Any]]:
        return self._each(self.fold(parse(expr)))

    def _each(self, node: tuple) -> Callable[[Sequence[Any]], list[Any]]:
        if node[0] == "c":
            value = node[1]
            return lambda xs: [value] * len(xs)
        return lambda xs: list(_values(node, xs, self._on_grid if xs is self.grid else {}))


def _combine(op: str, operands: list[tuple]) -> tuple:
    """The folded node of the operator ``op`` over its folded ``operands``."""
    if op in NARY:
        return _fold_nary(NARY[op], operands)
    if op == "neg":
        a, = operands
        if a[0] == "c":
            return "c", -a[1]
        return ("p", tuple(-k for k in a[1])) if a[0] == "p" else ("neg", a)
    if op in BINARY:
        f, (a, b) = BINARY[op], operands
        if a[0] == "c" and b[0] == "c":
            return "c", f(a[1], b[1])
        if a[0] in "cp" and b[0] in "cp":
            folded = _polynomial(f, a, b)
            if folded is not None:
                return folded
        if f is operator.sub and b[0] in "cp" and a[0] == "op" and a[1] is operator.add \
                and a[2][0] in "cp":  # (p + X) − q → (p − q) + X: a sum's polynomial
            return "op", operator.add, _polynomial(f, a[2], b), a[3]  # collected across X
        return "op", f, a, b
    if all(a[0] == "c" for a in operands):
        return "c", SCALAR[op](*(a[1] for a in operands))
    return "call", op, operands


def _fold_nary(f: Callable[..., Any], operands: list[tuple]) -> tuple:
    """A sum or product of folded operands: the constants combined as numbers, the polynomials
    into one (a product only up to :data:`_MAX_DEGREE`), then the two, first; the others after
    them, in order."""
    const, collected, rest = None, None, []
    for a in operands:
        if a[0] == "op" and a[1] is f and a[2][0] in "cp":  # (p + X) within a sum: p collected
            rest.append(a[3])
            a = a[2]
        kind = a[0]
        if kind == "c":
            const = a[1] if const is None else f(const, a[1])
        elif kind == "p" and (combined := a if collected is None
                              else _polynomial(f, collected, a)) is not None:
            collected = combined
        else:
            rest.append(a)
    if const is not None:
        if collected is not None:
            collected = _polynomial(f, collected, ("c", const))
        elif not rest or const != (0 if f is operator.add else 1):  # 0 + X, 1·X: X
            collected = ("c", const)
    out = collected
    for a in rest:
        out = a if out is None else ("op", f, out, a)
    return out


def _coefficients(node: tuple) -> tuple:
    return (node[1],) if node[0] == "c" else node[1]


def _polynomial(op: Callable[..., Any], a: tuple, b: tuple) -> tuple | None:
    """``a op b`` for a constant or polynomial on each side, as a polynomial (a constant where
    it has no power of the free value); None where the result is none (a division by a
    polynomial, a power that is not a small whole number)."""
    p, q = _coefficients(a), _coefficients(b)
    if op is operator.add or op is operator.sub:
        n = max(len(p), len(q))
        out = tuple(map(op, p + (0,) * (n - len(p)), q + (0,) * (n - len(q))))
    elif op is operator.mul and len(p) + len(q) - 2 <= _MAX_DEGREE:
        product = [0] * (len(p) + len(q) - 1)
        for i, x in enumerate(p):
            for j, y in enumerate(q):
                product[i + j] += x * y
        out = tuple(product)
    elif op is operator.truediv and b[0] == "c":
        out = tuple(x / b[1] for x in p)
    elif (op is operator.pow and b[0] == "c" and type(b[1]) is int
            and 0 < b[1] <= _MAX_DEGREE // max(1, len(p) - 1)):
        power: tuple = a
        for _ in range(b[1] - 1):
            power = _polynomial(operator.mul, power, a)
        return power
    else:
        return None
    return ("c", out[0]) if len(out) == 1 else ("p", out)


def _horner(coefficients: tuple) -> Callable[[Any], Any]:
    """The polynomial of these coefficients as a function of one point (Horner's rule)."""
    c = coefficients
    if len(c) == 2:
        c0, c1 = c
        return lambda x: c0 + c1 * x
    if len(c) == 3:
        c0, c1, c2 = c
        return lambda x: c0 + x * (c1 + c2 * x)
    top, rest = c[-1], c[-2::-1]

    def f(x: Any) -> Any:
        out = top
        for k in rest:
            out = out * x + k
        return out
    return f


def _scalar(node: tuple, calls: Mapping[str, Callable[..., Any]]) -> Callable[[Any], Any]:
    """A non-constant node as a function of the free value (one free name) or of the tuple of
    free values (several)."""
    kind = node[0]
    if kind == "p":
        return _horner(node[1])
    if kind == "x":
        return operator.itemgetter(node[1])
    if kind == "neg":
        a = _scalar(node[1], calls)
        return lambda x: -a(x)
    if kind == "op":
        op, left, right = node[1:]
        if left[0] == "c":
            a, fb = left[1], _scalar(right, calls)
            return lambda x: op(a, fb(x))
        fa = _scalar(left, calls)
        if right[0] == "c":
            b = right[1]
            return lambda x: op(fa(x), b)
        fb = _scalar(right, calls)
        return lambda x: op(fa(x), fb(x))
    f = calls[node[1]]
    parts = [(lambda x, v=a[1]: v) if a[0] == "c" else _scalar(a, calls) for a in node[2]]
    if len(parts) == 1:
        p, = parts
        return lambda x: f(p(x))
    if len(parts) == 2:
        p, q = parts
        return lambda x: f(p(x), q(x))
    return lambda x: f(*(p(x) for p in parts))


def compile(expr: str | Tree, bound: Mapping[str, Any], free: Sequence[str] = (),
            array: bool = False) -> Callable[..., Any]:
    """``expr`` as a function of the ``free`` names (positional, in that order), every other
    name taken from ``bound`` and folded into constants. ``array=True`` evaluates Max, Min,
    ceiling... element-wise with numpy. A name in neither is a ``KeyError``.

    With one free name the function is built around that value itself (no argument tuple):
    the common case of a function of T, evaluated per prompt length."""
    return Folding(bound, free).one(expr, array)


def compile_each(expr: str | Tree, bound: Mapping[str, Any],
                 free: str) -> Callable[[Sequence[Any]], list[Any]]:
    """``expr`` as a function from a sequence of values of ``free`` to the list of its values
    there (every other name from ``bound``, folded). An error at any point (a division by zero,
    an overflow) raises for the whole sequence: evaluate point by point with :func:`compile`
    to find which."""
    return Folding(bound, (free,)).each(expr)


def _at(node: tuple, x: Any) -> Any:
    """A node's value at the point ``x`` (one free name), as :func:`_scalar`'s function gives
    it, operation for operation."""
    kind = node[0]
    if kind == "c":
        return node[1]
    if kind == "p":
        *rest, out = node[1]
        for k in reversed(rest):
            out = out * x + k
        return out
    if kind == "neg":
        return -_at(node[1], x)
    if kind == "op":
        return node[1](_at(node[2], x), _at(node[3], x))
    return SCALAR[node[1]](*(_at(a, x) for a in node[2]))


def _values(node: tuple, xs: Sequence[Any], memo: dict[int, tuple[tuple, list]]) -> Any:
    """A non-constant node's values at the points ``xs`` as a list (a constant's: ``repeat``),
    each node evaluated once for the points of ``memo`` (which holds the node with its values,
    so that its id is not reused while the memo lives): a map over the points per node, one C
    loop, not a Python call per node and point."""
    kind = node[0]
    if kind == "c":
        return repeat(node[1])
    hit = memo.get(id(node))
    if hit is not None:
        return hit[1]
    if kind == "p":
        out = list(_horner_stream(node[1])(xs))
    elif kind == "neg":
        out = list(map(operator.neg, _values(node[1], xs, memo)))
    elif kind == "op":
        out = list(map(node[1], _values(node[2], xs, memo), _values(node[3], xs, memo)))
    else:
        out = list(map(SCALAR[node[1]], *(_values(a, xs, memo) for a in node[2])))
    memo[id(node)] = node, out
    return out


def _horner_stream(coefficients: tuple) -> Callable[[Sequence[Any]], Any]:
    """The polynomial of these coefficients at many points (Horner's rule, a map a step)."""
    mul, add = operator.mul, operator.add
    top, rest = coefficients[-1], coefficients[-2::-1]

    def f(xs: Sequence[Any]) -> Any:
        out = map(mul, repeat(top), xs)
        for i, k in enumerate(rest):
            if k != 0:
                out = map(add, out, repeat(k))
            if i < len(rest) - 1:
                out = map(mul, out, xs)
        return out
    return f
