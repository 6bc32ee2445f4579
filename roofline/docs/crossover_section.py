"""A crossover's section of ``crossovers.md``: the closed form of the branch that holds at the
worked example, where it holds, and the numbers that give its value there."""

from __future__ import annotations

from math import inf
from collections.abc import Sequence

from sympy import Eq, Expr, Symbol, factor_terms, oo, sstr

from ..derive.branches import Branch, Crossover, quadratic_root
from ..derive.entry import Entry
from ..evaluate import CrossoverValue, Setting, crossover_value, scalar
from ..symbols import CATALOGUE, B, T, latex
from .example import EXAMPLE, Example
from .markdown import folded, math, md, quantity, table
from .sections import steps, symbol_table

__all__ = ["crossover_section"]

_SHORT = 300  # a closed form up to this long (characters of LaTeX) is shown unfolded
_A = (Symbol("a_2"), Symbol("a_1"), Symbol("a_0"))


def crossover_section(entry: Entry, c: Crossover, example: Example) -> list[str]:
    """A crossover's section: the closed form of the branch that holds at the worked example,
    the conditions under which it holds, and its symbols at the example's numbers (which give
    the value printed); where there is no crossover at the example, no formula is given a
    value, and the catalogue's main branch is shown as such."""
    v, describe = _crossover_value(c, example)
    x, main = c.unknown, c.main_branch
    holds = v.exists and bool(v.expr)
    branch = c.branch(tuple(int(i) for i in v.branch.split(",")) if v.branch else ()) \
        if holds else main
    if holds:
        which = ("the main one (the regime of long prompts on a real device)"
                 if branch == main else "not the catalogue's main one (below)")
        lines = ["", f"At the worked example ({describe}) the branch of the defining equality "
                 f"whose choices hold is {which}. On it the crossover {x}\\* is the first "
                 f"positive root of {_polynomial(branch, x)} = 0, as SymPy solved it:",
                 *_root_lines(branch, x)]
        lines += _written_out(entry.name, branch.root)
        lines += _conditions(branch, x)
        names = sorted({s.name for a in branch.coefficients for s in a.free_symbols}
                       | set(v.symbols))
    else:
        lines = ["", f"At the worked example ({describe}) there is no crossover: "
                 f"{md(v.reason)}. No closed form is given a value there. The catalogue's "
                 f"closed form (`roofline derive {entry.name}`) is that of the main branch, the "
                 "regime of long prompts on a real device, where its choices hold:",
                 *_root_lines(main, x)]
        lines += _written_out(entry.name, entry.expr)
        names = entry.symbols
    lines += _crossover_symbols(names, v, example) if holds else symbol_table(entry, example)
    if c.regime:
        lines += ["", "**Assumptions** (of the main branch).", "",
                  *(f"- {md(a)}" for a in c.regime)]
    lines += ["", f"**Source.** {md(entry.source)}."]
    if branch.choices:
        lines += ["", f"**Branches.** {c.branch_count:,} in all; the value of a setting is the "
                  "first sign change of the defining equality itself, and its closed form that "
                  "of the branch whose choices hold there (`roofline crossover --json` prints "
                  "it, with its conditions and the value of every symbol in it)."]
        lines += folded("The choices of the branch above", _choices(branch))
        if holds and branch != main:
            lines += folded(f"The catalogue's main branch (<code>roofline derive "
                            f"{entry.name}</code>): its choices and closed form",
                            [*_choices(main), *_root_lines(main, x)])
    lines += steps(entry, skip=entry.expr)
    lines += _crossover_example(c, v, branch if holds else None)
    form = sstr(branch.root) if holds else sstr(entry.expr)
    return lines + folded("SymPy form (reads back with <code>sympy.parse_expr</code> and "
                          "<code>roofline.symbols.local_dict()</code>)",
                          ["```python", form, "```"])


def _crossover_value(c: Crossover, example: Example) -> tuple[CrossoverValue, str]:
    """The crossover at the worked example (a crossover of another family at that family's
    example model, :meth:`ExampleSpec.family_model`), and the example's setting in words (with the T a batch crossover is taken at)."""
    s = example.setting
    if c.name in example.crossovers:
        v = example.crossovers[c.name]
    else:  # a crossover of another family: its example model
        from ..specs.model import load_model

        s = Setting(s.hardware, load_model(EXAMPLE.family_model(c.name)), s.dtype,
                    batch=s.batch)
        v = crossover_value(s, c.name)
    prompt = f"T = {EXAMPLE.prompt}"
    if c.unknown is not T:  # a batch (or degree) crossover: at the model's context length
        prompt = f"T = {s.model.max_position:,}, {s.model.name}'s context"
    unknown = "" if c.unknown is B else f", B = {s.batch}"
    return v, f"{s.hardware.name} and {s.model.name} in {s.dtype}{unknown}, {prompt}"


def _polynomial(branch: Branch, x: Symbol) -> str:
    return f"a₁{x} + a₀" if branch.coefficients[0] == 0 else f"a₂{x}² + a₁{x} + a₀"


def _root_lines(branch: Branch, x: Symbol) -> list[str]:
    """The root formula in the coefficients a₂, a₁, a₀, and each coefficient."""
    coeffs = [factor_terms(a) for a in branch.coefficients]
    star = Symbol(f"{x}^*")
    if coeffs[0] == 0:
        formula, named = quadratic_root(_A[1] * x + _A[2], x), list(zip(_A[1:], coeffs[1:]))
    else:
        formula = quadratic_root(_A[0] * x**2 + _A[1] * x + _A[2], x)
        named = list(zip(_A, coeffs))
    lines = [*math(latex(Eq(star, formula))), "with", ""]
    for symbol, coeff in named:
        lines += math(latex(Eq(symbol, coeff)))
    return lines


def _written_out(name: str, expr: Expr) -> list[str]:
    full = latex(expr)
    if len(full) <= _SHORT:
        return ["", "Written out:", *math(full)]
    return folded(f"The closed form written out (<code>{name}</code>, {len(full):,} characters "
                  "of LaTeX)", math(full))


def _conditions(branch: Branch, x: Symbol) -> list[str]:
    if not branch.conditions:
        return []
    body = [f"at {x} = {x}\\*, each of"]
    for q in branch.conditions:
        body += math(latex(q))
    return folded(f"Where this branch holds ({len(branch.conditions)} conditions)", body)


def _choices(branch: Branch) -> list[str]:
    body = ["Each max/min of the defining equality replaced by one argument:"]
    for atom, arg in branch.choices:
        body += math(f"{latex(atom)} \\;\\longrightarrow\\; {latex(arg)}")
    return body


def _crossover_symbols(names: Sequence[str], v: CrossoverValue, example: Example) -> list[str]:
    """The symbol table of a crossover's branch: the numbers its value was computed at."""
    rows = []
    for name in names:
        info = CATALOGUE[name]
        value = v.symbols[name] if name in v.symbols else v.numbers[name]
        shown = ("∞ (not given: constrains nothing)" if value in ("oo", inf)
                 else quantity(value, info.unit))
        if name == v.unknown:
            shown += " (the crossover)"
        rows.append([f"`{name}`", md(info.meaning), "–" if info.unit == "1" else md(info.unit),
                     ", ".join(info.assumptions), md(shown)])
    return ["", "**Symbols.**", *table(["symbol", "meaning", "unit", "assumptions",
                                         "example"], rows)]


def _crossover_example(c: Crossover, v: CrossoverValue, branch: Branch | None) -> list[str]:
    head = "**Worked example** (the numbers in the symbol table):"
    if not v.exists:
        return ["", f"{head} {md(v.reason)}."]
    text = f"{head} **{c.unknown}\\* = {md(quantity(v.value, v.unit))}**"
    if v.ends_at is not None:
        text += f"; {md(v.reason)} (the equality holds again there, and the regime ends)"
    if branch is not None:
        at = {CATALOGUE[n].symbol: (oo if x == inf else x) for n, x in v.numbers.items()
              if n != v.unknown}
        shown = [f"{n} = {scalar(a, at):.6g}"
                 for n, a in zip(("a₂", "a₁", "a₀"), branch.coefficients) if a != 0]
        text += f" ({', '.join(shown)})"
    return ["", text + "."]
