"""Every crossover of an architecture as data: what :mod:`roofline.evaluate.crossover` evaluates
without SymPy (expression trees, :func:`roofline.evaluate.forms.tree`, evaluated by
:mod:`roofline.evaluate.arith`; the closed forms, which users read, as ``sympy.sstr`` text).

A crossover is kept as its defining equality (``grows``, ``other``), the Max/Min atoms of it with
their arguments (so that the branch holding at a root can be named), and the closed forms of the
branches solved so far, keyed by :func:`choice_key`: in the shipped file the main branch and
every branch that holds at the root of a shipped device and model; derived now, none. Any other
branch is solved by SymPy when a setting first asks for its closed form (:func:`branch_root`). No branch is enumerated:
their number doubles with every atom.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..derive.architecture import Architecture
from ..forked import map_halves
from .forms import Derived

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

    from ..derive.branches import Crossover

__all__ = ["solve_crossovers", "branch_root", "solve_branches", "choice_key"]


def choice_key(choice: Sequence[int]) -> str:
    """The text key of a branch: the index of the argument each atom takes, comma-separated."""
    return ",".join(map(str, choice))


# (architecture, cache levels, crossover name, branch key) → the branch's closed form
_ROOTS: dict[tuple[Architecture, tuple[str, ...], str, str], dict[str, Any]] = {}


def branch_root(arch: Architecture, caches: tuple[str, ...], name: str,
                key: str) -> dict[str, Any]:
    """The closed form of one branch of a crossover of ``arch`` behind ``caches`` (``root`` as
    ``sstr`` and ``latex``, for users; ``tree``, for its value), solved by SymPy the first
    time it is asked for."""
    where = (arch, caches, name, key)
    if where not in _ROOTS:
        _ROOTS[where] = _solve(where)
    return _ROOTS[where]


def solve_branches(arch: Architecture, caches: tuple[str, ...],
                   branches: Iterable[tuple[str, str]]) -> None:
    """Solve the closed forms of several branches (crossover name, branch key) at once, for
    :func:`branch_root` to return: SymPy takes a second or more for the thirty of a crossover
    table of an architecture that is not shipped, so on Linux with several cores a forked
    process (:func:`roofline.forked.map_halves`, which inherits the crossovers derived here)
    solves half of them meanwhile."""
    todo = [(arch, caches, name, key) for name, key in dict.fromkeys(branches)
            if (arch, caches, name, key) not in _ROOTS]
    if todo:  # the crossovers derived once, here: a forked process inherits them
        from ..derive.crossovers import crossovers

        crossovers(arch, caches)
    _ROOTS.update(zip(todo, map_halves(_solve, todo, least=8)))


def _value_tree(expr: Any) -> Any:
    """A closed form's tree (:func:`.forms.tree`), for its value; None where it has no
    arithmetic (a NaN of a degenerate branch)."""
    from .forms import tree

    try:
        return tree(expr)
    except ValueError:
        return None


def _solve(where: tuple[Architecture, tuple[str, ...], str, str]) -> dict[str, Any]:
    from sympy import PolynomialError, sstr

    from ..derive.crossovers import crossovers
    from ..symbols import latex

    arch, caches, name, key = where
    c = crossovers(arch, caches)[name]
    try:
        root = c.branch(tuple(int(i) for i in key.split(",")) if key else ()).root
    except (PolynomialError, ValueError):  # not of degree ≤ 2 on this branch: the value stands
        return {"root": "", "latex": "", "tree": None}  # alone, found numerically
    return {"root": sstr(root), "latex": latex(root), "tree": _value_tree(root)}


def solve_crossovers(arch: Architecture,
                     caches: tuple[str, ...] = ()) -> dict[str, Mapping[str, Any]]:
    """Every crossover of ``arch`` behind ``caches``, as data; each part made on first use
    (``Derived``)."""
    from sympy import sstr

    from ..derive.crossovers import crossovers
    from ..symbols import latex
    from .forms import tree

    def simplified(c: Crossover) -> dict[str, Any] | None:
        approx = c.simplified()
        return None if approx is None else {"expr": sstr(approx), "latex": latex(approx),
                                            "tree": _value_tree(approx)}

    def atoms(c: Crossover) -> list[dict[str, Any]]:
        return [{"kind": type(a).__name__, "args": [tree(arg) for arg in a.args]}
                for a in c.atoms]


    return {name: Derived({
        "meaning": lambda c=c: c.meaning, "unit": lambda c=c: c.unit,
        "unknown": lambda c=c: c.unknown.name, "kind": lambda c=c: c.kind,
        "grows": lambda c=c: tree(c.grows), "other": lambda c=c: tree(c.other),
        "atoms": lambda c=c: atoms(c), "main": lambda c=c: choice_key(c.main_choice),
        "roots": lambda: {},  # solved on first use (:func:`branch_root`), or shipped
        "simplified": lambda c=c: simplified(c),
    }) for name, c in crossovers(arch, caches).items()}
