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
_ALLOWED = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Call, *_BINARY,
            *_UNARY)


def _array_calls() -> dict[str, Callable[..., Any]]:
    import numpy as np

    def fold(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *xs: f.reduce(xs) if len(xs) > 2 else f(*xs)

    return {"Max": fold(np.maximum), "Min": fold(np.minimum), "sqrt": np.sqrt,
            "ceiling": np.ceil, "floor": np.floor, "Abs": np.abs}


@lru_cache(maxsize=8192)
def _parse(text: str) -> ast.expr:
    if len(text) > 1_000_000:
        raise ValueError("expression text longer than 1,000,000 characters")
    tree = ast.parse(text, mode="eval").body
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"not an arithmetic expression: {type(node).__name__} in {text!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _SCALAR and not node.keywords):
            raise ValueError(f"not an allowed function in {text!r}")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                               or not isinstance(node.value, (int, float))):
            raise ValueError(f"not a number: {node.value!r} in {text!r}")
    return tree


def _eval(node: ast.expr, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, env))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _SCALAR[node.func.id](*(_eval(a, env) for a in node.args))


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
    tree = _parse(text)
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls}


# A compiled node is ("c", constant) or ("f", function of the free values' tuple).
_Node = tuple[str, Any]


def compile(text: str, bound: Mapping[str, Any], free: Sequence[str] = (),
            array: bool = False) -> Callable[..., Any]:
    """``text`` as a function of the ``free`` names (positional, in that order), every other
    name taken from ``bound`` and folded into constants. ``array=True`` evaluates Max, Min,
    ceiling... element-wise with numpy. A name in neither is a ``KeyError``."""
    calls = _array_calls() if array else _SCALAR
    index = {name: i for i, name in enumerate(free)}
    kind, body = _compile(_parse(text), bound, index, calls)
    if kind == "c":
        return lambda *xs: body
    return lambda *xs: body(xs)


def _compile(node: ast.expr, bound: Mapping[str, Any], index: Mapping[str, int],
             calls: Mapping[str, Callable[..., Any]]) -> _Node:
    if isinstance(node, ast.Constant):
        return "c", node.value
    if isinstance(node, ast.Name):
        if node.id in index:
            i = index[node.id]
            return "f", lambda xs: xs[i]
        return "c", bound[node.id]
    if isinstance(node, ast.UnaryOp):
        op, (kind, a) = _UNARY[type(node.op)], _compile(node.operand, bound, index, calls)
        return ("c", op(a)) if kind == "c" else ("f", lambda xs: op(a(xs)))
    if isinstance(node, ast.BinOp):
        op = _BINARY[type(node.op)]
        (ka, a), (kb, b) = (_compile(node.left, bound, index, calls),
                            _compile(node.right, bound, index, calls))
        if ka == "c" and kb == "c":
            return "c", op(a, b)
        if ka == "c":
            return "f", lambda xs: op(a, b(xs))
        if kb == "c":
            return "f", lambda xs: op(a(xs), b)
        return "f", lambda xs: op(a(xs), b(xs))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    f = calls[node.func.id]
    args = [_compile(a, bound, index, calls) for a in node.args]
    if all(kind == "c" for kind, _ in args):
        return "c", f(*(a for _, a in args))
    parts = [(lambda xs, a=a: a) if kind == "c" else a for kind, a in args]
    if len(parts) == 2:
        p, q = parts
        return "f", lambda xs: f(p(xs), q(xs))
    return "f", lambda xs: f(*(p(xs) for p in parts))
