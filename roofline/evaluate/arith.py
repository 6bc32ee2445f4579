"""Arithmetic on the project's own expression strings, without SymPy and without ``eval``.

Derived expressions are shipped as ``sympy.sstr`` text (``roofline/derived.jsonl``); this module
reads such text through a whitelist of the syntax ``sstr`` writes: numbers, symbol names,
``+ - * / **``, and ``Max``, ``Min``, ``sqrt``, ``ceiling``, ``floor``, ``Abs``. Anything else is
rejected, so a tampered file can never run code.

:func:`compile` turns a text into a function of its free symbols once: the bound symbols are
folded into constants, so what is left to evaluate per point is small. The same function takes
Python numbers (``array=False``) or numpy arrays (``array=True``, numpy imported only then).

>>> value("2*T*d_in*d_out", {"T": 3, "d_in": 5, "d_out": 7})
210.0
>>> value("Max(x, 2) + sqrt(4)", {"x": 1})
4.0
>>> f = compile("Max(a*T, b) + 1", {"a": 2, "b": 5}, ("T",))
>>> f(1), f(4)
(6, 9)
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["value", "names", "compile"]

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


# A compiled node is ("c", constant), ("x", None): the one free variable itself, or ("f", f):
# a function of the free value (one free name) or of the free values' tuple (several).
_Node = tuple[str, Any]


def _identity(x: Any) -> Any:
    return x


def compile(text: str, bound: Mapping[str, Any], free: Sequence[str] = (),
            array: bool = False) -> Callable[..., Any]:
    """``text`` as a function of the ``free`` names (positional, in that order), every other
    name taken from ``bound`` and folded into constants. ``array=True`` evaluates Max, Min,
    ceiling... element-wise with numpy. A name in neither is a ``KeyError``.

    With one free name the function is built around that value itself (no argument tuple):
    the common case of a function of T, evaluated per prompt length."""
    calls = _array_calls() if array else _SCALAR
    if len(free) == 1:
        leaf: Mapping[str, _Node] = {free[0]: ("x", None)}
    else:
        leaf = {name: ("f", operator.itemgetter(i)) for i, name in enumerate(free)}
    kind, body = _compile(_parse(text), bound, leaf, calls)
    if kind == "c":
        return lambda *xs: body
    if len(free) == 1:
        return _identity if kind == "x" else body
    return lambda *xs: body(xs)


def _function_of(node: _Node) -> Callable[..., Any]:
    kind, body = node
    return _identity if kind == "x" else body


def _compile(node: ast.expr, bound: Mapping[str, Any], leaf: Mapping[str, _Node],
             calls: Mapping[str, Callable[..., Any]]) -> _Node:
    kind = type(node)
    if kind is ast.Constant:
        return "c", _number(node)
    if kind is ast.Name:
        return leaf[node.id] if node.id in leaf else ("c", bound[node.id])
    if kind is ast.UnaryOp:
        op, (ka, a) = _operator(node), _compile(node.operand, bound, leaf, calls)
        if ka == "c":
            return "c", op(a)
        return "f", op if ka == "x" else (lambda x: op(a(x)))
    if kind is ast.BinOp:
        op = _operator(node)
        (ka, a), (kb, b) = (_compile(node.left, bound, leaf, calls),
                            _compile(node.right, bound, leaf, calls))
        if ka == "c" and kb == "c":
            return "c", op(a, b)
        if ka == "c":
            return "f", (lambda x: op(a, x)) if kb == "x" else (lambda x: op(a, b(x)))
        if kb == "c":
            return "f", (lambda x: op(x, b)) if ka == "x" else (lambda x: op(a(x), b))
        fa, fb = _function_of((ka, a)), _function_of((kb, b))
        return "f", lambda x: op(fa(x), fb(x))
    if kind is not ast.Call:
        raise _reject(node)
    f = _function(node, calls)
    args = [_compile(a, bound, leaf, calls) for a in node.args]
    if all(k == "c" for k, _ in args):
        return "c", f(*(a for _, a in args))
    parts = [(lambda x, a=a: a) if k == "c" else _function_of((k, a)) for k, a in args]
    if len(parts) == 2:
        p, q = parts
        return "f", lambda x: f(p(x), q(x))
    return "f", lambda x: f(*(p(x) for p in parts))
