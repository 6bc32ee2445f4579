"""Figure 3, attention traffic (log–log): one layer's HBM bytes against T for naive, tiled at
several SRAM sizes and ideal attention, with the T² and T²H²/M asymptotes (FlashAttention,
Theorem 2) drawn beside them; and the memory footprint of naive attention's score matrix (and of
the KV cache) beside the weights, against the device's memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import (as_list, binary_size, crossovers, device_label, legend_below, log_axes,
                      title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_traffic", "plot_footprint", "plot_window", "attention_figure",
           "DEFAULT_TOKENS"]

DEFAULT_TOKENS = np.geomspace(64, 2**20, 161)
_SRAM_SCALES = (0.25, 1.0, 4.0)  # tiled attention at these multiples of the device's SRAM
_DASHES = {0.25: (0, (1, 1)), 1.0: "-", 4.0: (0, (5, 2))}


def _kib(nbytes: float) -> str:
    """A size for a label, with the largest binary prefix: '228 KiB', '128 MiB'."""
    return binary_size(nbytes)


def plot_traffic(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                 srams: Sequence[float] | None = None, ax: Axes | None = None) -> Axes:
    """One layer's attention HBM bytes against T: naive, tiled (one device: at ``srams`` bytes
    per SM, default ¼×, 1× and 4× its own; several: each at its own, in its colour), tiled_fa2
    and ideal (one device), with the c·T² asymptotes of naive and (one device) of tiled."""
    ax = _style.axes(ax)
    group = as_list(settings)
    first = group[0]
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    ax.plot(xs, sweeps.attention_bytes(first, xs, "naive"), color=_style.MODE["naive"], lw=2,
            gid="traffic:naive",
            label="naive (S and P through HBM)")
    c = sweeps.attention_t2_coefficient(first, "naive")
    ax.plot(xs, c * xs**2, color="#000000", lw=0.8, ls=(0, (1, 1.5)), gid="asymptote:naive",
            label=f"naive's asymptote {c:.4g}·T² bytes: Θ(T²)")
    m = first.hardware.sram_per_sm
    several = len(group) > 1
    if m is not None and not several:
        sizes = [k * m for k in _SRAM_SCALES] if srams is None else list(srams)
        for size in sizes:
            scale = size / m
            own = np.isclose(scale, 1.0)
            ax.plot(xs, sweeps.attention_bytes(first, xs, "tiled", size),
                    gid=f"traffic:tiled:{size:g}",
                    color=_style.MODE["tiled"], lw=2 if own else 1.3,
                    ls=_DASHES.get(float(scale), "-") if srams is None else "-",
                    alpha=1.0 if own else 0.8,
                    label=f"tiled (FlashAttention), SRAM {_kib(size)}/SM"
                          + (f" ({device_label(first)})" if own else ""))
        c = sweeps.attention_t2_coefficient(first, "tiled")
        ax.plot(xs, c * xs**2, color="#000000", lw=0.8, ls=(0, (4, 1.5, 1, 1.5)),
                gid="asymptote:tiled",
                label=f"tiled's asymptote {c:.4g}·T² bytes at {_kib(m)}: Θ(T²H²/M)")
        ax.plot(xs, sweeps.attention_bytes(first, xs, "tiled_fa2"), gid="traffic:tiled_fa2",
                color=_style.MODE["tiled_fa2"],
                lw=1.3, label=f"tiled, FlashAttention-2 order, SRAM {_kib(m)}/SM")
    for i, s in enumerate(group):  # several devices: tiled at each one's SRAM, in its colour
        if several and s.hardware.sram_per_sm is not None:
            ax.plot(xs, sweeps.attention_bytes(s, xs, "tiled"), color=_style.device_color(i),
                    lw=1.6, gid=f"traffic:tiled:{s.hardware.name}",
                    label=f"{device_label(s)}: tiled (FlashAttention), SRAM "
                          f"{_kib(s.hardware.sram_per_sm)}/SM")
    ax.plot(xs, sweeps.attention_bytes(first, xs, "ideal"), color=_style.MODE["ideal"], lw=2,
            gid="traffic:ideal",
            label="ideal (Q, K, V read once, O written once): Θ(T)")
    panel = "HBM traffic, one layer, causal"
    if first.parallel:  # its heads (tp), its share of the rows (cp)
        panel += ", one device's share"
    if first.model.window != "none":
        panel += " (no window)"
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)",
             "HBM traffic of one layer's attention (bytes)", panel)
    legend_below(ax)
    return ax


def plot_footprint(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                   ax: Axes | None = None) -> Axes:
    """Device memory against T: the weights with one layer's naive score matrix, and with the
    KV cache; each device's capacity, and where each stops fitting (the crossovers)."""
    ax = _style.axes(ax)
    group = as_list(settings)
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    used = sweeps.footprint(group[0], xs)
    ax.plot(xs, used["weights"] + used["kv_cache"] + used["scores"], color=_style.MODE["naive"],
            lw=2, gid="footprint:scores", label="weights + KV cache + naive scores (one layer)")
    ax.plot(xs, used["weights"] + used["kv_cache"], color=_style.KIND["projection"], lw=2,
            gid="footprint:kv_cache",
            label="weights + KV cache (all layers)")
    ax.plot(xs, used["weights"], color="#555555", lw=1, ls="--", gid="footprint:weights",
            label=f"weights ({si(used['weights'][0], 'B')})")
    several = len(group) > 1
    for i, s in enumerate(group):
        color = _style.device_color(i)
        cap = s.hardware.memory_capacity
        ax.axhline(cap, color=color, lw=1.2, ls="-.", gid=f"capacity:{s.hardware.name}",
                   label=f"device memory{f' of {device_label(s)}' if several else ''}: "
                         f"{si(cap, 'B')}")
        values = crossovers(s)
        for k, name in enumerate(("naive_scores_exceed_memory_tokens",
                                  "kv_cache_exceeds_memory_tokens")):
            v = values[name]
            if v.exists and xs[0] <= v.value <= xs[-1]:
                what = "naive scores" if k == 0 else "KV cache"
                who = f"{device_label(s)}: " if several else ""
                ax.axvline(v.value, color=color, lw=1.0, ls=":" if k == 0 else (0, (1, 3)),
                           gid=f"crossover:{s.hardware.name}:{name}",
                           label=f"{who}{what} exceed{'s' if k else ''} memory at "
                                 f"T = {v.value:,.0f}")
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "device memory in use (bytes)",
             "Memory footprint beside the weights")
    caps = [s.hardware.memory_capacity for s in group]
    ax.set_ylim(used["weights"][0] / 2, max(caps) * 30)
    legend_below(ax)
    return ax


def plot_window(setting: Setting, tokens: np.ndarray | None = None,
                ax: Axes | None = None) -> Axes:
    """One layer's attention with and without the model's sliding window W against T: FLOPs
    (fused modes) and HBM bytes (the setting's mode), bending from T² to W·T beyond T = W
    (``window.flops``, ``window.hbm_bytes``; Mistral 7B, arXiv 2310.06825, §2)."""
    ax = _style.axes(ax)
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    w = setting.model.sliding_window
    mode = setting.attention
    _, nbytes = sweeps.window_attention(setting, xs, mode)
    # the fused modes' FLOPs are one count; ideal's is taken, which needs no SRAM size (a
    # device without one has no tiled mode)
    full_flops = sweeps.attention_flops(setting, xs, "ideal")
    ax.plot(xs, full_flops, color="#000000", lw=1.2, ls="--", gid="window:flops:global",
            label="FLOPs, global layer: Θ(T²)")
    ax.plot(xs, sweeps.window_attention(setting, xs, "ideal")[0], color="#000000", lw=2,
            gid="window:flops", label="FLOPs, windowed layer: Θ(W·T) beyond T = W")
    ax.plot(xs, sweeps.attention_bytes(setting, xs, mode), color=_style.MODE[mode], lw=1.2,
            ls="--", gid="window:bytes:global", label=f"HBM bytes ({mode}), global layer")
    ax.plot(xs, nbytes, color=_style.MODE[mode], lw=2, gid="window:bytes",
            label=f"HBM bytes ({mode}), windowed layer")
    ax.axvline(w, color="#555555", lw=1, ls=":", gid="window:W", label=f"W = {w:,} tokens")
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)",
             "one layer's attention (FLOP or bytes)", "Sliding window, one layer")
    legend_below(ax)
    return ax


def attention_figure(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                     srams: Sequence[float] | None = None, size: str | float = "page") -> Figure:
    """Traffic and footprint side by side, titled with the devices, model and data type; with
    a third panel for a model with a sliding window (:func:`plot_window`); ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches)."""
    group = as_list(settings)
    windowed = group[0].model.window != "none"
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 0.6 * w))
        panels = fig.subplots(1, 3 if windowed else 2)
        left, right = panels[0], panels[1]
        plot_traffic(group, tokens, srams, ax=left)
        plot_footprint(group, tokens, ax=right)
        if windowed:
            plot_window(group[0], tokens, ax=panels[2])
        rows = max(len(a.get_legend().get_texts()) for a in panels)
        fig.set_figheight(4.0 + 0.15 * rows)  # the panels keep their height above the legends
        batch = f", batch {group[0].batch}" if group[0].batch != 1 else ", one sequence"
        fig.suptitle(title("Attention", group, attention=False) .replace(")", f"{batch})", 1))
    return fig
