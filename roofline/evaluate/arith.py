"""Arithmetic on the project's own expressions, without SymPy and without ``eval``.

An expression is a *tree*: a number (``int``, ``float``), a symbol's name (``str``), or a list
``[operator, *operands]`` whose operator is ``+`` or ``*`` (two operands or more), ``-``, ``/``
or ``**`` (two), ``neg`` (one), or a function ``Max``, ``Min`` (one or more), ``sqrt``,
``ceiling``, ``floor``, ``Abs`` (one). The derived forms are shipped as trees
(``roofline/derived.jsonl``: JSON, read by C, not parsed per character); text in the syntax that
``roofline.symbols.arithmetic`` and ``sympy.sstr`` write is read into a tree by :func:`parse`
through a whitelist of that syntax. Anything else, in text or tree, is rejected where it is met,
so a tampered file can never run code.

:func:`value` evaluates a tree node by node; :mod:`.compiler` turns one into a function of its
free symbols, with the setting's numbers folded in.

>>> parse("2*T*d_in - Max(x, 1)")
['-', ['*', 2, 'T', 'd_in'], ['Max', 'x', 1]]
>>> value("2*T*d_in*d_out", {"T": 3, "d_in": 5, "d_out": 7})
210.0
>>> value(["+", ["Max", "x", 2], ["sqrt", 4]], {"x": 1})
4.0
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from functools import lru_cache
from keyword import iskeyword

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Tree", "parse", "value", "names", "check", "number", "NARY", "BINARY", "SCALAR"]

Tree = int | float | str | list  # a number, a name, or [operator, *operands]

NARY = {"+": operator.add, "*": operator.mul}  # two operands or more, left to right
BINARY = {"-": operator.sub, "/": operator.truediv, "**": operator.pow}
SCALAR = {"Max": max, "Min": min, "sqrt": math.sqrt, "ceiling": math.ceil, "floor": math.floor,
          "Abs": abs}
_VARIADIC = frozenset({"Max", "Min"})  # the functions of one argument or more; others take one
_MAX_TEXT = 1_000_000  # characters of one expression text


def parse(expr: str | Tree) -> Tree:
    """The tree of ``expr``: text is read (once: the trees of texts are cached), a tree is
    returned as it is (checked where it is evaluated or compiled). A bare name is the same in
    both (an ASCII one is not parsed: Python's reader would normalise no letter of it)."""
    if type(expr) is not str or (expr.isascii() and expr.isidentifier() and not iskeyword(expr)):
        return expr
    return _parse_text(expr)


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Tree:
    import ast  # only where text is read: the shipped forms are trees

    if len(text) > _MAX_TEXT:
        raise ValueError(f"expression text longer than {_MAX_TEXT:,} characters")
    binary = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}

    def tree(node: ast.expr) -> Tree:
        kind = type(node)
        if kind is ast.BinOp:
            op = binary.get(type(node.op))
            if op is None:
                raise ValueError(f"not an arithmetic operator: {type(node.op).__name__}")
            left, right = tree(node.left), tree(node.right)
            if op in NARY and type(left) is list and left[0] == op and len(left) > 2:
                return [*left, right]  # a + b + c: one sum, still added left to right
            return [op, left, right]
        if kind is ast.Name:
            return node.id
        if kind is ast.Constant:
            return number(node.value)
        if kind is ast.UnaryOp:
            if type(node.op) not in (ast.USub, ast.UAdd):
                raise ValueError(f"not an arithmetic operator: {type(node.op).__name__}")
            operand = tree(node.operand)
            if type(node.op) is ast.UAdd:
                return operand
            return -operand if type(operand) is not list and type(operand) is not str \
                else ["neg", operand]
        if kind is ast.Call:
            if not (type(node.func) is ast.Name and node.func.id in SCALAR) or node.keywords:
                raise ValueError(f"not an allowed function: {ast.unparse(node.func)}")
            return check([node.func.id, *map(tree, node.args)])
        raise ValueError(f"not an arithmetic expression: {kind.__name__} in {text!r}")

    try:
        body = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ValueError(f"not an arithmetic expression: {text[:80]!r}") from None
    return tree(body)


def number(v: Any) -> int | float:
    """``v`` where it is a number (``int``, ``float``; not ``bool``), else ValueError."""
    if type(v) is not int and type(v) is not float:  # bool, str, None...
        raise ValueError(f"not a number: {v!r}")
    return v


def check(node: list) -> list:
    """``node`` where its operator is known and takes that many operands, else ValueError."""
    op, n = node[0] if node else None, len(node) - 1
    if op in NARY:
        ok = n >= 2
    elif op in BINARY:
        ok = n == 2
    elif op == "neg":
        ok = n == 1
    elif op in SCALAR:
        ok = n >= 1 if op in _VARIADIC else n == 1
    else:
        raise ValueError(f"not an arithmetic operator: {op!r}")
    if not ok:
        raise ValueError(f"not an arithmetic expression: {op!r} with {n} operand(s)")
    return node


def _eval(node: Tree, env: Mapping[str, Any]) -> Any:
    if type(node) is not list:
        return env[node] if type(node) is str else number(node)
    op = check(node)[0]
    f = NARY.get(op)
    if f is not None:
        out = _eval(node[1], env)
        for operand in node[2:]:
            out = f(out, _eval(operand, env))
        return out
    f = BINARY.get(op)
    if f is not None:
        return f(_eval(node[1], env), _eval(node[2], env))
    if op == "neg":
        return -_eval(node[1], env)
    return SCALAR[op](*[_eval(a, env) for a in node[1:]])


def value(expr: str | Tree, env: Mapping[str, float], exact: bool = False) -> Any:
    """The value of ``expr`` with the names bound in ``env`` (``KeyError`` for a missing one):
    a float, or with ``exact`` the number as Python computes it (integers stay exact)."""
    out = _eval(parse(expr), env)
    return out if exact else float(out)


def names(expr: str | Tree) -> set[str]:
    """The symbol names ``expr`` uses (function names excluded).

    >>> sorted(names("Max(P_peak*T, beta_hbm)"))
    ['P_peak', 'T', 'beta_hbm']
    """
    found: set[str] = set()
    _collect(parse(expr), found)
    return found


def _collect(node: Tree, found: set[str]) -> None:
    if type(node) is list:
        for operand in check(node)[1:]:
            _collect(operand, found)
    elif type(node) is str:
        found.add(node)
    else:
        number(node)
