"""Plain tables for the terminal and Markdown (reports, Jupyter's ``_repr_markdown_``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["render", "si"]


def render(headers: Sequence[str], rows: Sequence[Sequence[object]], markdown: bool = False,
           left: Sequence[int] = (0,)) -> str:
    """Columns aligned for a terminal (numbers right, the ``left`` columns left), or a GitHub
    Markdown table.

    >>> print(render(["a", "bb"], [[1, 2], [10, 20]]))
    a   bb
    1    2
    10  20
    """
    cells = [[str(c) for c in row] for row in rows]
    if markdown:
        line = lambda r: "| " + " | ".join(c.replace("|", "\\\\|") for c in r) + " |"  # noqa: E731
        return "\n".join([line(headers), "|" + "---|" * len(headers), *map(line, cells)])
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def fmt(row: Sequence[str]) -> str:
        out = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(out).rstrip()

    return "\n".join([fmt([str(h) for h in headers]), *map(fmt, cells)])


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float | None, unit: str = "", digits: int = 4) -> str:
    """A number with an SI prefix: ``si(3.35e12, "B/s") == '3.35 TB/s'``; seconds in ms/µs.

    >>> si(3.35e12, "B/s"), si(0.0123, "s"), si(None)
    ('3.35 TB/s', '12.3 ms', '–')
    """
    if value is None:
        return "–"
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(value) >= scale or name == "ns":
                return f"{value / scale:.{digits - 1}g} {name}".replace("e+0", "e")
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits - 1}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits - 1}g} {unit}".rstrip()
