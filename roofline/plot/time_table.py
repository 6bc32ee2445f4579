"""The time figure's crossovers as a table (:mod:`.time`): one row per crossover of the
catalogue, its value for each attention mode or device, the drawn ones with the tag of their
line ('[2] 426 to [2′] 41,196'); written beside the figure as CSV and as a LaTeX ``tabular``
(``roofline plot time``), in the report under the figure, or drawn on an Axes. Every cell holds
a value or says in words why there is none ('weights alone exceed memory', '– (no L2 or L3
cache in the hardware file)'), and a row says, in the figure's words, where the whole prefill
is drawn pale ('pale: does not fit in the device's memory')."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..evaluate import CrossoverValue, Setting
from ..tables import absent, count
from . import _style
from ._common import as_list, plain
from ._common import crossovers as _crossovers

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["crossover_label", "crossover_table", "crossover_table_csv", "crossover_table_latex",
           "by_device", "drawn_crossovers", "crossover_tags",
           "plot_crossover_table"]


def crossover_label(name: str) -> str:
    """A crossover's catalogue name for a reader: 'prefill_compute_bound_tokens.tiled' →
    'prefill compute-bound (tiled)'.

    >>> crossover_label("prefill_compute_bound_tokens.tiled")
    'prefill compute-bound (tiled)'
    """
    base, _, mode = name.partition(".")
    words = base.removesuffix("_tokens").replace("compute_bound", "compute-bound")
    words = words.replace("kv_cache", "KV cache").replace("_", " ").replace("flops", "FLOPs")
    return f"{words} ({mode})" if mode else words


def by_device(group: list[Setting]) -> dict[str, tuple[Setting, dict[str, CrossoverValue]]]:
    return {s.hardware.name: (s, _crossovers(s)) for s in group}


def drawn_crossovers(values: dict[str, tuple[Setting, dict[str, CrossoverValue]]], low: float,
           high: float) -> list[tuple[float, str, str, CrossoverValue]]:
    """The crossovers drawn as lines, numbered in this order: those of the plotted attention
    mode (or of every mode) whose prompt length lies on the axis, (T, device, name, value)
    sorted by T. Every crossover is one device's share of the setting, in the whole prompt's
    T (under context parallelism too, where a device holds T/N_cp of it)."""
    found = []
    for device, (s, vs) in values.items():
        for name, v in vs.items():
            mode = name.partition(".")[2]
            if mode in ("", s.attention) and v.exists and v.unit == "tokens" \
                    and low <= v.value <= high:
                found.append((v.value, device, name, v))
    return sorted(found, key=lambda f: (f[0], f[1], f[2]))


def crossover_tags(values: dict[str, tuple[Setting, dict[str, CrossoverValue]]], low: float,
          high: float) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(device, name) → (tag of its line, tag of its end's line or None)."""
    out = {}
    for n, (_, device, name, v) in enumerate(drawn_crossovers(values, low, high), start=1):
        end = f"{n}′" if v.ends_at is not None and v.ends_at <= high else None
        out[(device, name)] = (str(n), end)
    return out


def _cell(v: CrossoverValue, tags: tuple[str, str | None] | None) -> str:
    """One value of the table: '[2] 426 to [2′] 41,196', '53,247' (no line: past the axis or
    another mode), 'never', 'weights alone exceed memory' (:func:`roofline.tables.absent`),
    '326 sequences', '0.2 devices (fits on one)' (as ``roofline crossover`` words it)."""
    if not v.exists:
        if v.reason.startswith("not evaluated: a serving objective"):
            return "– (roofline hybrid: a TPOT objective)"
        return "– (one device)" if v.reason.startswith("one device") else \
            absent(v.reason, v.evaluated)
    if v.unit != "tokens":
        return f"{count(v.value, v.unit)} {v.unit}" + (" (fits on one)" if v.fits_on_one else "")
    tag, end = tags or (None, None)
    text = (f"[{tag}] " if tag else "") + f"{v.value:,.0f}"
    if v.ends_at is not None:
        text += " to " + (f"[{end}] " if end else "") + f"{v.ends_at:,.0f}"
    return text


def _missing(s: Setting, base: str, mode: str) -> str:
    """Why a crossover has no value for a device or mode, where the catalogue derives none: the
    cache spill only for the tiled schedules (:data:`roofline.derive.levels.TILED`, whose
    re-reads a cache serves) behind a cache level with the SM count (the thread blocks in
    flight) that the hardware file gives (:func:`roofline.evaluate.setting.device_caches`)."""
    if base == "attention_cache_spill_tokens":
        from ..derive.levels import TILED

        hw = s.hardware
        if mode not in TILED:
            return "– (not tiled: no re-reads to spill)"
        if hw.l2_bytes is None and hw.l3_bytes is None:
            return "– (no L2 or L3 cache in the hardware file)"
        if hw.sm_count is None:
            return "– (no SM count in the hardware file)"
    return "– (not derived for this setting)"


PALE = "pale: does not fit in the device's memory"  # the figure's note, word for word


def _pale_cell(vs: dict[str, CrossoverValue], mode: str,
               tags: dict[tuple[str, str], tuple[str, str | None]], device: str) -> str:
    """Where the time figure draws the whole prefill pale (:func:`roofline.sweeps.prefill_fits`:
    the weights, the KV cache and the live activations beyond the memory, the crossover
    ``prefill_exceeds_memory_tokens``; where those are not derived, the KV cache, and naive
    attention's scores): 'from [4] 8,540', 'at every T: weights alone exceed memory',
    'nowhere: fits at every T'."""
    name = f"prefill_exceeds_memory_tokens.{mode}"
    if name not in vs:
        name = "naive_scores_exceed_memory_tokens" if mode == "naive" \
            else "kv_cache_exceeds_memory_tokens"
    v = vs.get(name)
    if v is None:
        return "– (not derived for this setting)"
    if v.exists:
        return "from " + _cell(v, tags.get((device, name)))
    words = absent(v.reason, v.evaluated)
    if words == "never":
        return "nowhere: fits at every T"
    return f"at every T: {words}" if words.startswith("weight") else words


def crossover_table(settings: Setting | Sequence[Setting], low: float,
                    high: float) -> tuple[list[str], list[list[str]]]:
    """The time figure's crossovers as a table (headers, rows), one row per crossover of the
    catalogue. One device: a column per attention mode, the plotted one first, and the
    mode-free crossovers' values in it; several: a column per device (its own mode). A value
    whose line is drawn (on the axis ``low``–``high``, of the plotted mode) carries the tag of
    its line: '[2] 426 to [2′] 41,196' (compute-bound from 426, memory-bound again from
    41,196). A crossover the catalogue does not derive for a device or mode says why
    (:func:`_missing`); after the KV cache's row, the figure's pale stretches in its words
    (:data:`PALE`: from where the whole prefill does not fit). Names are as given (not escaped
    for matplotlib: :func:`plot_crossover_table` does that)."""
    group = as_list(settings)
    values = by_device(group)
    tags = crossover_tags(values, low, high)
    several = len(group) > 1
    bases: dict[str, None] = {}
    for _, vs in values.values():
        for name in vs:
            bases.setdefault(name.partition(".")[0], None)
    if several:
        headers = ["crossover (tokens, else as stated)"] + [f"{s.hardware.name} ({s.attention})"
                                            for s, _ in values.values()]
        columns = [(device, s.attention) for device, (s, _) in values.items()]
    else:
        (device, (s, vs)), = values.items()
        modes = [s.attention] + [m for m in dict.fromkeys(n.partition(".")[2] for n in vs)
                                 if m and m != s.attention]
        headers = ["crossover (tokens, else as stated)", f"{s.attention} (drawn)", *modes[1:]]
        columns = [(device, m) for m in modes]
    rows = []
    for base in bases:
        row = [crossover_label(base)]
        for k, (device, mode) in enumerate(columns):
            s, vs = values[device]
            if base in vs:  # mode-free: one value, in the first column of its device
                row.append(_cell(vs[base], tags.get((device, base)))
                           if several or k == 0 else "")
            elif f"{base}.{mode}" in vs:
                row.append(_cell(vs[f"{base}.{mode}"], tags.get((device, f"{base}.{mode}"))))
            else:
                row.append(_missing(s, base, mode))
        rows.append(row)
        if base == "kv_cache_exceeds_memory_tokens":  # where the figure draws it pale
            rows.append([PALE, *(_pale_cell(values[device][1], mode,
                                            tags if several or k == 0 else {}, device)
                                 for k, (device, mode) in enumerate(columns))])
    return headers, rows


def crossover_table_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """:func:`crossover_table` as CSV text (a header line, then one line a row)."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue()


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "′": "$'$", "–": "--", "—": "---"}


def _latex(cells: Sequence[str]) -> str:
    """A row as LaTeX: each cell's specials escaped, '{}' before a leading '[' (which LaTeX
    would read as the optional argument of the ``\\\\`` that ends the row before)."""
    out = " & ".join("".join(_LATEX.get(c, c) for c in cell) for cell in cells) + " \\\\"
    return "{}" + out if out.startswith("[") else out


def crossover_table_latex(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """:func:`crossover_table` as a LaTeX ``tabular`` in the booktabs style (``\\toprule``,
    ``\\midrule``, ``\\bottomrule``; ``\\usepackage{booktabs}``), one line a row."""
    lines = ["% the crossovers of a roofline time figure; needs \\usepackage{booktabs}",
             f"\\begin{{tabular}}{{{'l' * len(headers)}}}", "\\toprule",
             _latex(headers), "\\midrule", *map(_latex, rows)]
    return "\n".join([*lines, "\\bottomrule", "\\end{tabular}"]) + "\n"


def plot_crossover_table(settings: Setting | Sequence[Setting], low: float, high: float,
                         ax: Axes | None = None) -> Axes:
    """:func:`crossover_table` drawn on ``ax`` (its frame and ticks hidden), headers in bold,
    for a caller who wants it in a figure (:func:`time_figure` writes it beside the figure
    instead)."""
    ax = _style.axes(ax)
    headers, rows = crossover_table(settings, low, high)
    ax.set_axis_off()
    table = ax.table(cellText=[[plain(c) for c in row] for row in rows],
                     colLabels=[plain(h) for h in headers], cellLoc="left", colLoc="left",
                     loc="upper center", edges="horizontal", bbox=(0.0, 0.0, 1.0, 1.0))
    table.auto_set_font_size(False)
    table.set_fontsize(_style.MIN_POINTS)
    table.auto_set_column_width(list(range(len(headers))))
    for (row, _), cell in table.get_celld().items():
        cell.set_linewidth(0.4)
        cell.set_edgecolor("#999999")
        cell.PAD = 0.03
        if row == 0:
            cell.get_text().set_fontweight("bold")
    table.set_gid("crossover-table")
    return ax
