"""Arithmetic on the project's own expression strings, without SymPy and without ``eval``.

The crossovers are shipped pre-solved as ``sympy.sstr`` text (``roofline/crossovers.json``); this
module evaluates such text for numbers through a whitelist of the syntax ``sstr`` writes:
numbers, catalogue symbol names, ``+ - * / **``, and ``Max``, ``Min``, ``sqrt``, ``ceiling``,
``Abs``. Anything else is rejected, so a tampered file can never run code.

>>> value("2*T*d_in*d_out", {"T": 3, "d_in": 5, "d_out": 7})
210.0
>>> value("Max(x, 2) + sqrt(4)", {"x": 1})
4.0
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["value", "names"]

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_CALLS = {"Max": max, "Min": min, "sqrt": math.sqrt, "ceiling": math.ceil, "Abs": abs}


@lru_cache(maxsize=4096)
def _parse(text: str) -> ast.expr:
    tree = ast.parse(text, mode="eval").body
    for node in ast.walk(tree):
        allowed = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Call,
                   *_BINARY, *_UNARY)
        if not isinstance(node, allowed):
            raise ValueError(f"not an arithmetic expression: {type(node).__name__} in {text!r}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _CALLS and not node.keywords):
            raise ValueError(f"not an allowed function in {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
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
    return _CALLS[node.func.id](*(_eval(a, env) for a in node.args))


def value(text: str, env: Mapping[str, float]) -> float:
    """The value of ``text`` with the names bound in ``env`` (``KeyError`` for a missing one)."""
    return float(_eval(_parse(text), env))


def names(text: str) -> set[str]:
    """The symbol names ``text`` uses (function names excluded).

    >>> sorted(names("Max(P_peak*T, beta_hbm)"))
    ['P_peak', 'T', 'beta_hbm']
    """
    tree = _parse(text)
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls}
