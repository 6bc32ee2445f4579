"""Figure 2, prefill time against prompt length (log–log): the whole prefill and each operation
class (:func:`roofline.sweeps.by_kind`), solid where compute-bound and dashed where memory-bound,
from 16 tokens to twice the model's context limit (``max_prompt``; the part past the context
shaded). Each crossover of the catalogue (:func:`roofline.evaluate.crossover_values`) that holds
for the plotted attention mode (or for every mode) and lies on the axis is a vertical line with a
numbered tag; a table under the plot gives every crossover's value, of every mode, the drawn
ones with their tags. With naive attention, the curves are greyed where one layer's score matrix
no longer fits beside the weights."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..errors import InputError
from ..evaluate import CrossoverValue, Setting
from ..tables import count
from . import _style
from ._common import as_list, device_label, title
from ._common import crossovers as _crossovers

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_time", "time_figure", "crossover_label", "crossover_table", "plot_crossover_table",
           "default_tokens", "default_max_prompt"]

_FAMILY = (("projection_", _style.KIND["projection"]), ("prefill_", "#000000"),
           ("attention_", _style.KIND["attention"]), ("", "#7f7f7f"))


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


def _color(name: str) -> str:
    return next(color for prefix, color in _FAMILY if name.startswith(prefix))


def default_max_prompt(settings: Sequence[Setting]) -> int:
    """The longest prompt on the time figure by default: twice the longest context limit
    (``model.max_position``) of the settings, so that the octave past the context (shaded) shows
    what the crossovers just beyond it do; at most 2²⁶. Crossovers past the axis keep their
    values in the table, without a line."""
    return int(min(2 * max(s.model.max_position for s in settings), 2**26))


def default_tokens(settings: Sequence[Setting], max_prompt: int | None = None) -> np.ndarray:
    """Prompt lengths from 16 to ``max_prompt`` (default :func:`default_max_prompt`), 40 per
    decade, both ends included."""
    high = float(default_max_prompt(settings) if max_prompt is None else max_prompt)
    if not high > 16:
        raise InputError("max_prompt", "must be more than 16 tokens", max_prompt)
    n = max(int(40 * np.log10(high / 16)) + 1, 2)
    return np.unique(np.r_[np.round(np.geomspace(16, high, n)), high])


def _bound_line(ax: Axes, xs: np.ndarray, ys: np.ndarray, compute: np.ndarray, color: str,
                lw: float, label: str | None, gid: str) -> None:
    """Solid where compute-bound, dashed where memory-bound (each stretch joined to the next)."""
    solid = compute | np.r_[compute[1:], False] | np.r_[False, compute[:-1]]
    dashed = ~compute | np.r_[~compute[1:], False] | np.r_[False, ~compute[:-1]]
    ax.plot(xs, np.where(solid, ys, np.nan), "-", color=color, lw=lw, label=label,
            gid=f"{gid}:compute")
    ax.plot(xs, np.where(dashed, ys, np.nan), "--", color=color, lw=lw, gid=f"{gid}:memory")


def _tag_rows(xs: list[float], low: float, high: float, gap: float = 0.045) -> list[int]:
    """A row for each tag (xs sorted) so that tags closer than ``gap`` (axes fraction of a log
    axis) never share a row."""
    last: list[float] = []
    rows = []
    for x in xs:
        f = (np.log10(x) - np.log10(low)) / (np.log10(high) - np.log10(low))
        row = next((i for i, end in enumerate(last) if f - end >= gap), len(last))
        if row == len(last):
            last.append(f)
        else:
            last[row] = f
        rows.append(row)
    return rows


_NO_FIT = "#bbbbbb"  # a curve past the memory: naive attention's scores no longer fit


def _values(group: list[Setting]) -> dict[str, tuple[Setting, dict[str, CrossoverValue]]]:
    return {s.hardware.name: (s, _crossovers(s)) for s in group}


def _drawn(values: dict[str, tuple[Setting, dict[str, CrossoverValue]]], low: float,
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


def _tags(values: dict[str, tuple[Setting, dict[str, CrossoverValue]]], low: float,
          high: float) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(device, name) → (tag of its line, tag of its end's line or None)."""
    out = {}
    for n, (_, device, name, v) in enumerate(_drawn(values, low, high), start=1):
        end = f"{n}′" if v.ends_at is not None and v.ends_at <= high else None
        out[(device, name)] = (str(n), end)
    return out


def _cell(v: CrossoverValue, tags: tuple[str, str | None] | None) -> str:
    """One value of the table: '[2] 426 to [2′] 41,196', '53,247' (no line: past the axis or
    another mode), 'never', '326 sequences'."""
    if not v.exists:
        return "– (one device)" if v.reason.startswith("one device") else "never"
    if v.unit != "tokens":
        return f"{count(v.value, v.unit)} {v.unit}"
    tag, end = tags or (None, None)
    text = (f"[{tag}] " if tag else "") + f"{v.value:,.0f}"
    if v.ends_at is not None:
        text += " to " + (f"[{end}] " if end else "") + f"{v.ends_at:,.0f}"
    return text


def crossover_table(settings: Setting | Sequence[Setting], low: float,
                    high: float) -> tuple[list[str], list[list[str]]]:
    """The time figure's crossovers as a table (headers, rows), one row per crossover of the
    catalogue. One device: a column per attention mode, the plotted one first, and the
    mode-free crossovers' values in it; several: a column per device (its own mode). A value
    whose line is drawn (on the axis ``low``–``high``, of the plotted mode) carries the tag of
    its line: '[2] 426 to [2′] 41,196' (compute-bound from 426, memory-bound again from
    41,196)."""
    group = as_list(settings)
    values = _values(group)
    tags = _tags(values, low, high)
    several = len(group) > 1
    bases: dict[str, None] = {}
    for _, vs in values.values():
        for name in vs:
            bases.setdefault(name.partition(".")[0], None)
    if several:
        headers = ["crossover (tokens)"] + [f"{device_label(s)} ({s.attention})"
                                            for s, _ in values.values()]
        columns = [(device, s.attention) for device, (s, _) in values.items()]
    else:
        (device, (s, vs)), = values.items()
        modes = [s.attention] + [m for m in dict.fromkeys(n.partition(".")[2] for n in vs)
                                 if m and m != s.attention]
        headers = ["crossover (tokens)", f"{s.attention} (drawn)", *modes[1:]]
        columns = [(device, m) for m in modes]
    rows = []
    for base in bases:
        row = [crossover_label(base)]
        for k, (device, mode) in enumerate(columns):
            vs = values[device][1]
            if base in vs:  # mode-free: one value, in the first column of its device
                row.append(_cell(vs[base], tags.get((device, base)))
                           if several or k == 0 else "")
            elif f"{base}.{mode}" in vs:
                row.append(_cell(vs[f"{base}.{mode}"], tags.get((device, f"{base}.{mode}"))))
            else:
                row.append("")
        rows.append(row)
    return headers, rows


def plot_time(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
              crossovers: bool = True, max_prompt: int | None = None,
              ax: Axes | None = None) -> Axes:
    """Prefill time against T for each device: total and (one device) per operation class,
    solid where compute-bound, dashed where memory-bound; with naive attention, the attention
    and total curves greyed where one layer's scores no longer fit beside the weights
    (:func:`roofline.sweeps.scores_fit`). Each crossover of the plotted attention mode (and the
    mode-free ones) on the axis is a dotted vertical line with a numbered tag at its top; the
    numbers key :func:`crossover_table` (drawn by :func:`time_figure` under the plot).
    ``tokens``: the prompt lengths (default 16 to ``max_prompt``, :func:`default_tokens`)."""
    from matplotlib.lines import Line2D

    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    xs = default_tokens(group, max_prompt) if tokens is None else np.asarray(tokens, dtype=float)
    no_fit = False
    for i, s in enumerate(group):
        sweep = sweeps.by_kind(s, xs)
        kinds = ["total"] if several else list(sweep.time)
        fits = sweeps.scores_fit(s, xs) if s.attention == "naive" else np.ones(xs.shape, bool)
        for kind in kinds:
            color = _style.device_color(i) if several else _style.KIND[kind]
            label = f"{device_label(s)}: whole prefill" if several else _style.LABEL[kind]
            ys = sweep.time[kind]
            gid = f"time:{s.hardware.name}:{kind}"
            if kind in ("total", "attention") and not fits.all():
                last = int(np.argmin(fits)) if fits.any() else 0  # the grey joins the curve
                grey = np.where(np.arange(xs.size) >= max(last - 1, 0), ys, np.nan)
                ax.plot(xs, grey, "-", color=_NO_FIT, lw=1.0, gid=f"{gid}:no-fit")
                ys = np.where(fits, ys, np.nan)
                no_fit = True
            _bound_line(ax, xs, ys, sweep.compute_bound(kind), color,
                        2.2 if kind == "total" else 1.4, label, gid)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    context = min(s.model.max_position for s in group)
    if context < xs[-1]:
        ax.axvspan(context, xs[-1], color="#000000", alpha=0.05, lw=0,
                   label=f"beyond the model's context ({context:,} tokens)")
    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="#555555", ls="-"), Line2D([], [], color="#555555", ls="--")]
    labels += ["compute-bound stretch", "memory-bound stretch"]
    if no_fit:
        handles.append(Line2D([], [], color=_NO_FIT, lw=1.0))
        labels.append("does not fit in memory (naive scores)")
    if crossovers:
        _draw_crossovers(ax, _values(group))
        handles.append(Line2D([], [], color="#555555", ls=":", lw=1.0))
        labels.append("crossover [n]: its value in the table below")
    ax.set_xlabel("prompt length T (tokens)")
    ax.set_ylabel("prefill time")
    _style.plain_ticks(ax.xaxis)
    _style.plain_ticks(ax.yaxis, "s")
    ax.set_title(title("Prefill time", group))
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3,
              fontsize=7)
    return ax


def _draw_crossovers(ax: Axes, values: dict[str, tuple[Setting, dict[str, CrossoverValue]]]
                     ) -> None:
    """A dotted vertical line for each crossover of :func:`_drawn` (and one at the end of a
    regime that ends on the axis), its tag at the top, tags in rows so that none overlap."""
    from matplotlib.transforms import blended_transform_factory

    several = len(values) > 1
    colors = {device: _style.device_color(i) for i, device in enumerate(values)}
    low, high = ax.get_xlim()
    tags = _tags(values, low, high)
    lines: list[tuple[float, str, str, str]] = []  # (x, tag, colour, gid)
    for x, device, name, v in _drawn(values, low, high):
        color = colors[device] if several else _color(name)
        tag, end = tags[(device, name)]
        lines.append((x, tag, color, f"crossover:{device}:{name}"))
        if end is not None:
            lines.append((v.ends_at, end, color, f"crossover:{device}:{name}:ends"))
    lines.sort(key=lambda line: line[0])
    rows = _tag_rows([line[0] for line in lines], low, high)
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for (x, tag, color, gid), row in zip(lines, rows):
        ax.axvline(x, color=color, ls=":", lw=1.0, alpha=0.9, gid=gid)
        ax.text(x, 1.0 - 0.045 * row, tag, transform=trans, ha="center", va="top", fontsize=6.5,
                gid=f"tag:{gid}",
                color=color, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": color,
                                   "lw": 0.5})


def plot_crossover_table(settings: Setting | Sequence[Setting], low: float, high: float,
                         ax: Axes | None = None) -> Axes:
    """:func:`crossover_table` drawn on ``ax`` (its frame and ticks hidden), headers in bold."""
    ax = _style.axes(ax)
    headers, rows = crossover_table(settings, low, high)
    ax.set_axis_off()
    table = ax.table(cellText=rows, colLabels=headers, cellLoc="left", colLoc="left",
                     loc="upper center", edges="horizontal", bbox=(0.0, 0.0, 1.0, 1.0))
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    table.auto_set_column_width(list(range(len(headers))))
    for (row, _), cell in table.get_celld().items():
        cell.set_linewidth(0.4)
        cell.set_edgecolor("#999999")
        cell.PAD = 0.03
        if row == 0:
            cell.get_text().set_fontweight("bold")
    table.set_gid("crossover-table")
    note = ("[n]: the dotted line tagged n on the plot; no tag: past the axis "
            f"(T > {high:,.0f}) or another attention mode, no line drawn")
    ax.text(0.0, -0.02, note, transform=ax.transAxes, ha="left", va="top", fontsize=6.5,
            color="#555555")
    return ax


def time_figure(settings: Setting | Sequence[Setting], max_prompt: int | None = None,
                size: str | float = "page", **kwargs) -> Figure:
    """:func:`plot_time` on a new Figure in the house style, with :func:`crossover_table`
    under it (``crossovers=False``: the plot alone)."""
    group = as_list(settings)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 5.0))
        if not kwargs.get("crossovers", True):
            plot_time(group, max_prompt=max_prompt, ax=fig.subplots(), **kwargs)
            return fig
        headers, rows = crossover_table(group, 16, 16)  # the number of rows only
        table_h = 0.17 * (len(rows) + 1) + 0.2
        fig.set_figheight(4.6 + table_h)
        top, bottom = fig.subplots(2, 1, height_ratios=[4.6, table_h])
        ax = plot_time(group, max_prompt=max_prompt, ax=top, **kwargs)
        plot_crossover_table(group, *ax.get_xlim(), ax=bottom)
    return fig
