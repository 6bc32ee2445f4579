"""Arithmetic on the project's own expression strings, without SymPy and without ``eval``.

Derived expressions are shipped as text (``roofline/derived.jsonl``: written by
``roofline.symbols.arithmetic``, the closed forms by ``sympy.sstr``); this module reads such
text through a whitelist of the syntax both write: numbers, symbol names, ``+ - * / **``, and
``Max``, ``Min``, ``sqrt``, ``ceiling``, ``floor``, ``Abs``. Anything else is rejected, so a
tampered file can never run code.

:func:`compile` turns a text into a function of its free symbols once: the bound symbols are
folded into constants, so what is left to evaluate per point is small. The same function takes
Python numbers (``array=False``) or numpy arrays (``array=True``, numpy imported only then).
:func:`compile_each` evaluates a text of one free name at many points at once without numpy:
each node maps its operation over the points (a C loop per node, not a Python call per node and
point), the crossovers' grid of 145 points in a fraction of the point-by-point time.

>>> value("2*T*d_in*d_out", {"T": 3, "d_in": 5, "d_out": 7})
210.0
>>> value("Max(x, 2) + sqrt(4)", {"x": 1})
4.0
>>> f = compile("Max(a*T, b) + 1", {"a": 2, "b": 5}, ("T",))
>>> f(1), f(4)
(6, 9)
>>> compile_each("Max(a*T, b) + 1", {"a": 2, "b": 5}, "T")([1, 4])
[6, 9]
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

__all__ = ["value", "names", "compile", "compile_each"]

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_SCALAR = {"Max": max, "Min": min, "sqrt": math.sqrt, "ceiling": math.ceil, "floor": math.floor,
           "Abs": abs}


def _array_calls() -> dict[str, Callable[..., Any]]:
    import numpy as np

    def fold(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *xs: f.reduce(xs) if len(xs) > 2 else f(*xs)

    return {"Max": fold(np.maximum), "Min": fold(np.minimum), "sqrt": np.sqrt,
            "ceiling": np.ceil, "floor": np.floor, "Abs": np.abs}


@lru_cache(maxsize=8192)
def _parse(text: str) -> ast.expr:
    """The syntax tree of ``text``; every node is checked where it is evaluated or compiled
    (:func:`_leaf`, :func:`_function`), so a text is walked once, not twice."""
    if len(text) > 1_000_000:
        raise ValueError("expression text longer than 1,000,000 characters")
    return ast.parse(text, mode="eval").body


def _reject(node: ast.expr, text: str = "") -> ValueError:
    return ValueError(f"not an arithmetic expression: {type(node).__name__}"
                      + (f" in {text!r}" if text else ""))


def _number(node: ast.Constant) -> int | float:
    if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        raise ValueError(f"not a number: {node.value!r}")
    return node.value


def _operator(node: ast.BinOp | ast.UnaryOp) -> Callable[..., Any]:
    table: Mapping[type, Callable[..., Any]] = _BINARY if type(node) is ast.BinOp else _UNARY
    if type(node.op) not in table:
        raise ValueError(f"not an arithmetic operator: {type(node.op).__name__}")
    return table[type(node.op)]


def _function(node: ast.Call, calls: Mapping[str, Callable[..., Any]]) -> Callable[..., Any]:
    if not (isinstance(node.func, ast.Name) and node.func.id in calls) or node.keywords:
        raise ValueError(f"not an allowed function: {ast.unparse(node.func)}")
    return calls[node.func.id]


def _eval(node: ast.expr, env: Mapping[str, float]) -> float:
    kind = type(node)
    if kind is ast.BinOp:
        op = _BINARY.get(type(node.op))  # inline: the commonest node of a long expression
        if op is None:
            raise ValueError(f"not an arithmetic operator: {type(node.op).__name__}")
        return op(_eval(node.left, env), _eval(node.right, env))
    if kind is ast.Name:
        return env[node.id]
    if kind is ast.Constant:
        return _number(node)
    if kind is ast.UnaryOp:
        return _operator(node)(_eval(node.operand, env))
    if kind is ast.Call:
        return _function(node, _SCALAR)(*(_eval(a, env) for a in node.args))
    raise _reject(node)


def value(text: str, env: Mapping[str, float], exact: bool = False) -> Any:
    """The value of ``text`` with the names bound in ``env`` (``KeyError`` for a missing one):
    a float, or with ``exact`` the number as Python computes it (integers stay exact)."""
    out = _eval(_parse(text), env)
    return out if exact else float(out)


def names(text: str) -> set[str]:
    """The symbol names ``text`` uses (function names excluded).

    >>> sorted(names("Max(P_peak*T, beta_hbm)"))
    ['P_peak', 'T', 'beta_hbm']
    """
    found: set[str] = set()
    _collect(_parse(text), found)
    return found


def _collect(node: ast.expr, found: set[str]) -> None:
    kind = type(node)
    if kind is ast.Name:
        found.add(node.id)
    elif kind is ast.Constant:
        _number(node)
    elif kind is ast.BinOp:
        _operator(node)
        _collect(node.left, found)
        _collect(node.right, found)
    elif kind is ast.UnaryOp:
        _operator(node)
        _collect(node.operand, found)
    elif kind is ast.Call:
        _function(node, _SCALAR)
        for arg in node.args:
            _collect(arg, found)
    else:
        raise _reject(node)


# Compilation runs in two steps. :func:`_fold` reads the syntax tree once, with the bound names
# folded into constants and, where there is one free name, every polynomial in it collected into
# its coefficients: a node is ("c", value), ("p", coefficients, lowest power first), ("x", i):
# the i-th of several free names, ("op", operator, left, right), ("neg", operand) or
# ("call", function name, arguments). :func:`_scalar` and :func:`_stream` then build the
# functions: of one point (closures) or of many (maps, one C loop per node). The derived
# expressions are sums of products (expanded only in part), so collecting the
# polynomials leaves a few nodes where the text has hundreds: the roofline's Max of the FLOP
# and byte polynomials, the block counts and cache terms between them.
_MAX_DEGREE = 8  # a product of higher degree stays a product (no crossover form comes near)


def _fold(node: ast.expr, bound: Mapping[str, Any], free: Sequence[str]) -> tuple:
    kind = type(node)
    if kind is ast.Constant:
        return "c", _number(node)
    if kind is ast.Name:
        if node.id not in free:
            return "c", bound[node.id]
        return ("p", (0, 1)) if len(free) == 1 else ("x", free.index(node.id))
    if kind is ast.UnaryOp:
        op, a = _operator(node), _fold(node.operand, bound, free)
        if a[0] == "c":
            return "c", op(a[1])
        if op is operator.pos:
            return a
        return ("p", tuple(-k for k in a[1])) if a[0] == "p" else ("neg", a)
    if kind is ast.BinOp:
        op = _operator(node)
        a, b = _fold(node.left, bound, free), _fold(node.right, bound, free)
        if a[0] == "c" and b[0] == "c":
            return "c", op(a[1], b[1])
        if a[0] in "cp" and b[0] in "cp":
            folded = _polynomial(op, a, b)
            if folded is not None:
                return folded
        if (op is operator.add or op is operator.sub) and b[0] in "cp" and a[0] == "op" \
                and a[1] is operator.add:  # (p + X) ± q → (p ± q) + X: a sum's polynomial
            for i, j in ((2, 3), (3, 2)):  # terms collected across the terms that are not
                if a[i][0] in "cp":
                    return "op", operator.add, _polynomial(op, a[i], b), a[j]
        return "op", op, a, b
    if kind is not ast.Call:
        raise _reject(node)
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    _function(node, _SCALAR)
    args = [_fold(a, bound, free) for a in node.args]
    if all(a[0] == "c" for a in args):
        return "c", _SCALAR[name](*(a[1] for a in args))
    return "call", name, args


def _coefficients(node: tuple) -> tuple:
    return (node[1],) if node[0] == "c" else node[1]


def _polynomial(op: Callable[..., Any], a: tuple, b: tuple) -> tuple | None:
    """``a op b`` for a constant or polynomial on each side, as a polynomial (a constant where
    it has no power of the free value); None where the result is none (a division by a
    polynomial, a power that is not a small whole number)."""
    out = _polynomial_of(op, a, b)
    return ("c", out[1][0]) if out is not None and len(out[1]) == 1 else out


def _polynomial_of(op: Callable[..., Any], a: tuple, b: tuple) -> tuple | None:
    p, q = _coefficients(a), _coefficients(b)
    if op is operator.add or op is operator.sub:
        n = max(len(p), len(q))
        p, q = p + (0,) * (n - len(p)), q + (0,) * (n - len(q))
        return "p", tuple(map(op, p, q))
    if op is operator.mul:
        if len(p) + len(q) - 2 > _MAX_DEGREE:
            return None
        out = [0] * (len(p) + len(q) - 1)
        for i, x in enumerate(p):
            for j, y in enumerate(q):
                out[i + j] += x * y
        return "p", tuple(out)
    if op is operator.truediv and b[0] == "c":
        return "p", tuple(x / b[1] for x in p)
    if (op is operator.pow and b[0] == "c" and type(b[1]) is int
            and 0 < b[1] <= _MAX_DEGREE // max(1, len(p) - 1)):
        out_node: tuple = a
        for _ in range(b[1] - 1):
            out_node = _polynomial(operator.mul, out_node, a)
        return out_node
    return None


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


def compile(text: str, bound: Mapping[str, Any], free: Sequence[str] = (),
            array: bool = False) -> Callable[..., Any]:
    """``text`` as a function of the ``free`` names (positional, in that order), every other
    name taken from ``bound`` and folded into constants. ``array=True`` evaluates Max, Min,
    ceiling... element-wise with numpy. A name in neither is a ``KeyError``.

    With one free name the function is built around that value itself (no argument tuple):
    the common case of a function of T, evaluated per prompt length."""
    node = _fold(_parse(text), bound, tuple(free))
    if node[0] == "c":
        value = node[1]
        return lambda *xs: value
    body = _scalar(node, _array_calls() if array else _SCALAR)
    if len(free) == 1:
        return body
    return lambda *xs: body(xs)


def compile_each(text: str, bound: Mapping[str, Any], free: str) -> Callable[[Sequence[Any]],
                                                                                 list[Any]]:
    """``text`` as a function from a sequence of values of ``free`` to the list of its values
    there (every other name from ``bound``, folded). An error at any point (a division by zero,
    an overflow) raises for the whole sequence: evaluate point by point with :func:`compile`
    to find which."""
    node = _fold(_parse(text), bound, (free,))
    if node[0] == "c":
        value = node[1]
        return lambda xs: [value] * len(xs)
    body = _stream(node)
    return lambda xs: list(body(xs))


def _stream(node: tuple) -> Callable[[Sequence[Any]], Any]:
    """A node as a function from the points to an iterator of its values there."""
    kind = node[0]
    if kind == "c":
        value = node[1]
        return lambda xs: repeat(value)
    if kind == "p":
        return _horner_stream(node[1])
    if kind == "neg":
        a = _stream(node[1])
        return lambda xs: map(operator.neg, a(xs))
    if kind == "op":
        op, a, b = node[1], _stream(node[2]), _stream(node[3])
        return lambda xs: map(op, a(xs), b(xs))
    f, parts = _SCALAR[node[1]], [_stream(a) for a in node[2]]
    if len(parts) == 1:
        p, = parts
        return lambda xs: map(f, p(xs))
    return lambda xs: map(f, *(p(xs) for p in parts))


def _horner_stream(coefficients: tuple) -> Callable[[Sequence[Any]], Any]:
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
