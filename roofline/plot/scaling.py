"""The scaling figure: prefill time against the tensor-parallel degree, the communication share
shaded, and the parallel efficiency beside it, for several prompt lengths; the crossovers of
tensor parallelism drawn as on the time figure (:mod:`.time`): each degree crossover
(``tp_fits_memory_degree``, ``tp_communication_dominates_degree``) a dotted vertical line on
both panels, tagged and keyed in the efficiency panel's legend (the degrees whose memory does
not hold a device's share shaded), and the prompt length above which the all-reduces are
hidden under the compute (``tp_allreduce_hidden_tokens``) at each degree in a note under the
panels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..evaluate import CrossoverValue, Setting
from ..evaluate.parallel import DEGREES, Scaling, scaling
from . import _style

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_scaling_time", "plot_efficiency", "scaling_figure", "scaling_crossovers",
           "DEGREE_CROSSOVERS"]

# The crossovers in the degree, each with its tag and its words on the figure.
DEGREE_CROSSOVERS = {
    "tp_fits_memory_degree": ("a", "a device's weights and KV cache fit from N = {:.3g} "
                                   "(shaded: they do not)"),
    "tp_communication_dominates_degree": ("b", "all-reduces outlast the device's roofline "
                                               "time beyond N = {:.3g}"),
}
_LINE = "#7f7f7f"
_REACH = 4  # a degree crossover up to this many times the largest degree widens the axis


def scaling_crossovers(s: Setting, degrees: Sequence[int] = DEGREES
                       ) -> tuple[dict[str, CrossoverValue], dict[int, CrossoverValue]]:
    """The degree crossovers of ``s`` (:data:`DEGREE_CROSSOVERS`, by name), and at each degree
    above 1 the prompt length above which its all-reduces are hidden under its compute."""
    from ..evaluate import crossover_value

    lines = {name: crossover_value(s, name) for name in DEGREE_CROSSOVERS}
    hidden = {n: crossover_value(replace(s, tp=n), "tp_allreduce_hidden_tokens")
              for n in sorted(set(degrees)) if n > 1}
    return lines, hidden


def _drawn(lines: dict[str, CrossoverValue], low: float, high: float) -> dict[str, float]:
    """The degree crossovers that exist and lie within [``low``, ``high``], by name."""
    return {name: v.value for name, v in lines.items()
            if v.exists and v.value is not None and low <= v.value <= high}


def _axis_end(degrees: Sequence[int], lines: dict[str, CrossoverValue]) -> float:
    """The x-axis' right end: the largest degree, or a degree crossover just beyond it (up to
    :data:`_REACH` times), with a margin."""
    top = max(degrees)
    near = [v for v in _drawn(lines, 0, _REACH * top).values() if v > top]
    return 1.25 * max([top, *near])


def _draw_lines(ax: Axes, at: dict[str, float], low: float, tags: bool) -> None:
    """Each degree crossover a dotted vertical line (gid ``crossover:NAME``), its tag at the top
    where ``tags``; left of where the memory fits shaded."""
    from matplotlib.transforms import blended_transform_factory

    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for name, x in at.items():
        tag = DEGREE_CROSSOVERS[name][0]
        ax.axvline(x, color=_LINE, ls=":", lw=1.2, gid=f"crossover:{name}")
        if name == "tp_fits_memory_degree" and x > low:
            ax.axvspan(low, x, color="#000000", alpha=0.06, lw=0, gid="does-not-fit")
        if tags:
            ax.text(x, 0.99, tag, transform=trans, ha="center", va="top", fontsize=7,
                    color=_LINE, bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                                       "ec": _LINE, "lw": 0.5})


def _note(lines: dict[str, CrossoverValue], hidden: dict[int, CrossoverValue],
          at: dict[str, float]) -> str:
    """The crossovers in words under the panels: the hidden prompt length at each degree, and
    the degree crossovers not drawn (past the axis, or none)."""
    parts = []
    shown = [f"T = {v.value:,.0f} tokens at N = {n}" if v.exists else f"every T at N = {n}"
             if v.reason.startswith("always") else f"no T at N = {n}"
             for n, v in hidden.items() if v.evaluated]
    if shown:
        parts.append("The all-reduces take less time than the compute (hidden when overlapped) "
                     "from " + ", ".join(shown))
    for name, v in lines.items():
        if name in at:
            continue
        words = DEGREE_CROSSOVERS[name][1].split(" (")[0]
        if v.exists and v.value is not None and name == "tp_fits_memory_degree" \
                and v.value <= 1:
            parts.append(f"One device holds the weights and KV cache (N* = {v.value:.3g})")
        elif v.exists and v.value is not None:
            parts.append(words.format(v.value)[0].upper() + words.format(v.value)[1:]
                         + " (past the axis)")
        elif v.evaluated:
            head = words.split(" from ")[0].split(" beyond ")[0]
            parts.append(head[0].upper() + head[1:] + f": {v.reason}")
    return ". ".join(parts) + ("." if parts else "")


def plot_scaling_time(data: Scaling, ax: Axes | None = None,
                      lines: dict[str, CrossoverValue] | None = None) -> Axes:
    """Prefill time against the degree, one line per prompt length; the communication part of
    each shaded below its line; the degree crossovers ``lines`` (:func:`scaling_crossovers`)
    that lie on the axis drawn as tagged dotted lines."""
    from matplotlib.ticker import LogFormatterSciNotation

    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        color = _style.device_color(i)
        times = [data.time_s[n][i] for n in data.degrees]
        compute = [data.time_s[n][i] - data.communication_s[n][i] for n in data.degrees]
        ax.plot(data.degrees, times, marker="o", color=color,
                label=f"T = {_style.tokens_label(t)}", gid=f"time:{t}")
        ax.fill_between(data.degrees, compute, times, color=color, alpha=0.25, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    # times within a decade or two: minor ticks between the powers of ten labelled too (2, 3,
    # 4, 6; matplotlib labels none past one decade, leaving a single number on the axis)
    ax.yaxis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False,
                                                         minor_thresholds=(2, 0.5)))
    _degree_axis(ax, data, lines or {})
    ax.set_ylabel("prefill time (s); shaded: its communication")
    ax.legend(title="prompt length", fontsize=8, title_fontsize=8)
    return ax


def _degree_axis(ax: Axes, data: Scaling, lines: dict[str, CrossoverValue]) -> None:
    """The degrees' ticks and label, the axis widened to a degree crossover just past them, and
    the crossovers on it drawn."""
    low, high = min(data.degrees) / 1.25, _axis_end(data.degrees, lines)
    ax.set_xlim(low, high)
    from matplotlib.ticker import NullLocator

    ax.set_xticks(list(data.degrees), [str(n) for n in data.degrees])
    ax.xaxis.set_minor_locator(NullLocator())  # the degrees alone (a log time axis keeps its)
    _draw_lines(ax, _drawn(lines, low, high), low, tags=True)
    ax.set_xlabel("tensor-parallel devices N")


def plot_efficiency(data: Scaling, ax: Axes | None = None,
                    lines: dict[str, CrossoverValue] | None = None) -> Axes:
    """Parallel efficiency t(1)/(N·t(N)) against the degree, one line per prompt length; the
    degree crossovers ``lines`` on the axis drawn and keyed in a legend."""
    from matplotlib.lines import Line2D

    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        ax.plot(data.degrees, [data.efficiency[n][i] for n in data.degrees], marker="o",
                color=_style.device_color(i), label=f"T = {_style.tokens_label(t)}",
                gid=f"efficiency:{t}")
    ax.set_xscale("log", base=2)
    lines = lines or {}
    _degree_axis(ax, data, lines)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("parallel efficiency t(1)/(N·t(N))")
    drawn = _drawn(lines, *ax.get_xlim())
    if drawn:
        handles = [Line2D([], [], color=_LINE, ls=":", lw=1.2) for _ in drawn]
        labels = [f"[{DEGREE_CROSSOVERS[n][0]}] " + DEGREE_CROSSOVERS[n][1].format(x)
                  for n, x in drawn.items()]
        ax.legend(handles, labels, loc="lower left", fontsize=7.5, title="crossovers",
                  title_fontsize=7.5)
    return ax


def scaling_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int],
                   degrees: Sequence[int] = DEGREES, size: str | float = "page") -> Figure:
    """Both panels for one setting, on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches); an InputError for
    several: the figure's lines are one device's degrees 1–8."""
    from ..errors import InputError
    from ._common import plain, splits

    group = [settings] if isinstance(settings, Setting) else list(settings)
    if len(group) != 1:
        raise InputError("hardware", "the scaling figure takes one device",
                         ", ".join(s.hardware.name for s in group))
    s, = group
    try:
        data = scaling(s, prompts, degrees)
    except InputError as err:  # a degree the figure chose, not one given: said so
        if err.option != "tp":
            raise
        raise InputError("scaling", f"the figure runs the tensor-parallel degrees "
                         f"{', '.join(map(str, degrees))}, and at {err.value}: {err.rule}",
                         err.value) from None
    lines, hidden = scaling_crossovers(s, data.degrees)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 0.6 * w))
        left, right = fig.subplots(1, 2)
        plot_scaling_time(data, ax=left, lines=lines)
        plot_efficiency(data, ax=right, lines=lines)
        overlap = "overlapped" if s.overlap else "not overlapped"
        others = "".join(f", {d}" for d in splits(s, tp=False))
        fig.suptitle(f"{plain(s.model.name)} on {plain(s.hardware.name)} ({s.dtype}, "
                     f"{s.attention} attention{others}): tensor parallelism, all-reduces "
                     f"{overlap}")
        note = _note(lines, hidden, _drawn(lines, *left.get_xlim()))
        if note:
            import textwrap

            fig.supxlabel("\n".join(textwrap.wrap(note, 190)), fontsize=7.5, color="#555555",
                          gid="crossover-note")
    return fig
