"""Markdown pieces of the derivation pages: escaping, display math, folds, tables, numbers.

Every helper is a pure function of its arguments, so the pages stay byte-for-byte reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Integer

from ..tables import si

__all__ = ["md", "math", "folded", "table", "tidy", "quantity"]

_SI_UNITS = {"FLOP": "FLOP", "bytes": "B", "FLOP/s": "FLOP/s", "bytes/s": "B/s", "s": "s"}
_ESCAPE = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|"})


def md(text: str) -> str:
    r"""Plain text made safe for Markdown (``*`` and ``_`` in formulas are not emphasis).

    >>> md("F = 2*T*d_in")
    'F = 2\\*T\\*d\\_in'
    """
    return text.translate(_ESCAPE)


def math(tex: str) -> list[str]:
    """A display block that GitHub renders: ``$$`` on its own lines, blank lines around."""
    return ["", "$$", tex, "$$", ""]


def folded(summary: str, body: list[str]) -> list[str]:
    """A ``<details>`` block: ``summary`` shown, ``body`` folded."""
    return ["", "<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A pipe table; the cells come escaped (:func:`md`)."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"
    return ["", line(headers), "|" + "---|" * len(headers), *map(line, rows), ""]


def tidy(lines: list[str]) -> str:
    """Join lines, never two blank lines in a row, one newline at the end."""
    out: list[str] = []
    for line in lines:
        if line == "" and (not out or out[-1] == ""):
            continue
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def quantity(value: float | Integer, unit: str) -> str:
    """A fixed-format number with its unit: SI prefixes for FLOP, bytes and seconds, exact
    integers with thousands separators, four significant digits otherwise.

    >>> quantity(Integer(240518168576), "FLOP")
    '240,518,168,576 FLOP (240.5 GFLOP)'
    >>> quantity(326.07, "tokens"), quantity(0.0358118, "s"), quantity(Integer(2), "bytes")
    ('326 tokens', '35.81 ms', '2 bytes')
    """
    suffix = "" if unit == "1" else f" {unit}"
    if value == float("inf"):  # a bandwidth or limit that constrains nothing
        return "∞"
    if isinstance(value, Integer):
        exact = f"{int(value):,}{suffix}"
        if unit in _SI_UNITS and abs(value) >= 10_000:
            return f"{exact} ({si(float(value), _SI_UNITS[unit], digits=5)})"
        return exact
    if unit in _SI_UNITS:
        return si(float(value), _SI_UNITS[unit], digits=5)
    if unit in ("tokens", "sequences", "1") and 100 <= abs(value) < 1e15:
        return f"{value:,.0f}{suffix}"
    return f"{value:.4g}{suffix}"
