"""Crossovers in numbers, without SymPy: the first sign change of a crossover's defining
equality ``grows − other`` for a setting, found numerically (:mod:`.roots`), and the closed form
of the branch that holds there.

The equality is a pair of generated functions (:mod:`.forms`) with the setting's numbers bound
(:func:`.compiled.bind`). Where the closed form of the root's branch has been solved, the value
reported is the closed form's own (the solved closed forms' values, where their own branch
holds, are the root finder's guesses). A root where the two sides touch without crossing (a tie
inside a Min, a double root) is no crossover. The first sign change from below opens the
regime; the next one, if any, closes it.

At the root, every Max/Min atom of the equality takes one argument: that choice names the branch
whose closed form is reported (shipped, or solved by SymPy the first time a setting needs it).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from ..codegen import call, names
from ..errors import InputError
from .absent import beyond, ends_note, never
from .compiled import bind
from .estimate import kernel_count
from .roots import sign_changes
from .setting import Setting
from .solved import branch_root, choice_key, solve_branches

__all__ = ["CrossoverValue", "crossover_values", "crossover_value", "crossover_at",
           "solve_closed_forms"]

_NO_FORM = {"root": "", "latex": "", "conditions": [], "names": []}

_TIE = 1e-9  # relative distance under which two arguments of a Max/Min are equal
# A parallel crossover's group, by its name's prefix, and what it would hide.
_GROUP = {"tp": "tp", "cp": "cp", "ep": "ep"}
_COLLECTIVE = {"tp": "all-reduce", "cp": "K/V pass", "ep": "all-to-all"}


@dataclass(frozen=True)
class CrossoverValue:
    """A crossover evaluated for one setting: its value, or why it does not exist; the closed
    form of the branch that holds there (``expr``, ``latex``), where it holds (``conditions``)
    and the numbers in both (``symbols``) are solved by SymPy the first time they are read, and
    kept: a caller who needs only the value pays no SymPy."""

    name: str
    meaning: str
    value: float | None
    unit: str
    exists: bool
    reason: str
    ends_at: float | None = None  # where the regime ends again (a second root), if it does
    # False when the device lacks a number the crossover needs, or the setting the devices it
    # is about (a collective to hide on one device): neither "never" nor a value
    evaluated: bool = True
    simplified: float | None = None  # the wide-layer form (activation traffic neglected)
    simplified_expr: str | None = None
    branch: str = ""  # the branch reported: each Max/Min atom's argument index (solved.choice_key)
    closed_form: Callable[[], dict[str, Any]] = field(default=lambda: _NO_FORM, repr=False,
                                                      compare=False)
    unknown: str = "T"
    numbers: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def fits_on_one(self) -> bool:
        """A tensor-parallel degree below one at which a device's share would just fill its
        memory (``tp_fits_memory_degree``): the weights and KV cache fit on one device."""
        return self.name == "tp_fits_memory_degree" and self.exists and self.value < 1

    @property
    def expr(self) -> str:
        """The closed form of the branch that holds here (``sympy.sstr``); "" where the branch
        has none of degree ≤ 2, and where there is no value (a crossover that never happens
        prints no formula that gives a number)."""
        return self.closed_form()["root"]

    @property
    def latex(self) -> str:
        return self.closed_form()["latex"]

    @property
    def conditions(self) -> list[dict[str, str]]:
        """Where the branch of :attr:`expr` holds: inequalities (``expr``, SymPy text) in the
        unknown, true at the value and the setting's numbers (:attr:`symbols`)."""
        return self.closed_form()["conditions"]

    @property
    def symbols(self) -> dict[str, Any]:
        """The value of every symbol in :attr:`expr` and :attr:`conditions` at this setting (the
        unknown's is the value): the closed form with these gives :attr:`value`. A memory level
        whose bandwidth the device file does not give constrains nothing: its bandwidth is
        infinite, written "oo" (SymPy's ∞, which JSON has no number for)."""
        names = self.closed_form()["names"]
        out = {n: "oo" if self.numbers[n] == math.inf else self.numbers[n]
               for n in names if n in self.numbers}
        if self.conditions and self.value is not None:
            out[self.unknown] = self.value
        return out


def crossover_values(setting: Setting) -> dict[str, CrossoverValue]:
    """Every crossover of the catalogue for this setting (architecture of its model)."""
    return {name: crossover_value(setting, name) for name in setting.crossover_forms}


def solve_closed_forms(setting: Setting,
                       values: Mapping[str, CrossoverValue]) -> dict[str, CrossoverValue]:
    """Solve now, together (:func:`.solved.solve_branches`), the closed forms of ``values``
    not solved before: a caller about to read them all (a table's JSON). A value that does not
    exist has none. The values again, those just solved evaluated anew, so that each is its
    closed form's own (a root found before differs in the last digits): a first call prints
    what a later one does."""
    forms = setting.crossover_forms
    fresh = [v for v in values.values() if v.exists and v.branch not in forms[v.name]["roots"]]
    solve_branches(setting.architecture, setting.caches, [(v.name, v.branch) for v in fresh])
    return {**values, **{v.name: crossover_value(setting, v.name) for v in fresh}}


def crossover_value(setting: Setting, name: str,
                    form: dict[str, Any] | None = None) -> CrossoverValue:
    """One crossover of the catalogue (``name`` without ``crossover.``) for this setting (from
    ``form``, its data, where given: the forms being written)."""
    c = setting.crossover_forms[name] if form is None else form
    mode = name.rpartition(".")[2] if c["kind"] == "overhead" else None  # its kernels' mode
    vals, folding = _numbers(setting, _GROUP.get(name.partition("_")[0], "tp"), c["unknown"],
                             mode)
    return _evaluate(name, c, vals, folding, setting)


def crossover_at(setting: Setting, name: str, numbers: Mapping[str, Any]) -> CrossoverValue:
    """One crossover of the catalogue for this setting with ``numbers`` of symbols the setting
    does not give (a serving step's decodes and objective), by symbol name."""
    c = setting.crossover_forms[name]
    vals = {**_numbers(setting, "tp", c["unknown"])[0], **numbers}
    return _evaluate(name, c, vals, _Bound(vals, c["unknown"]), setting)


class _Bound:
    """The generated functions of a setting's crossovers as functions of the unknown ``x``
    alone, every other symbol from ``numbers``; each bound once."""

    def __init__(self, numbers: dict[str, Any], x: str):
        self.numbers, self.x = numbers, x
        self._bound: dict[int, tuple[Any, Callable[[float], Any]]] = {}

    def one(self, form: Any) -> Callable[[float], Any]:
        if id(form) not in self._bound:
            self._bound[id(form)] = (form, bind(form, self.numbers, (self.x,)))
        return self._bound[id(form)][1]

    def at(self, form: Any, x: float) -> Any:
        return self.one(form)(x)

    def value(self, form: Any) -> Any:
        """A form without the unknown in it (a closed form) at the numbers."""
        return call(form, self.numbers)


@lru_cache(maxsize=32)
def _numbers(setting: Setting, group: str, x: str,
             mode: str | None = None) -> tuple[dict[str, Any], _Bound]:
    """The numbers of the crossovers of ``setting`` in the unknown ``x`` whose collectives run
    on ``group``'s link, and their functions of ``x`` alone; for an overhead crossover of the
    attention ``mode``, n_kern: the kernels a prefill of the setting launches in that mode (as
    ``prefill``'s estimate counts them). Read only."""
    vals = setting.numbers(batch=x != "B")
    vals.update(setting.link_numbers(group))  # its link
    vals.pop(x, None)  # a degree (N_tp) as the unknown: not the setting's value
    if x != "T":  # a batch crossover that depends on T: at the model's context limit
        vals["T"] = setting.model.max_position
    if mode is not None and "t_launch" in vals:  # an overhead crossover, evaluated
        try:
            vals["n_kern"] = kernel_count(replace(setting, attention=mode))
        except InputError:  # a mode the device cannot run (tiled without SRAM): said below
            pass
    return vals, _Bound(vals, x)


def _evaluate(name: str, c: dict[str, Any], vals: dict[str, Any], folding: _Bound,
              setting: Setting) -> CrossoverValue:
    def closed(key: str) -> Callable[[], dict[str, Any]]:
        shipped = c["roots"].get(key)
        if shipped is not None:
            return lambda: shipped
        return lambda: branch_root(setting.architecture, setting.caches, name, key)

    value = partial(CrossoverValue, name, c["meaning"], unit=c["unit"], unknown=c["unknown"],
                    numbers=vals)

    def absent(reason: str, evaluated: bool = True) -> CrossoverValue:
        return value(value=None, exists=False, reason=reason, evaluated=evaluated,
                     branch=c["main"])

    if "tau_tpot" not in vals and c["kind"] == "deadline":  # a serving step's numbers
        return absent("not evaluated: a serving objective; `roofline hybrid` gives the TPOT "
                      "objective, the decodes and their context", evaluated=False)
    # the tiled schedules' SRAM size M_sram, the interconnect's bandwidth beta_link: where the
    # device gives none, a crossover that uses it is not evaluated
    if "t_launch" not in vals and c["kind"] == "overhead":
        return absent(f"not evaluated: {setting.hardware.name} gives no [estimate] (the launch "
                      "and host overhead)", evaluated=False)
    lacking = {"M_sram", "beta_link"} - vals.keys()
    used = _names(c) if lacking else set()  # the equality's names, read once, where needed
    if "M_sram" in lacking & used:
        return absent(f"not evaluated: {setting.hardware.name} gives no on-chip SRAM per SM "
                      "(the tiled attention's M)", evaluated=False)
    if "beta_link" in lacking & used:
        return absent(f"not evaluated: {setting.hardware.name} gives no interconnect "
                      "([interconnect] bandwidth)", evaluated=False)
    group = _GROUP.get(name.partition("_")[0])
    if c["kind"] == "hidden" and group and vals.get(f"N_{group}") == 1:
        return absent(f"one device: no {_COLLECTIVE[group]} to hide (give {group} > 1)",
                      evaluated=False)
    branches: dict[float, str] = {}  # a guess's value → its branch, which holds there
    crossings = sign_changes(*_difference(c, folding), guesses=_guesses(c, folding, branches))
    if c["kind"] in ("overhead", "deadline"):  # whole tokens: a root below one is no crossing
        crossings = [x for x in crossings if x >= 1]
    if not crossings:
        return absent(never(c, vals, folding, setting))
    first = crossings[0]
    ends = crossings[1] if len(crossings) > 1 else None
    note = "; ".join(filter(None, [ends_note(c, ends) if ends is not None else "",
                                   beyond(c, first, setting)]))
    key = branches[first] if first in branches else _choice(c, folding, first)
    shipped = c["roots"].get(key)
    exact = _real(shipped["value"], folding) if shipped else None
    if exact is not None and abs(exact - first) <= 1e-9 * first:
        first = exact  # the closed form's own value, where it is this root (further apart, the
        # closed form's double-precision value has lost digits to cancellation, as the small
        # root of a quadratic does: the root narrowed on the equality is the exact one)
    approx = c["simplified"] if key == c["main"] else None
    return value(value=first, exists=True, reason=note, ends_at=ends,
                 simplified=_real(approx["value"], folding) if approx else None,
                 simplified_expr=approx["expr"] if approx else None, branch=key,
                 closed_form=closed(key))


def _guesses(c: dict[str, Any], folding: _Bound,
             branches: dict[float, str]) -> Iterator[float]:
    """The values of the solved closed forms whose own branch holds there (noted in
    ``branches``), the main branch's first; each computed only when the root finder reads it
    (where the one before is not the root). A closed form taken as the root is then the one
    reported, as a root found by bisection is replaced by the closed form of the branch that
    holds at it."""
    roots = c["roots"]
    for key in dict.fromkeys([c["main"], *roots]):
        if key in roots:
            value = _real(roots[key]["value"], folding)
            if value is not None and _choice(c, folding, value) == key:
                branches[value] = key
                yield value


def _names(c: dict[str, Any]) -> set[str]:
    """The symbol names of a crossover's equality."""
    return set(_names_of(c["grows"])) | set(_names_of(c["other"]))


def _names_of(form: Any) -> tuple[str, ...]:
    return names(form) if callable(form) else ()


def _difference(c: dict[str, Any], folding: _Bound) -> tuple[
        Callable[[float], float], Callable[[Sequence[float]], list[float]]]:
    """grows − other at one point (NaN where it cannot be evaluated there: a division by zero,
    an overflow, a complex value) and at many."""
    grows, other = folding.one(c["grows"]), folding.one(c["other"])

    def one(x: float) -> float:
        try:
            return float(grows(x)) - float(other(x))
        except (OverflowError, ZeroDivisionError, ValueError, TypeError):
            return math.nan

    def many(points: Sequence[float]) -> list[float]:
        """At every point at once, as numpy arrays, where numpy is loaded already (many
        settings: the documents' table, a figure); else point by point (its import would cost
        one crossover table more than it saves). What is not a finite real there is NaN, as
        ``one`` makes it; the roots are narrowed by ``one``."""
        if "numpy" not in sys.modules:
            return list(map(one, points))
        import numpy as np

        xs = np.asarray(points, dtype=float)
        with np.errstate(all="ignore"):
            try:
                v = np.asarray(grows(xs), dtype=float) - np.asarray(other(xs), dtype=float)
            except (OverflowError, ZeroDivisionError, ValueError, TypeError):
                return list(map(one, points))
        return np.where(np.isfinite(v), v, np.nan).tolist() if v.shape == xs.shape \
            else list(map(one, points))
    return one, many


def _choice(c: dict[str, Any], folding: _Bound, at: float) -> str:
    """The branch that holds where the unknown is ``at``: each atom's argument that equals its
    value (the main branch's where two are equal there)."""
    main = [int(i) for i in c["main"].split(",")] if c["main"] else []
    choice = []
    for atom, preferred in zip(c["atoms"], main):
        values = [float(folding.at(arg, at)) for arg in atom["args"]]
        best = max(values) if atom["kind"] == "Max" else min(values)
        tied = [i for i, v in enumerate(values) if v == best or math.isfinite(v - best)
                and abs(v - best) <= _TIE * max(abs(v), abs(best), 1e-300)]  # ∞ ties only ∞
        choice.append(preferred if preferred in tied else tied[0])
    return choice_key(choice)


def _real(form: Any, folding: _Bound) -> float | None:
    """A closed form's value (it has no unknown in it), where it has a real positive one (None:
    no form, no value)."""
    if form is None:
        return None
    try:
        v = float(folding.value(form))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):  # no real value (a
        return None  # complex one, from a fractional power of a negative number: TypeError)
    return v if v > 0 and math.isfinite(v) else None
