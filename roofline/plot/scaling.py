"""The scaling figure: prefill time against the tensor-parallel degree, the communication share
shaded, and the parallel efficiency beside it (below it at a column's width), for several
prompt lengths; the crossovers of tensor parallelism drawn as on the time figure (:mod:`.time`).

Each degree crossover (``tp_fits_memory_degree``, ``tp_communication_dominates_degree``) is
drawn at each plotted prompt length: both take a prompt length T (the KV cache held, the
all-reduces' size), which :func:`roofline.evaluate.crossover_value` sets to the model's context
length, so the ``crossover`` command's value holds at that T only. :func:`degree_crossovers`
evaluates each with the same function at each prompt length instead. Each is a vertical line in
its prompt length's colour (dotted: memory; dashed: communication) on both panels, tagged with
its letter and prompt length in the efficiency panel; the degrees whose memory does not hold a
device's share are shaded (one shade per prompt length, darker where none fits). The prompt
length above which the all-reduces are hidden under the compute
(``tp_allreduce_hidden_tokens``, at each degree) and every value in words go in a note under
the panels.

The degree axis ends just past the largest degree drawn: a crossover beyond it is given in
the note as a number instead of widening the axis to it, because the figure has no data
there (widening to a crossover at N = 28 left half of each panel empty)."""

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
           "degree_crossovers", "DEGREE_CROSSOVERS"]

# The crossovers in the degree: each with its tag, its line style and its words in the note
# (what is left when it never happens).
DEGREE_CROSSOVERS = {
    "tp_fits_memory_degree": ("a", ":", "a device's weights and KV cache fit from N =",
                              "no degree holds a device's weights and KV cache"),
    "tp_communication_dominates_degree": (
        "b", "--", "the all-reduces outlast the device's roofline time beyond N =",
        "the all-reduces stay shorter than the device's roofline time at every degree"),
}
MARKERS = ("o", "s", "^", "D", "v", "P")  # each prompt length's marker, with its colour
_MARGIN = 1.25  # the degree axis: this factor beyond the smallest and largest degree

ByPrompt = dict[int, dict[str, CrossoverValue]]


def scaling_crossovers(s: Setting, degrees: Sequence[int] = DEGREES
                       ) -> tuple[dict[str, CrossoverValue], dict[int, CrossoverValue]]:
    """The degree crossovers of ``s`` (:data:`DEGREE_CROSSOVERS`, by name) at the model's
    context length (the ``crossover`` command's), and at each degree above 1 the prompt length
    above which its all-reduces are hidden under its compute."""
    from ..evaluate import crossover_value

    lines = {name: crossover_value(s, name) for name in DEGREE_CROSSOVERS}
    hidden = {n: crossover_value(replace(s, tp=n), "tp_allreduce_hidden_tokens")
              for n in sorted(set(degrees)) if n > 1}
    return lines, hidden


def degree_crossovers(s: Setting, prompts: Sequence[int]) -> ByPrompt:
    """Each degree crossover of ``s`` at each prompt length, by prompt length and name:
    :func:`roofline.evaluate.crossover_value` evaluates a crossover in the degree at T = the
    model's context length (``model.max_position``), so each is evaluated here on the setting
    whose model's context length is that prompt length (at the context length itself, the
    ``crossover`` command's value)."""
    from ..evaluate import crossover_value

    out = {}
    for t in sorted(set(prompts)):
        at = replace(s, model=replace(s.model, max_position=int(t)))
        out[int(t)] = {name: crossover_value(at, name) for name in DEGREE_CROSSOVERS}
    return out


def _drawn(v: CrossoverValue, low: float, high: float) -> bool:
    return v.exists and v.value is not None and low <= v.value <= high


def _number(x: float) -> str:
    """A degree or a count in plain digits: 1.74, 13.7, 916, 1,234."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _short(t: int) -> str:
    """A prompt length in a tag: 128, 2k, 32k (k = 1,024, as the issue's ticks), 1,000."""
    return f"{t // 1024}k" if t >= 1024 and t % 1024 == 0 else f"{t:,}"


def _limits(data: Scaling) -> tuple[float, float]:
    return min(data.degrees) / _MARGIN, max(data.degrees) * _MARGIN


def _draw_lines(ax: Axes, data: Scaling, lines: ByPrompt) -> None:
    """Each degree crossover on the axis a vertical line in its prompt length's colour (gid
    ``crossover:NAME:T``); left of where the memory fits shaded (gid ``does-not-fit``)."""
    low, high = _limits(data)
    for i, t in enumerate(data.prompts):
        for name, v in lines.get(t, {}).items():
            if not _drawn(v, low, high):
                continue
            ax.axvline(v.value, color=_style.device_color(i), ls=DEGREE_CROSSOVERS[name][1],
                       lw=1.1, gid=f"crossover:{name}:{t}")
            if name == "tp_fits_memory_degree" and v.value > low:
                ax.axvspan(low, v.value, color="#000000", alpha=0.04, lw=0, gid="does-not-fit")


def _draw_tags(ax: Axes, data: Scaling, lines: ByPrompt) -> None:
    """Each drawn crossover's tag ("a 2k": the crossover and its prompt length) on its line,
    one row per prompt length: the memory's at the foot of the panel (at the few degrees where
    a device's share stops fitting the efficiency is high), the communication's at its top
    (beyond that degree the all-reduces outlast the compute: the efficiency is low)."""
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    low, high = _limits(data)
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for i, t in enumerate(data.prompts):
        for name, v in lines.get(t, {}).items():
            if not _drawn(v, low, high):
                continue
            foot = name == "tp_fits_memory_degree"
            shift = ScaledTranslation(0, (1 if foot else -1) * (2 + 11 * i) / 72,
                                      ax.figure.dpi_scale_trans)
            ax.text(v.value, 0 if foot else 1, f"{DEGREE_CROSSOVERS[name][0]} {_short(t)}",
                    transform=trans + shift, ha="center", va="bottom" if foot else "top",
                    fontsize=7, color="#222222", zorder=4, gid=f"tag:{name}:{t}",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "lw": 1.0,
                          "ec": _style.device_color(i)})


def _in_words(name: str, values: dict[int, CrossoverValue], high: float) -> str:
    """One degree crossover at each prompt length, in a sentence of the note: its values (those
    past the axis said so), the prompt lengths where one device holds the memory, and those
    where it never happens, in words."""
    tag, _, words, never_words = DEGREE_CROSSOVERS[name]
    shown, past, one, never = [], 0, [], []
    for t, v in values.items():
        if v.exists and v.value is not None and name == "tp_fits_memory_degree" \
                and v.value <= 1:
            one.append(f"{t:,}")
        elif v.exists and v.value is not None:
            past += v.value > high
            shown.append(f"{_number(v.value)}{'*' * (v.value > high)} at T = {t:,}")
        elif v.evaluated:
            never.append(f"{t:,}")
    parts = []
    if shown:
        beyond = f"past the axis (N > {high:g}), not drawn"
        if past == len(shown):
            parts.append(f"{words} " + ", ".join(shown).replace("*", "") + f", {beyond}")
        else:
            parts.append(f"{words} " + ", ".join(shown) + (f" (*: {beyond})" if past else ""))
        if name == "tp_fits_memory_degree" and past < len(shown):
            parts[-1] += "; shaded: they do not"
    if one:
        parts.append("one device holds the weights and KV cache at T = " + ", ".join(one))
    if never:
        parts.append(f"{never_words} at T = {', '.join(never)}")
    text = "; ".join(parts)
    return f"({tag}) {text[:1].upper()}{text[1:]}." if parts else ""


def _note(data: Scaling, lines: ByPrompt, hidden: dict[int, CrossoverValue]) -> str:
    """The crossovers in words under the panels: each degree crossover at each prompt length
    (those past the axis too), and the hidden prompt length at each degree."""
    high = _limits(data)[1]
    parts = ["Shaded under each time: its communication. Crossovers at each prompt length T, "
             "in its colour:"]
    for name in DEGREE_CROSSOVERS:
        words = _in_words(name, {t: lines[t][name] for t in data.prompts if t in lines}, high)
        if words:
            parts.append(words)
    shown = [f"T = {v.value:,.0f} tokens at N = {n}" for n, v in hidden.items() if v.exists]
    for head, start in (("every", "always"), ("no", "never")):
        at = [str(n) for n, v in hidden.items() if v.evaluated and not v.exists
              and v.reason.startswith(start)]
        if at:
            shown.append(f"{head} T at N = {', '.join(at)}")
    if shown:
        parts.append("The all-reduces take less time than the compute (hidden when overlapped) "
                     "from " + ", ".join(shown) + ".")
    return " ".join(parts)


def _time_ticks(ax: Axes) -> None:
    """Seconds in plain numbers with a prefix (1 ms, 20 ms); within two decades the 2s and 5s
    between the powers of ten labelled too, within three the 3s (matplotlib labels none past
    one decade, which left a single number on the axis)."""
    from matplotlib.ticker import EngFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_formatter(EngFormatter(unit="s", sep=" "))
    low, high = ax.get_ylim()
    subs = (2, 5) if high / low < 100 else (3,) if high / low < 1000 else None
    ax.yaxis.set_minor_locator(LogLocator(subs=subs or "auto"))
    ax.yaxis.set_minor_formatter(EngFormatter(unit="s", sep=" ") if subs else NullFormatter())


def plot_scaling_time(data: Scaling, ax: Axes | None = None, lines: ByPrompt | None = None,
                      legend: bool = True) -> Axes:
    """Prefill time against the degree, one line per prompt length (its colour and marker);
    the communication part of each shaded below its line; the degree crossovers ``lines``
    (:func:`degree_crossovers`, by prompt length) that lie on the axis drawn as lines; the
    prompt lengths keyed in a legend above the panel (``legend``)."""
    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        color = _style.device_color(i)
        times = [data.time_s[n][i] for n in data.degrees]
        compute = [data.time_s[n][i] - data.communication_s[n][i] for n in data.degrees]
        ax.plot(data.degrees, times, marker=MARKERS[i % len(MARKERS)], ms=4.5, color=color,
                label=f"T = {_style.tokens_label(t)}", gid=f"time:{t}")
        ax.fill_between(data.degrees, compute, times, color=color, alpha=0.25, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _degree_axis(ax, data, lines or {})
    _time_ticks(ax)
    ax.set_ylabel("prefill time")  # the unit on each tick (1 ms), as in the time figure
    if legend:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(data.prompts),
                  title="prompt length", borderaxespad=0.3, columnspacing=1.2)
    return ax


def _degree_axis(ax: Axes, data: Scaling, lines: ByPrompt) -> None:
    """The degrees' ticks and label, the axis just past them, and the crossovers on it
    drawn."""
    from matplotlib.ticker import NullLocator

    ax.set_xlim(*_limits(data))
    ax.set_xticks(list(data.degrees), [str(n) for n in data.degrees])
    ax.xaxis.set_minor_locator(NullLocator())  # the degrees alone (a log time axis keeps its)
    _draw_lines(ax, data, lines)
    ax.set_xlabel("tensor-parallel devices N")


def plot_efficiency(data: Scaling, ax: Axes | None = None,
                    lines: ByPrompt | None = None) -> Axes:
    """Parallel efficiency t(1)/(N·t(N)) against the degree, one line per prompt length; the
    degree crossovers ``lines`` (by prompt length) on the axis drawn and tagged."""
    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        ax.plot(data.degrees, [data.efficiency[n][i] for n in data.degrees], ms=4.5,
                marker=MARKERS[i % len(MARKERS)], color=_style.device_color(i),
                label=f"T = {_style.tokens_label(t)}", gid=f"efficiency:{t}")
    ax.set_xscale("log", base=2)
    lines = lines or {}
    _degree_axis(ax, data, lines)
    _draw_tags(ax, data, lines)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("efficiency t(1)/(N·t(N))")
    return ax


def scaling_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int],
                   degrees: Sequence[int] = DEGREES, size: str | float = "page") -> Figure:
    """Both panels for one setting, on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches; narrower than
    :data:`roofline.plot._style.NARROW` the panels are stacked, sharing the degree axis); the
    crossovers in words in a note under them. An InputError for several settings: the
    figure's lines are one device's degrees 1–8."""
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
    _, hidden = scaling_crossovers(s, data.degrees)
    lines = degree_crossovers(s, data.prompts)
    w = _style.width(size)
    narrow = _style.narrow(size)
    with _style.style():
        fig = _style.figure((w, 1.45 * w if narrow else 0.56 * w))
        if narrow:
            top, bottom = fig.subplots(2, 1, sharex=True)
        else:
            top, bottom = fig.subplots(1, 2)
        plot_scaling_time(data, ax=top, lines=lines)
        plot_efficiency(data, ax=bottom, lines=lines)
        if narrow:
            top.set_xlabel("")
        overlap = "overlapped" if s.overlap else "not overlapped"
        others = "".join(f", {d}" for d in splits(s, tp=False))
        fig.suptitle(_style.wrap(f"{plain(s.model.name)} on {plain(s.hardware.name)} "
                                 f"({s.dtype}, {s.attention} attention{others}): tensor "
                                 f"parallelism, all-reduces {overlap}", w, 8.5))
        fig.supxlabel(_style.wrap(_note(data, lines, hidden), 0.92 * w, 7), fontsize=7,
                      color="#444444", gid="crossover-note", ha="left", x=0.02)
    return fig
