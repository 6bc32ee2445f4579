"""The one table printer and the one number formatter: plain tables for the terminal and
Markdown (reports, Jupyter's ``_repr_markdown_``), numbers with SI or binary prefixes."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["render", "si", "binary_size", "grouped", "count", "absent", "level_name"]


def render(headers: Sequence[str] | None, rows: Sequence[Sequence[object]],
           markdown: bool = False, left: Sequence[int] | None = (0,), rule: bool = False) -> str:
    """Columns aligned for a terminal (numbers right, the ``left`` columns left; ``None``: all
    left), or a GitHub Markdown table. ``headers=None`` prints the rows alone; ``rule`` draws a
    dashed line under the headers.

    >>> print(render(["a", "bb"], [[1, 2], [10, 20]]))
    a   bb
    1    2
    10  20
    >>> print(render(["name", "x"], [["H100", "1"]], left=None, rule=True))
    name  x
    ----  -
    H100  1
    """
    cells = [[str(c) for c in row] for row in rows]
    if markdown:
        line = lambda r: "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"  # noqa: E731
        return "\n".join([line(headers or [""] * len(cells[0])), "|" + "---|" * len(cells[0]),
                          *map(line, cells)])
    table = ([[str(h) for h in headers]] if headers is not None else []) + cells
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]

    def fmt(row: Sequence[str]) -> str:
        out = [c.ljust(w) if left is None or i in left else c.rjust(w)
               for i, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(out).rstrip()

    lines = [fmt(r) for r in table]
    if headers is not None and rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BINARY = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


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


def binary_size(nbytes: float) -> str:
    """A size in bytes with the largest binary prefix that leaves at least 1.

    >>> binary_size(233_472), binary_size(128 * 2**20), binary_size(58_368), binary_size(512)
    ('228 KiB', '128 MiB', '57 KiB', '512 B')
    """
    for factor, prefix in _BINARY:
        if nbytes >= factor:
            v = nbytes / factor
            text = f"{round(v):,}" if abs(v - round(v)) < 5e-3 * v else f"{v:.3g}"
            return f"{text} {prefix}"
    return f"{nbytes:g} B"


def grouped(x: float) -> str:
    """A large number with thousands separators, a small one with 4 significant digits.

    >>> grouped(86_480.3), grouped(295.33), grouped(1.25)
    ('86,480', '295.3', '1.25')
    """
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def count(value: float, unit: str) -> str:
    """A crossover's value as the tables show it: prompt lengths as whole tokens, other counts
    (sequences) with one decimal below 1,000, so that 59.5 sequences (of which 59 fit) is not
    shown as 60.

    >>> count(41_195.7, "tokens"), count(59.55, "sequences"), count(1234.5, "sequences")
    ('41,196', '59.5', '1,234')
    """
    return f"{value:,.1f}" if unit != "tokens" and abs(value) < 1000 else f"{value:,.0f}"


def absent(reason: str, evaluated: bool = True) -> str:
    """A crossover without a value as every table words it, from its
    :attr:`~roofline.evaluate.CrossoverValue.reason`: "never" where the regime is never
    reached, not where the weights alone already exceed the memory (a KV cache that "never"
    exceeds it would read as the opposite), nor a collective hidden at every prompt length;
    "–" where it was not evaluated (a number the device lacks; a collective on one device).

    >>> absent("never fits: the weights alone (93.41 GB) exceed the device memory (80 GB)")
    'weights alone exceed memory'
    >>> absent("never: the working set stays within the cache"), absent("one device", False)
    ('never', '–')
    """
    if not evaluated:
        return "–"
    if reason.startswith("never fits: the weights alone"):
        return "weights alone exceed memory"
    if reason.startswith("never fits"):  # one device's share of the weights, under parallelism
        return "weight share exceeds memory"
    if reason.startswith("always"):
        return "always"
    return "never"


_LEVELS = {"hbm": "HBM", "l2": "L2", "l3": "L3", "sram": "SRAM"}


def level_name(level: str) -> str:
    """What binds an operation (:attr:`roofline.evaluate.OpResult.level`) as tables and
    sentences name it: compute, HBM, L2, L3, SRAM; a communication's ``link`` or ``network``.

    >>> level_name("l2"), level_name("compute"), level_name("link")
    ('L2', 'compute', 'link')
    """
    return _LEVELS.get(level, level)
