"""The scaling figure: prefill time against the tensor-parallel degree, the communication share
shaded, and the parallel efficiency beside it, for several prompt lengths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..evaluate import Setting
from ..evaluate.parallel import DEGREES, Scaling, scaling
from . import _style

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_scaling_time", "plot_efficiency", "scaling_figure"]


def plot_scaling_time(data: Scaling, ax: Axes | None = None) -> Axes:
    """Prefill time against the degree, one line per prompt length; the communication part of
    each shaded below its line."""
    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        color = _style.device_color(i)
        times = [data.time_s[n][i] for n in data.degrees]
        compute = [data.time_s[n][i] - data.communication_s[n][i] for n in data.degrees]
        ax.plot(data.degrees, times, marker="o", color=color,
                label=f"T = {_style.tokens_label(t)}")
        ax.fill_between(data.degrees, compute, times, color=color, alpha=0.25, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(list(data.degrees), [str(n) for n in data.degrees])
    ax.set_xlabel("tensor-parallel devices N")
    ax.set_ylabel("prefill time (s); shaded: its communication")
    ax.legend()
    return ax


def plot_efficiency(data: Scaling, ax: Axes | None = None) -> Axes:
    """Parallel efficiency t(1)/(N·t(N)) against the degree, one line per prompt length."""
    ax = _style.axes(ax)
    for i, t in enumerate(data.prompts):
        ax.plot(data.degrees, [data.efficiency[n][i] for n in data.degrees], marker="o",
                color=_style.device_color(i), label=f"T = {_style.tokens_label(t)}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(data.degrees), [str(n) for n in data.degrees])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("tensor-parallel devices N")
    ax.set_ylabel("parallel efficiency t(1)/(N·t(N))")
    return ax


def scaling_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int],
                   degrees: Sequence[int] = DEGREES) -> Figure:
    """Both panels for the first setting, on a new Figure in the house style."""
    s = settings if isinstance(settings, Setting) else settings[0]
    data = scaling(s, prompts, degrees)
    with _style.style():
        fig = _style.figure(_style.WIDE)
        left, right = fig.subplots(1, 2)
        plot_scaling_time(data, ax=left)
        plot_efficiency(data, ax=right)
        overlap = "overlapped" if s.overlap else "not overlapped"
        fig.suptitle(f"{s.model.name} on {s.hardware.name} ({s.dtype}, {s.attention} "
                     f"attention): tensor parallelism, all-reduces {overlap}")
    return fig
