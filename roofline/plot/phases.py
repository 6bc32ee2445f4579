"""Figure 4, prefill against decode: arithmetic intensity against prompt length (prefill) and
against decode batch (one decode step), with each device's ridge P/β: prefill's projections
reuse each weight over T rows and cross the ridge after a few hundred tokens, while a decode
step reuses it over only B rows and reads the KV cache besides."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import evaluate, sweeps
from ..evaluate import Setting
from ..tables import level_name
from . import _style
from ._common import (as_list, crossovers, device_label, legend_below, log_axes, per_byte,
                      title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_prefill_intensity", "plot_decode_intensity", "phases_figure", "decode_batches"]

PROMPTS = np.geomspace(16, 2**17, 141)


_SHARED = "#777777"  # curves that do not depend on the device, when several are overlaid
# latent attention's decode forms in the legend (roofline.derive.mla.decode_step)
_FORM_WORDS = {"absorbed": "absorbed MLA: attention over the latent",
               "naive": "naive MLA: latent expanded each step"}


def _size(i: int, n: int, big: float, small: float, alone: float) -> float:
    """A line width or marker size: ``alone`` for one device; several: nested
    (:func:`roofline.plot._style.nested`), so that coinciding ones all show."""
    return alone if n == 1 else _style.nested(i, n, big, small)


def _ridges(ax: Axes, group: list[Setting]) -> None:
    """Each device's ridge; several: each in its colour and its own dash pattern, so that two
    ridges at nearly the same intensity both show."""
    several = len(group) > 1
    for i, s in enumerate(group):
        who = f"{device_label(s)} " if several else ""
        ax.axhline(s.ridge, color=_style.device_color(i) if several else "#444444", lw=1.2,
                   ls=_style.device_dashes(i) if several else "-.",
                   gid=f"ridge:{s.hardware.name}",
                   label=f"{who}ridge P/β = {per_byte(s.ridge)} ({s.dtype})")


def _cross(ax: Axes, x: float, y: float, color: str, label: str | None, gid: str,
           marker: str = "o", size: float = 6.0, zorder: float = 5) -> None:
    ax.plot([x], [y], marker, ms=size, mfc="white", mec=color, mew=1.5, zorder=zorder,
            label=label, gid=gid)


def plot_prefill_intensity(settings: Setting | Sequence[Setting],
                           prompts: Sequence[int] = (), tokens: np.ndarray | None = None,
                           ax: Axes | None = None) -> Axes:
    """Intensity of the whole prefill, its projections and its attention against T, with the
    ridge and the prompt lengths where the prefill and its projections reach it; markers at
    ``prompts``. Several devices: each in its colour (whole prefill solid, attention dotted);
    the projections, the same on every device, once in grey. Where devices' curves or markers
    coincide they are nested: the first device's line widest and its markers largest, the
    later ones narrower and smaller on top, so that each stays visible."""
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    n = len(group)
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
                    ls=":" if several else "-", lw=_size(i, n, 2.0, 1.0, 1.3),
                    zorder=2 + i / 10,
                    gid="prefill:attention" if i == 0 else f"prefill:attention:{s.hardware.name}",
                    label=f"{who}attention ({s.attention})")
        color = _style.device_color(i) if several else _style.KIND["total"]
        ax.plot(xs, sweeps.intensity(s, xs), color=color, lw=_size(i, n, 3.0, 1.4, 2.2),
                zorder=2.5 + i / 10, gid=f"prefill:{s.hardware.name}",
                label=f"{who}whole prefill ({s.attention} attention)")
        if prompts:
            ax.plot(prompts, sweeps.intensity(s, prompts), "D", color=color,
                    ms=_size(i, n, 7.0, 4.0, 4.5), mec="white" if several else color, mew=0.5,
                    zorder=5 + i / 10,
                    gid=f"prompts:{s.hardware.name}",
                    label=f"{who}T = {', '.join(f'{t:,}' for t in prompts)}")
    _ridges(ax, group)
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        color = _style.device_color(i) if several else "#000000"
        size, z = _size(i, n, 9.0, 5.0, 6.0), 6 + i / 10
        v = crossovers(s)[f"prefill_compute_bound_tokens.{s.attention}"]
        if v.exists:
            # where a cache level's traffic ends the regime, the HBM intensity drawn here stays
            # above the ridge: that end is marked on the curve, not on the ridge
            level = evaluate.attention_level(s, math.ceil(v.ends_at)) if v.ends_at else "hbm"
            cached = level not in ("compute", "hbm")
            drawn = v.ends_at is not None and xs[0] <= v.ends_at <= xs[-1]
            tail = "" if not v.ends_at else (
                f"; memory-bound again from {v.ends_at:,.0f}"
                + (f" (by {level_name(level)} traffic{': on the curve' if drawn else ''})"
                   if cached else ""))
            _cross(ax, v.value, s.ridge, color,
                   f"{who}prefill compute-bound from T = {v.value:,.0f}{tail}",
                   f"crossover:{s.hardware.name}:{v.name}", size=size, zorder=z)
            if drawn:
                y = sweeps.intensity(s, [v.ends_at])[0] if cached else s.ridge
                _cross(ax, v.ends_at, y, color, None,
                       f"crossover:{s.hardware.name}:{v.name}:ends", size=size, zorder=z)
        p = crossovers(s)["projection_compute_bound_tokens"]
        if p.exists:
            _cross(ax, p.value, s.ridge, color if several else _style.KIND["projection"],
                   f"{who}projections compute-bound from T = {p.value:,.0f}",
                   f"crossover:{s.hardware.name}:{p.name}", marker="s", size=size, zorder=z)
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)",
             "arithmetic intensity (FLOP/byte)", "Prefill: one sequence of T tokens")
    legend_below(ax)
    return ax


def decode_batches(settings: Setting | Sequence[Setting], context: int,
                   batches: Sequence[int] = ()) -> np.ndarray:
    """The decode panel's batches: 1 to the power of two past the largest of twice the largest
    batch any device holds at ``context``, the batches asked for and the critical batches
    (×1.2), 30 per decade: the axis no longer runs far past what any device holds."""
    group = as_list(settings)
    held = max(sweeps.max_batch(s, context) for s in group)
    critical = [crossovers(s)["decode_critical_batch"] for s in group]
    high = max([16.0, 2.0 * held, *batches, *(1.2 * v.value for v in critical if v.exists)])
    high = 2.0 ** np.ceil(np.log2(high))
    return np.geomspace(1, high, int(30 * np.log10(high)) + 1)


def _fit_line(ax: Axes, bs: np.ndarray, ys: np.ndarray, fits: np.ndarray, gid: str,
              **kwargs) -> None:
    """Solid where the batch fits in memory, dashed past it (the two stretches joined)."""
    past = ~fits | np.r_[~fits[1:], False]
    ax.plot(bs, np.where(fits, ys, np.nan), "-", gid=gid, **kwargs)
    kwargs.pop("label", None)
    ax.plot(bs, np.where(past, ys, np.nan), "--", gid=f"{gid}:does-not-fit", **kwargs)


def plot_decode_intensity(settings: Setting | Sequence[Setting], context: int,
                          batches: Sequence[int] = (), sweep: np.ndarray | None = None,
                          ax: Axes | None = None) -> Axes:
    """Intensity of one decode step (and of its projections) against the batch B at
    ``context`` cached tokens, with the ridge and the critical batch; markers at ``batches``.
    A latent-attention (MLA) model's step is drawn in both forms: the setting's solid
    (weight-absorbed by default), the other dotted. The curves do not depend on the device:
    several devices differ by their ridge (in their colour) and so by their critical batch, and by their memory. The curves are solid while
    the weights and B sequences' KV cache fit in a device's memory, dashed past the largest
    batch any device holds; each device's largest batch is a vertical line; a batch marker
    that fits on no device is hollow. Default B: :func:`decode_batches`."""
    from matplotlib.lines import Line2D

    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    n = len(group)
    bs = decode_batches(group, context, batches) if sweep is None else np.asarray(sweep, float)
    first = group[0]
    every = ", every device" if several else ""
    naive = first.architecture.mla and first.mla_decode == "naive"
    step = _SHARED if several else _style.KIND["decode.naive" if naive else "decode"]
    fits = np.any([sweeps.decode_fits(s, bs, context) for s in group], axis=0)
    _fit_line(ax, bs, sweeps.decode_intensity(first, bs, context, ("projection",)), fits,
              "decode:projection", color="#aaaaaa" if several else _style.KIND["projection"],
              label=f"projections of a decode step{every}")
    forms = sweeps.decode_forms(first)
    words = f" ({_FORM_WORDS[first.mla_decode]})" if len(forms) > 1 else ""
    _fit_line(ax, bs, sweeps.decode_intensity(first, bs, context), fits, "decode:step",
              color=step, lw=2.2,
              label=f"whole decode step{words} (context {context:,}){every}")
    for other in forms:  # latent attention: the step in its other form too, dotted
        if other.mla_decode == first.mla_decode:
            continue
        key = "decode.naive" if other.mla_decode == "naive" else "decode"
        ax.plot(bs, sweeps.decode_intensity(other, bs, context), ":", lw=2.0,
                color=_SHARED if several else _style.KIND[key],
                gid=f"decode:step:{other.mla_decode}",
                label=f"whole decode step ({_FORM_WORDS[other.mla_decode]}){every}")
    if batches:
        ys = sweeps.decode_intensity(first, batches, context)
        held = np.any([sweeps.decode_fits(s, batches, context) for s in group], axis=0)
        ax.plot(batches, ys, "*", ms=9, color=step, zorder=5, gid="batches",
                label=f"B = {', '.join(f'{b:,}' for b in batches)}")
        if not held.all():
            ax.plot(np.asarray(batches)[~held], ys[~held], "*", ms=9, color=step, mfc="white",
                    mew=1.2, zorder=5.5, gid="batches:does-not-fit",
                    label="hollow: " + ("fits on no device" if several else
                                        "does not fit in memory"))
    if not fits.all():
        ax.plot([], [], "--", color=step, label="dashed: does not fit in memory "
                "(weights + B × KV cache)" + (" on any device" if several else ""))
    _ridges(ax, group)
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        color = _style.device_color(i) if several else "#000000"
        held = sweeps.max_batch(s, context)
        if bs[0] <= held <= bs[-1]:
            ax.axvline(held, color=color, lw=1.0, ls=_style.device_dashes(i) if several
                       else (0, (2, 2)), gid=f"memory:{s.hardware.name}",
                       label=f"{who}memory holds B ≤ {held:,} at context {context:,}")
        elif held < bs[0]:
            ax.add_line(Line2D([], [], ls="none", marker="x", color=color,
                               label=f"{who}memory holds no sequence at context {context:,}",
                               gid=f"memory:{s.hardware.name}"))
        v = crossovers(s)["decode_critical_batch"]
        if v.exists:
            beyond = "; more than memory holds" if v.value > held else ""
            _cross(ax, v.value, s.ridge, color,
                   f"{who}critical batch B = {v.value:,.0f} (projections reach the ridge"
                   f"{beyond})", f"crossover:{s.hardware.name}:{v.name}", marker="s",
                   size=_size(i, n, 9.0, 5.0, 6.0), zorder=6 + i / 10)
    log_axes(ax, (bs[0] / 1.2, bs[-1] * 1.2),  # room for a marker at B = 1
             "decode batch B (sequences)", "arithmetic intensity (FLOP/byte)",
             f"Decode: one step of B sequences at context {context:,}")
    legend_below(ax)
    return ax
def phases_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (),
                  batches: Sequence[int] = (1,), context: int | None = None,
                  size: str | float = "page") -> Figure:
    """Prefill and decode side by side on one intensity scale, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches)."""
    group = as_list(settings)
    context = context or (max(prompts) if prompts else 2048)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 0.6 * w))
        left, right = fig.subplots(1, 2, sharey=True)
        plot_prefill_intensity(group, prompts, ax=left)
        plot_decode_intensity(group, context, batches, ax=right)
        right.tick_params(labelleft=True)
        rows = max(len(a.get_legend().get_texts()) for a in (left, right))
        fig.set_figheight(4.0 + 0.15 * rows)
        fig.suptitle(title("Prefill against decode", group))
    return fig
