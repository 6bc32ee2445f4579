"""Figure 4, prefill against decode: arithmetic intensity against prompt length (prefill) and
against decode batch (one decode step), with each device's ridge P/β: prefill's projections
reuse each weight over T rows and cross the ridge after a few hundred tokens, while a decode
step reuses it over only B rows and reads the KV cache besides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from . import _style
from ._common import (as_list, crossovers, device_label, legend_below, log_axes, per_byte,
                      title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_prefill_intensity", "plot_decode_intensity", "phases_figure"]

PROMPTS = np.geomspace(16, 2**17, 141)
BATCHES = np.geomspace(1, 4096, 121)


_SHARED = "#777777"  # curves that do not depend on the device, when several are overlaid


def _ridges(ax: Axes, group: list[Setting]) -> None:
    several = len(group) > 1
    for i, s in enumerate(group):
        who = f"{device_label(s)} " if several else ""
        ax.axhline(s.ridge, color=_style.device_color(i) if several else "#444444", lw=1.2,
                   ls="-.", gid=f"ridge:{s.hardware.name}",
                   label=f"{who}ridge P/β = {per_byte(s.ridge)} ({s.dtype})")


def _cross(ax: Axes, x: float, y: float, color: str, label: str | None, gid: str,
           marker: str = "o") -> None:
    ax.plot([x], [y], marker, ms=6, mfc="white", mec=color, mew=1.5, zorder=5, label=label,
            gid=gid)


def plot_prefill_intensity(settings: Setting | Sequence[Setting],
                           prompts: Sequence[int] = (), tokens: np.ndarray | None = None,
                           ax: Axes | None = None) -> Axes:
    """Intensity of the whole prefill, its projections and its attention against T, with the
    ridge and the prompt lengths where the prefill and its projections reach it; markers at
    ``prompts``. Several devices: each in its colour (whole prefill solid, attention dotted);
    the projections, the same on every device, once in grey."""
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    xs = PROMPTS if tokens is None else np.asarray(tokens, dtype=float)
    first = group[0]
    ax.plot(xs, sweeps.intensity(first, xs, ("projection",)),
            color=_SHARED if several else _style.KIND["projection"], gid="prefill:projection",
            lw=1.3 if several else 1.6,
            label="projections (QKV, O, MLP)" + (", every device" if several else ""))
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        if several or i == 0:
            ax.plot(xs, sweeps.intensity(s, xs, ("attention",)),
                    color=_style.device_color(i) if several else _style.KIND["attention"],
                    ls=":" if several else "-", lw=1.3,
                    gid="prefill:attention" if i == 0 else f"prefill:attention:{s.hardware.name}",
                    label=f"{who}attention ({s.attention})")
        color = _style.device_color(i) if several else _style.KIND["total"]
        ax.plot(xs, sweeps.intensity(s, xs), color=color, lw=2.2, gid=f"prefill:{s.hardware.name}",
                label=f"{who}whole prefill ({s.attention} attention)")
        if prompts:
            ax.plot(prompts, sweeps.intensity(s, prompts), "D", ms=4.5, color=color, zorder=5,
                    gid=f"prompts:{s.hardware.name}",
                    label=f"{who}T = {', '.join(f'{t:,}' for t in prompts)}")
    _ridges(ax, group)
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        color = _style.device_color(i) if several else "#000000"
        v = crossovers(s)[f"prefill_compute_bound_tokens.{s.attention}"]
        if v.exists:
            tail = f"; memory-bound again from {v.ends_at:,.0f}" if v.ends_at else ""
            _cross(ax, v.value, s.ridge, color,
                   f"{who}prefill compute-bound from T = {v.value:,.0f}{tail}",
                   f"crossover:{s.hardware.name}:{v.name}")
            if v.ends_at and xs[0] <= v.ends_at <= xs[-1]:
                _cross(ax, v.ends_at, s.ridge, color, None,
                       f"crossover:{s.hardware.name}:{v.name}:ends")
        p = crossovers(s)["projection_compute_bound_tokens"]
        if p.exists:
            _cross(ax, p.value, s.ridge, color if several else _style.KIND["projection"],
                   f"{who}projections compute-bound from T = {p.value:,.0f}",
                   f"crossover:{s.hardware.name}:{p.name}", marker="s")
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)",
             "arithmetic intensity (FLOP/byte)", "Prefill: one sequence of T tokens")
    legend_below(ax)
    return ax


def plot_decode_intensity(settings: Setting | Sequence[Setting], context: int,
                          batches: Sequence[int] = (), sweep: np.ndarray | None = None,
                          ax: Axes | None = None) -> Axes:
    """Intensity of one decode step (and of its projections) against the batch B at
    ``context`` cached tokens, with the ridge and the critical batch; markers at ``batches``.
    The curves do not depend on the device: several devices differ by their ridge (in their
    colour) and so by their critical batch."""
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    bs = BATCHES if sweep is None else np.asarray(sweep, dtype=float)
    first = group[0]
    every = ", every device" if several else ""
    step = _SHARED if several else _style.KIND["decode"]
    ax.plot(bs, sweeps.decode_intensity(first, bs, context, ("projection",)),
            color="#aaaaaa" if several else _style.KIND["projection"],
            label=f"projections of a decode step{every}", gid="decode:projection")
    ax.plot(bs, sweeps.decode_intensity(first, bs, context), color=step, gid="decode:step",
            lw=2.2, label=f"whole decode step (context {context:,}){every}")
    if batches:
        ax.plot(batches, sweeps.decode_intensity(first, batches, context), "*", ms=9,
                color=step, zorder=5, label=f"B = {', '.join(f'{b:,}' for b in batches)}")
    _ridges(ax, group)
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        v = crossovers(s)["decode_critical_batch"]
        if v.exists:
            _cross(ax, v.value, s.ridge, _style.device_color(i) if several else "#000000",
                   f"{who}critical batch B = {v.value:,.0f} (projections reach the ridge)",
                   f"crossover:{s.hardware.name}:{v.name}", marker="s")
    log_axes(ax, (bs[0] / 1.2, bs[-1] * 1.2),  # room for a marker at B = 1
             "decode batch B (sequences)", "arithmetic intensity (FLOP/byte)",
             f"Decode: one step of B sequences at context {context:,}")
    legend_below(ax)
    return ax


def phases_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (),
                  batches: Sequence[int] = (1,), context: int | None = None) -> Figure:
    """Prefill and decode side by side on one intensity scale."""
    group = as_list(settings)
    context = context or (max(prompts) if prompts else 2048)
    with _style.style():
        fig = _style.figure(_style.WIDE)
        left, right = fig.subplots(1, 2, sharey=True)
        plot_prefill_intensity(group, prompts, ax=left)
        plot_decode_intensity(group, context, batches, ax=right)
        right.tick_params(labelleft=True)
        rows = max(len(a.get_legend().get_texts()) for a in (left, right))
        fig.set_figheight(4.0 + 0.15 * rows)
        fig.suptitle(title("Prefill against decode", group))
    return fig
