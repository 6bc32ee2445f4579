"""The sections of a derivation page: a formula's symbols (at the worked example's values,
with those an entry takes instead), assumptions, source, the steps SymPy made, the worked
example and the SymPy form."""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Integer, nan, oo, sstr, zoo

from ..derive.entry import Entry
from ..symbols import CATALOGUE, latex
from .example import Example, _evaluate
from .markdown import folded, math, md, quantity, table

__all__ = ["formula_section", "symbol_table", "steps", "sympy_form"]

_LONG = 700  # a step's LaTeX longer than this (characters) folds into a <details> block


def _example_values(entry: Entry, example: Example) -> tuple[dict, dict]:
    """The worked example's values and notes for ``entry``: the documents' common ones, with
    those the entry takes instead (``Entry.example``: where its form holds)."""
    values, notes = dict(example.values), dict(example.notes)
    for symbol, value, why in entry.example:
        values[symbol], notes[symbol] = value, why
    return values, notes


def _example_head(entry: Entry, example: Example) -> str:
    """The worked example's heading: its setting, and any value the entry takes instead."""
    own = "".join(f"; here {s} = {v}" for s, v, _ in entry.example)
    return f"**Worked example** ({example.describe()}{own}; values in the symbol table):"


def symbol_table(entry: Entry, example: Example, names: Sequence[str] | None = None) -> list[str]:
    values, notes = _example_values(entry, example)
    rows = []
    for name in entry.symbols if names is None else names:
        info = CATALOGUE[name]
        value = values[info.symbol]
        shown = quantity(value if isinstance(value, Integer) else float(value), info.unit)
        if info.symbol in notes:
            shown += f" ({notes[info.symbol]})"
        rows.append([f"`{name}`", md(info.meaning), "–" if info.unit == "1" else md(info.unit),
                     ", ".join(info.assumptions), md(shown)])
    return ["", "**Symbols.**", *table(["symbol", "meaning", "unit", "assumptions",
                                         "example"], rows)]


def _common(entry: Entry, example: Example, assumptions: Sequence[str],
            names: Sequence[str] | None = None) -> list[str]:
    lines = symbol_table(entry, example, names)
    if assumptions:
        lines += ["", "**Assumptions.**", "", *(f"- {md(a)}" for a in assumptions)]
    lines += ["", f"**Source.** {md(entry.source)}."]
    return lines


def sympy_form(entry: Entry) -> list[str]:
    return folded("SymPy form (reads back with <code>sympy.parse_expr</code> and "
                   "<code>roofline.symbols.local_dict()</code>)",
                   ["```python", sstr(entry.expr), "```"])


def steps(entry: Entry, skip: Expr | None = None) -> list[str]:
    if not entry.steps:
        return []
    lines = ["", "**Derivation** (the steps as SymPy made them).", ""]
    for number, (label, expr) in enumerate(entry.steps, 1):
        head = f"Step {number} ({md(label)})"
        if skip is not None and expr == skip:
            lines += ["", f"{head}: the closed form above.", ""]
            continue
        tex = latex(expr)
        note = _degenerate(expr)
        if len(tex) > _LONG:
            lines += folded(f"{head} ({len(tex):,} characters of LaTeX)", math(tex))
        else:
            lines += ["", f"{head}:", *math(tex)]
        if note:
            lines += ["", note, ""]
    return lines


def _degenerate(expr: Expr) -> str:
    """A note when a limit leaves no finite positive value (the neglected term defines it)."""
    if expr.has(nan, zoo, oo) or (expr.is_number and not expr.is_positive):
        return ("*This limit has no finite positive value: the term neglected in it is what "
                "defines the crossover, so the exact form above is the one to use.*")
    return ""


def formula_section(entry: Entry, example: Example) -> list[str]:
    lines = math(latex(entry.expr))
    lines += _common(entry, example, entry.assumptions)
    lines += steps(entry)
    value = _evaluate(entry.expr, _example_values(entry, example)[0])
    lines += ["", f"{_example_head(entry, example)} **{md(quantity(value, entry.unit))}**."]
    return lines + sympy_form(entry)
