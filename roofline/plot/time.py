"""Figure 2, prefill time against prompt length (log–log): the whole prefill and each operation
class (:func:`roofline.sweeps.by_kind`), solid where compute-bound and dashed where memory-bound,
and each crossover of the catalogue (:func:`roofline.evaluate.crossover_values`) that holds for
the plotted attention mode (or for every mode) as a numbered vertical line, its name and value
listed beside the plot; the other modes' crossovers are listed without a line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import textwrap

import numpy as np

from .. import sweeps
from ..evaluate import CrossoverValue, Setting
from . import _style
from ._common import as_list, side_legend, title
from ._common import crossovers as _crossovers

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_time", "time_figure", "crossover_label", "default_tokens"]

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


def default_tokens(settings: Sequence[Setting], values: Sequence[float] = ()) -> np.ndarray:
    """Prompt lengths from 16 to past the largest crossover (at least 2²⁰), 40 per decade."""
    high = max([2.0**20, *(2 * v for v in values)])
    high = min(high, 2.0**26)
    return np.unique(np.round(np.geomspace(16, high, int(40 * np.log10(high / 16)) + 1)))


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


def plot_time(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
              crossovers: bool = True, ax: Axes | None = None) -> Axes:
    """Prefill time against T for each device: total and (one device) per operation class;
    each crossover of the plotted attention mode (and the mode-free ones) of each device as a
    numbered vertical line, listed in the side legend (one device: the other modes' values
    listed too, without lines)."""
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    values = {s.hardware.name: _crossovers(s) for s in group} if crossovers else {}
    modes = {s.hardware.name: s.attention for s in group}
    on_axis = [v.value for device, vs in values.items() for name, v in vs.items()
               if v.exists and v.unit == "tokens"
               and name.partition(".")[2] in ("", modes[device])]
    xs = default_tokens(group, on_axis) if tokens is None else np.asarray(tokens, dtype=float)
    for i, s in enumerate(group):
        sweep = sweeps.by_kind(s, xs)
        kinds = ["total"] if several else list(sweep.time)
        for kind in kinds:
            color = _style.device_color(i) if several else _style.KIND[kind]
            label = f"{s.hardware.name}: whole prefill" if several else _style.LABEL[kind]
            _bound_line(ax, xs, sweep.time[kind], sweep.compute_bound(kind), color,
                        2.2 if kind == "total" else 1.4, label, f"time:{s.hardware.name}:{kind}")
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
    h2, l2 = _draw_crossovers(ax, values, modes,
                              blended_transform_factory)
    ax.set_xlabel("prompt length T (tokens)")
    ax.set_ylabel("prefill time (s)")
    ax.set_title(title("Prefill time", group))
    side_legend(ax, handles=handles + h2, labels=labels + l2, fontsize=7)
    return ax


def _ends_text(name: str, ends_at: float) -> str:
    """What a second root means: 'memory-bound again from 41,196' for a compute-bound regime."""
    if "compute_bound" in name:
        return f"memory-bound again from {ends_at:,.0f}"
    return f"ends at {ends_at:,.0f}"


def _other_modes(others: dict[str, list[tuple[str, CrossoverValue]]]) -> list[str]:
    """The other attention modes' crossovers, one phrase per crossover, listed without lines:
    'prefill compute-bound: naive 458 to 5,110, ideal 411'."""
    if not others:
        return []
    phrases = []
    for base, items in others.items():
        values = []
        for mode, v in items:
            if not v.exists:
                values.append(f"{mode} never")
            elif v.unit != "tokens":
                values.append(f"{mode} {v.value:,.0f} {v.unit}")
            else:
                values.append(f"{mode} {v.value:,.0f}"
                              + (f" to {v.ends_at:,.0f}" if v.ends_at is not None else ""))
        phrases.append(f"{crossover_label(base)}: {', '.join(values)}")
    return textwrap.wrap("other attention modes, no line drawn: " + "; ".join(phrases), 70,
                         subsequent_indent="    ")


def _draw_crossovers(ax: Axes, values: dict[str, dict[str, CrossoverValue]],
                     modes: dict[str, str], blended) -> tuple[list, list[str]]:
    """A numbered vertical line for each crossover of the plotted attention mode and each one
    that holds for every mode; one device: the other modes' values listed without lines."""
    several = len(values) > 1
    from matplotlib.lines import Line2D

    lines: list[tuple[float, str, str, str, str]] = []  # (x, tag, colour, legend text, gid)
    notes: list[str] = []
    low, high = ax.get_xlim()
    found: list[tuple[float, str, str, CrossoverValue, str]] = []
    others: dict[str, list[tuple[str, CrossoverValue]]] = {}
    for i, (device, vs) in enumerate(values.items()):
        prefix = f"{device}: " if several else ""
        never = []
        for name, v in vs.items():
            base, _, mode = name.partition(".")
            if mode and mode != modes[device]:
                if not several:  # listed once, without a line: nothing happens to the curve
                    others.setdefault(base, []).append((mode, v))
                continue
            color = _style.device_color(i) if several else _color(name)
            if not v.exists:
                never.append(crossover_label(name))
            elif v.unit != "tokens":
                notes.append(f"{prefix}{crossover_label(name)}: {v.value:,.0f} {v.unit} "
                             "(not a prompt length)")
            elif low <= v.value <= high:
                found.append((v.value, f"{prefix}{crossover_label(name)}", color, v,
                              f"crossover:{device}:{name}"))
        if never:
            notes += textwrap.wrap(f"{prefix}never: {'; '.join(never)}", 70,
                                   subsequent_indent="    ")
    notes += _other_modes(others)
    for n, (x, label, color, v, gid) in enumerate(sorted(found, key=lambda f: f[0]), start=1):
        text = f"{n}  {label}: {x:,.0f}"
        if v.ends_at is not None and v.ends_at <= high:
            text += f"; {_ends_text(gid, v.ends_at)} ({n}′)"
            lines.append((v.ends_at, f"{n}′", color, "", f"{gid}:ends"))
        lines.append((x, str(n), color, text, gid))
    order = sorted(range(len(lines)), key=lambda k: lines[k][0])
    rows = _tag_rows([lines[k][0] for k in order], low, high)
    trans = blended(ax.transData, ax.transAxes)
    handles, labels = [], []
    for k, row in zip(order, rows):
        x, tag, color, _, gid = lines[k]
        ax.axvline(x, color=color, ls=":", lw=1.0, alpha=0.9, gid=gid)
        ax.text(x, 1.0 - 0.045 * row, tag, transform=trans, ha="center", va="top", fontsize=6.5,
                gid=f"tag:{gid}",
                color=color, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": color,
                                   "lw": 0.5})
    for x, tag, color, text, _ in lines:
        if text:
            handles.append(Line2D([], [], color=color, ls=":", lw=1.0))
            labels.append(text)
    for note in notes:
        handles.append(Line2D([], [], ls="none"))
        labels.append(note)
    if lines or notes:
        handles.insert(0, Line2D([], [], ls="none"))
        labels.insert(0, "crossovers (tokens; tag at the top of each line)")
    return handles, labels


def time_figure(settings: Setting | Sequence[Setting], **kwargs) -> Figure:
    """:func:`plot_time` on a new Figure in the house style."""
    with _style.style():
        fig = _style.figure((11.0, 5.6))
        ax = plot_time(settings, ax=fig.subplots(), **kwargs)
        rows = len(ax.get_legend().get_texts())
        fig.set_figheight(max(5.6, 0.155 * rows + 0.9))  # the side legend never clipped
    return fig
