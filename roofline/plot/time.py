"""Figure 2, prefill time against prompt length (log–log): the whole prefill and each operation
class (:func:`roofline.sweeps.by_kind`), solid where compute-bound and dashed where memory-bound,
from 16 tokens to twice the model's context limit (``max_prompt``; the part past the context
shaded). Where the prefill does not fit in the device's memory (the weights, the KV cache and
its live activations at their peak: :func:`roofline.sweeps.prefill_fits`) every curve of that
device is drawn pale over that stretch (lighter and thinner, still solid where compute-bound and
dashed where memory-bound), naive attention also where its scores do not fit. Under
parallelism the collectives' time is a dash-dotted curve, of each device in its colour where
several are overlaid; the whole prefill includes it. The curves' ids (``gid``, kept in the SVG
and in ``--data``): ``time:DEVICE:KIND:fits:BOUND`` and ``time:DEVICE:KIND:no-fit:BOUND`` for
the whole prefill (KIND ``total``) and naive attention (BOUND ``compute`` or ``memory``),
``time:DEVICE:KIND:BOUND`` for the other operation classes where the prefill fits and
``time:DEVICE:KIND:no-fit:BOUND`` where it does not, and ``time:DEVICE:communication`` (and
``time:DEVICE:communication:no-fit``). The y axis is in seconds, each tick with its SI prefix
(1 ms, 100 µs), as its label says. Each crossover of the catalogue
(:func:`roofline.evaluate.crossover_values`) that holds for the plotted attention mode (or for
every mode) and lies on the axis is a vertical line with a numbered tag above the plot. The
values, of every mode, are a table beside the figure, not in it (:func:`crossover_table`,
written as CSV and as a LaTeX ``tabular`` by :func:`crossover_table_csv` and
:func:`crossover_table_latex`), the drawn ones with their tags; the note under the plot says so
without naming a file (a paper's reader has none)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..errors import InputError
from ..evaluate import CrossoverValue, Setting
from . import _style
from ._common import as_list, device_label, experts_note, shade_beyond_context, title
from .time_table import (by_device, crossover_label, crossover_table, crossover_tags,
                         crossover_table_csv, crossover_table_latex, drawn_crossovers,
                         plot_crossover_table)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_time", "time_figure", "crossover_label", "crossover_table",
           "crossover_table_csv", "crossover_table_latex", "plot_crossover_table",
           "default_tokens", "default_max_prompt"]

_FAMILY = (("projection_", _style.KIND["projection"]), ("prefill_", "#000000"),
           ("attention_", _style.KIND["attention"]), ("", "#7f7f7f"))
# Markers of overlaid devices' curves (a second cue beside the colour: solid and dashed already
# tell compute- from memory-bound), a few along each curve.
_TAG_POINTS = 7.0  # the crossover tags' text
_ROW_POINTS = 11.0  # the height of a row of tags


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


def _joined(mask: np.ndarray) -> np.ndarray:
    """``mask`` and the points next to it: a stretch drawn on it meets its neighbours."""
    return mask | np.r_[mask[1:], False] | np.r_[False, mask[:-1]]


def _bound_line(ax: Axes, xs: np.ndarray, ys: np.ndarray, compute: np.ndarray, color: str,
                lw: float, label: str | None, gid: str, **style) -> None:
    """Solid where compute-bound, dashed where memory-bound (each stretch joined to the next);
    ``ys`` NaN where the curve is not drawn."""
    ax.plot(xs, np.where(_joined(compute), ys, np.nan), "-", color=color, lw=lw, label=label,
            gid=f"{gid}:compute", **style)
    ax.plot(xs, np.where(_joined(~compute), ys, np.nan), "--", color=color, lw=lw,
            gid=f"{gid}:memory", **style)


_PALE = {"alpha": 0.4}  # where the prefill does not fit: lighter, and thinner by _THIN
_THIN = 0.55


def _fit_lines(ax: Axes, xs: np.ndarray, ys: np.ndarray, compute: np.ndarray,
               fit: np.ndarray, color: str, lw: float, label: str | None, gid: str,
               full: str = ":fits", **marks) -> bool:
    """:func:`_bound_line` in full where it fits (``gid`` + ``full``: ``gid:fits``, or for the
    operation classes drawn by the whole prefill's fit ``gid`` as it is) and pale where it does
    not (``gid:no-fit``: lighter, thinner, still solid and dashed; joined to the full stretch);
    whether any of it is pale."""
    _bound_line(ax, xs, np.where(fit, ys, np.nan), compute, color, lw, label, f"{gid}{full}",
                **marks)
    if fit.all():
        return False
    pale = np.where(_joined(~fit), ys, np.nan)
    _bound_line(ax, xs, pale, compute, color, _THIN * lw, None, f"{gid}:no-fit", **_PALE,
                **marks)
    return True


def _communication_line(ax: Axes, xs: np.ndarray, ys: np.ndarray, fit: np.ndarray, color: str,
                        label: str | None, gid: str, **marks) -> bool:
    """The collectives' time, dash-dotted (neither compute- nor memory-bound), in full where
    the prefill fits (``gid``) and pale where it does not (``gid:no-fit``), as the other
    curves; whether any of it is pale."""
    ax.plot(xs, np.where(fit, ys, np.nan), "-.", color=color, lw=1.4, label=label, gid=gid,
            **marks)
    if fit.all():
        return False
    ax.plot(xs, np.where(_joined(~fit), ys, np.nan), "-.", color=color, lw=_THIN * 1.4,
            gid=f"{gid}:no-fit", **_PALE, **marks)
    return True


def _fan(xs: list[float], low: float, high: float, gap: float) -> list[float]:
    """Where each tag goes (axes fraction) for crossovers at ``xs`` (sorted) on a log axis: at
    its line, or spread sideways from its neighbours' so that tags stay ``gap`` apart; a group
    that must spread stays centred on its lines, within the axes."""
    at = [(np.log10(x) - np.log10(low)) / (np.log10(high) - np.log10(low)) for x in xs]
    groups: list[list[int]] = []  # runs of neighbouring tags, each centred on its lines
    for i in range(len(at)):
        groups.append([i])
        while len(groups) > 1:
            a, b = groups[-2], groups[-1]
            if _place(at, b, gap)[0] - _place(at, a, gap)[-1] >= gap - 1e-12:
                break
            groups[-2:] = [a + b]
    return [p for g in groups for p in _place(at, g, gap)]


def _place(at: list[float], group: list[int], gap: float) -> list[float]:
    """A group's tags ``gap`` apart, centred on their lines' mean, kept within 0 to 1."""
    width = gap * (len(group) - 1)
    first = float(np.mean([at[i] for i in group])) - width / 2
    first = min(max(first, gap / 2), 1 - gap / 2 - width)
    return [first + gap * k for k in range(len(group))]


def plot_time(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
              crossovers: bool = True, max_prompt: int | None = None,
              ax: Axes | None = None, table: str | None = None) -> Axes:
    """Prefill time against T for each device: total and (one device) per operation class,
    solid where compute-bound, dashed where memory-bound; every curve of a device pale where
    its prefill does not fit in the device's memory (:func:`roofline.sweeps.prefill_fits`: the
    weights, the KV cache and the live activations at their peak), naive attention also
    where its scores do not fit (:func:`roofline.sweeps.scores_fit`). Several devices: the
    whole prefill, each device a colour and a marker, and under parallelism each device's
    collectives' time, dash-dotted in its colour (the note says so; the legend keys devices).
    Each crossover of the plotted attention mode (and the mode-free ones) on the axis is a
    dotted vertical line with a numbered tag above the plot; the numbers key
    :func:`crossover_table`, which the note under the plot places beside the figure where
    ``table`` (the file that holds it) is given, without its name. The legend names the
    curves, each keyed as drawn (pale where none of it fits: :func:`_as_drawn`); the note under
    it what the line styles and the shading mean. ``tokens``: the prompt lengths (default 16 to
    ``max_prompt``, :func:`default_tokens`)."""
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    inches = ax.figure.get_figwidth()
    narrow = inches < _style.NARROW
    xs = default_tokens(group, max_prompt) if tokens is None else np.asarray(tokens, dtype=float)
    no_fit = communication = False
    for i, s in enumerate(group):
        sweep = sweeps.by_kind(s, xs)
        # several devices: the whole prefill and, under parallelism, the collectives' time
        kinds = [k for k in ("total", "communication") if k in sweep.time] if several \
            else list(sweep.time)
        fit = sweeps.prefill_fits(s, xs)  # every curve of the device pale where it does not
        attention_fit = fit & sweeps.scores_fit(s, xs) if s.attention == "naive" else fit
        marks = {"marker": _style.device_marker(i), "ms": 4.0,
                 "markevery": (4 + 7 * i, 20)} if several else {}
        for kind in kinds:
            color = _style.device_color(i) if several else _style.KIND[kind]
            label = device_label(s) if several else _style.LABEL[kind]
            if narrow and kind == "elementwise":
                label = "element-wise"
            if several and kind == "communication":  # the note says what it is, once
                label = None
            ys = sweep.time[kind]
            gid = f"time:{s.hardware.name}:{kind}"
            if kind == "communication":  # neither compute- nor memory-bound: its own style
                no_fit |= _communication_line(ax, xs, ys, fit, color, label, gid, **marks)
                communication = True
                continue
            lw = 2.2 if kind == "total" else 1.4
            # the whole prefill and naive attention (its scores in memory): gid:fits; the
            # other operation classes: gid as it is, pale (gid:no-fit) over the same stretch
            drawn_by_memory = kind == "total" or (kind == "attention" and s.attention == "naive")
            no_fit |= _fit_lines(ax, xs, ys, sweep.compute_bound(kind),
                                 attention_fit if kind == "attention" else fit, color, lw,
                                 label, gid, ":fits" if drawn_by_memory else "", **marks)
    estimated = not several and _estimate_line(ax, group[0], xs)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    notes = ["solid: compute-bound", "dashed: memory-bound"]
    if no_fit:
        notes.append("pale: does not fit in the device's memory")
    if estimated:
        notes.append("dotted black: the estimate (the bound with launch and host overhead, "
                     "tile and wave quantization and achievable fractions), not a bound")
    if communication:
        notes.append(("dash-dot: each device's collectives' time (in its colour)" if several
                      else "dash-dot: the collectives' time") + " at the links' bandwidth, "
                     + ("included in the whole prefill where above the compute (hidden under "
                        "it where below)" if group[0].overlap
                        else "included in the whole prefill (added to the compute)"))
    notes += [note for note in [experts_note(group)] if note]
    shaded = shade_beyond_context(ax, group, xs[-1])
    if shaded:
        notes.append(shaded)
    rows = 0
    if crossovers:
        window = group[0].model.sliding_window
        window = window if window is not None and xs[0] < window < xs[-1] else None
        rows = _draw_crossovers(ax, by_device(group), inches, window)
        # the table's file is named on the command line's output, not here: a paper's
        # reader cannot open it, and a file name breaks the note at a column's width
        notes.append("[n]: crossover n (values in the table beside the figure)" if table
                     else "[n]: crossover n, its value in the crossover table")
        if window:
            notes.append(f"W: the sliding window ({window:,} tokens)")
    ax.set_xlabel("prompt length T (tokens)")
    # the ticks carry the unit with its SI prefix (1 ms, 100 µs: _style.plain_ticks); the
    # label says so, as the scaling figure's does
    # the unit on each tick (2 ms): a log axis over µs to s reads best so, as a "(s)" would not
    # several devices: the whole prefill only, or with each device's collectives beside it
    ax.set_ylabel(("whole-prefill" if several and not communication else "prefill") + " time")
    _style.plain_ticks(ax.xaxis)
    _style.plain_ticks(ax.yaxis, "s")
    ax.set_title(_style.wrap(title("Prefill time", group), inches - 0.6, 8.5),
                 pad=4 + (8 + _ROW_POINTS * rows if rows else 0))
    _key(ax, notes, several, narrow, inches)
    return ax


def _estimate_line(ax: Axes, s: Setting, xs: np.ndarray) -> bool:
    """The whole prefill's estimate (:mod:`roofline.evaluate.estimate`), dotted, where the
    device file has an ``[estimate]``; whether it was drawn."""
    from ..evaluate.estimate import estimate_columns

    est = estimate_columns(s, xs)
    if est is None:
        return False
    # under a split the collectives take the legend's last entry: the note keys it there
    ax.plot(xs, est["time_s"], ":", color=_style.KIND["total"], lw=1.6,
            label="_estimate" if s.parallel else "estimate",
            gid=f"time:{s.hardware.name}:estimate")
    return True


def _key(ax: Axes, notes: list[str], several: bool, narrow: bool, inches: float) -> None:
    """The note (what the line styles, the pale curves, the shading and the tags mean), just
    under the x axis's label, and the legend of the curves under it; both placed in points
    below the axes, so that they fit an Axes of any size."""
    from matplotlib.transforms import ScaledTranslation

    text = _style.wrap("; ".join(notes) + ".", inches - 0.5, _style.MIN_POINTS)
    below = 30.0  # points from the axes' bottom: past the tick labels and the axis label
    fig = ax.figure
    shift = ScaledTranslation(0, -below / 72, fig.dpi_scale_trans)
    ax.text(0.5, 0.0, text, transform=ax.transAxes + shift, ha="center", va="top",
            fontsize=_style.MIN_POINTS, color="#444444", gid="time-note")
    lines = text.count("\n") + 1
    handles, labels = ax.get_legend_handles_labels()
    handles = [_as_drawn(ax, handle) for handle in handles]
    ncol = len(handles) if several else (2 if narrow else 3)
    drop = (below + 1.25 * _style.MIN_POINTS * lines + 4) / 72
    ax.legend(handles, labels, loc="upper center", ncol=min(ncol, 3 if narrow else 6),
              bbox_to_anchor=(0.5, 0.0),
              bbox_transform=ax.transAxes + ScaledTranslation(0, -drop, fig.dpi_scale_trans),
              fontsize=_style.MIN_POINTS, borderaxespad=0.0, columnspacing=1.2,
              handlelength=2.2)


def _as_drawn(ax: Axes, handle):
    """A curve's legend entry as the curve is drawn: where none of it fits in memory (its full
    stretches, ``gid:fits`` or, for the other operation classes and the collectives, ``gid``,
    draw nothing), a copy of its pale line (``gid:no-fit``: lighter and thinner), so that the
    key matches the curve; else the labelled line itself."""
    gid = str(handle.get_gid() or "")
    if gid.endswith(":communication"):
        curve, full, pale_gid = gid, [gid], f"{gid}:no-fit"
    elif gid.startswith("time:") and gid.endswith(":compute"):
        curve = gid.removesuffix(":compute")
        base = curve.removesuffix(":fits")
        full = [f"{curve}:{bound}" for bound in ("compute", "memory")]
        pale_gid = f"{base}:no-fit:compute"
        curve = base
    else:
        return handle
    lines = {str(line.get_gid()): line for line in ax.get_lines()}
    pale = lines.get(pale_gid)
    if pale is None or any(np.isfinite(np.asarray(lines[g].get_ydata(), dtype=float)).any()
                           for g in full if g in lines):
        return handle
    from matplotlib.lines import Line2D

    key = Line2D([], [])
    key.update_from(pale)  # colour, alpha, width, marker, line style
    key.set_gid(f"{curve}:key")
    return key


def _draw_crossovers(ax: Axes, values: dict[str, tuple[Setting, dict[str, CrossoverValue]]],
                     inches: float, window: int | None = None) -> int:
    """A dotted vertical line for each crossover of :func:`drawn_crossovers` (and one at the end of a
    regime that ends on the axis), its tag above the axes, tags in rows so that none overlap;
    a dash-dotted one tagged W at a sliding window's T = W; returns the number of rows."""
    from matplotlib.patches import ConnectionPatch
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    several = len(values) > 1
    colors = {device: _style.device_color(i) for i, device in enumerate(values)}
    low, high = ax.get_xlim()
    tags = crossover_tags(values, low, high)
    lines: list[tuple[float, str, str, str, str]] = []  # (x, tag, colour, gid, line style)
    for x, device, name, v in drawn_crossovers(values, low, high):
        color = colors[device] if several else _color(name)
        tag, end = tags[(device, name)]
        lines.append((x, tag, color, f"crossover:{device}:{name}", ":"))
        if end is not None:
            lines.append((v.ends_at, end, color, f"crossover:{device}:{name}:ends", ":"))
    if window is not None:
        lines.append((float(window), "W", "#555555", "window", "-."))
    if not lines:
        return 0
    lines.sort(key=lambda line: line[0])
    # a tag's width (and a little space) as a fraction of the axes' width, which is about the
    # figure's less the y axis's labels; more tags than fit in one row take two (or more)
    widest = max(len(line[1]) for line in lines)
    gap = (0.62 * _TAG_POINTS * widest + 6) / 72 / max(inches - 0.8, 0.5)
    rows = int(np.ceil(len(lines) * gap / 0.9))
    top = blended_transform_factory(ax.transData, ax.transAxes)
    for row in range(rows):
        mine = lines[row::rows]
        up = ScaledTranslation(0, (8 + _ROW_POINTS * row) / 72, ax.figure.dpi_scale_trans)
        for (x, tag, color, gid, ls), f in zip(mine, _fan([m[0] for m in mine], low, high,
                                                         gap)):
            ax.axvline(x, color=color, ls=ls, lw=1.0, alpha=0.9, gid=gid)
            ax.text(f, 1.0, tag, transform=ax.transAxes + up, ha="center", va="bottom",
                    fontsize=_TAG_POINTS, gid=f"tag:{gid}", clip_on=False, color="#000000",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": color, "lw": 0.8})
            ax.add_artist(ConnectionPatch((x, 1.0), (f, 1.0), top, ax.transAxes + up,
                                          color=color, lw=0.6, clip_on=False))  # a leader
    return rows


def time_figure(settings: Setting | Sequence[Setting], max_prompt: int | None = None,
                size: str | float = "page", table: str | None = None, **kwargs) -> Figure:
    """:func:`plot_time` on a new Figure in the house style: the plot, its legend and a note
    under it; the crossovers' values are not drawn (:func:`crossover_table`; ``table``: the
    file that holds them, beside the figure: the note says so, without its name)."""
    group = as_list(settings)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 3.9 if w < _style.NARROW else 4.6))
        plot_time(group, max_prompt=max_prompt, ax=fig.subplots(), table=table, **kwargs)
    return fig
