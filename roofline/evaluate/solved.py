"""The closed forms of the crossovers' branches, solved by SymPy when first asked for and kept.

A crossover (:func:`.forms.crossover_forms`) is kept as its defining equality and the Max/Min
atoms of it; at a root every atom takes one argument, and that choice (:func:`choice_key`)
names the branch whose closed form is reported. No branch is enumerated (their number doubles
with every atom): a branch's closed form is solved the first time a setting needs it
(:func:`branch_root`) and appended to the architecture's ``roots`` module in the user's cache
(:mod:`roofline.codegen.cache`), its value a generated function like every other form, its text
(``sympy.sstr``) and LaTeX beside it; later calls read it from there without SymPy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from .. import codegen
from ..derive.architecture import Architecture
from ..forked import map_halves

__all__ = ["roots", "branch_root", "solve_branches", "choice_key"]


def choice_key(choice: Sequence[int]) -> str:
    """The text key of a branch: the index of the argument each atom takes, comma-separated."""
    return ",".join(map(str, choice))


def _name(arch: Architecture, caches: tuple[str, ...]) -> str:
    """The cache's name of the closed forms of ``arch`` behind ``caches`` (as
    :func:`.forms.module_name` names its other parts)."""
    return codegen.module_name("roots", arch, list(caches))


@cache
def roots(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Crossover name → branch key → its closed form (``root`` as ``sstr``, ``latex``, and
    ``value``, a generated function; "" and None where the branch has no closed form of degree
    ≤ 2), the ``conditions`` under which the branch holds (SymPy text of inequalities in
    the unknown) and the ``names`` of the symbols in both, for the branches solved so far.
    Updated in place as branches are solved."""
    return codegen.load(_name(arch, caches), _empty).DATA


def _empty() -> str:
    return codegen.module_source("Closed forms of crossover branches, added as solved.", {})


def branch_root(arch: Architecture, caches: tuple[str, ...], name: str,
                key: str) -> dict[str, Any]:
    """The closed form of one branch of a crossover of ``arch`` behind ``caches``, solved by
    SymPy and kept the first time it is asked for."""
    solve_branches(arch, caches, [(name, key)])
    return roots(arch, caches)[name][key]


def solve_branches(arch: Architecture, caches: tuple[str, ...],
                   branches: Iterable[tuple[str, str]]) -> None:
    """Solve and keep the closed forms of several branches (crossover name, branch key) at
    once: SymPy takes a second or more for the thirty of a crossover table of a new
    architecture, so on Linux with several cores a forked process
    (:func:`roofline.forked.map_halves`) solves half of them meanwhile."""
    known = roots(arch, caches)
    todo = [(name, key) for name, key in dict.fromkeys(branches)
            if key not in known.get(name, {})]
    if not todo:
        return
    from ..derive.crossovers import crossovers

    crossovers(arch, caches)  # derived once, here: a forked process inherits them
    solved = map_halves(lambda branch: _solve(arch, caches, *branch), todo, least=8)
    additions = []
    for (name, key), closed in zip(todo, solved):
        known.setdefault(name, {})[key] = closed
        tag = hashlib.blake2b(f"{name}/{key}".encode(), digest_size=4).hexdigest()
        additions.append(codegen.addition_source(f"r{tag}_", [name, key], closed))
    module = codegen.load(_name(arch, caches), _empty, extend="\n\n\n".join(additions))
    for name, branches_of in module.DATA.items():  # functions, in place of the expressions
        known.setdefault(name, {}).update(branches_of)


def _solve(arch: Architecture, caches: tuple[str, ...], name: str, key: str) -> dict[str, Any]:
    from sympy import PolynomialError, sstr

    from ..derive.crossovers import crossovers
    from ..symbols import latex

    c = crossovers(arch, caches)[name]
    branch = c.branch(tuple(int(i) for i in key.split(",")) if key else ())
    conditions = [{"expr": sstr(q)} for q in branch.conditions]
    names = {s.name for q in branch.conditions for s in q.free_symbols} - {c.unknown.name}
    try:
        root = branch.root
    except (PolynomialError, ValueError):  # not of degree ≤ 2 on this branch: the value stands
        return {"root": "", "latex": "", "value": None, "conditions": conditions,
                "names": sorted(names)}  # alone, found numerically
    value = root if _printable(root) else None
    names |= {s.name for s in root.free_symbols}
    return {"root": sstr(root), "latex": latex(root), "value": value, "conditions": conditions,
            "names": sorted(names)}


def _printable(expr: Any) -> bool:
    """Whether ``expr`` is arithmetic that generated code can evaluate (not a NaN, a complex
    unit or an unevaluated function of a degenerate branch)."""
    from sympy import Abs, I, Max, Min, Piecewise, ceiling, floor, nan, preorder_traversal, zoo

    allowed = (Max, Min, ceiling, floor, Abs, Piecewise)
    return not expr.has(nan, zoo, I) and all(
        e.func in allowed for e in preorder_traversal(expr) if e.is_Function)
