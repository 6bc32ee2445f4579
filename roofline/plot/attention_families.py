"""The third panel of the attention figure for this year's families: one layer's attention work
against T where it stops growing as T² — a hybrid's linear-attention layer beside a
full-attention one (Θ(T) against Θ(T²): Gated DeltaNet, arXiv 2412.06464), and sparse
attention's parts beside dense latent attention (the top-k attention Θ(k·T) beyond T = k, its
indexer Θ(T²) with a small constant: DeepSeek-V3.2-Exp's report, §3). The sliding window's
panel is :func:`roofline.plot.attention.plot_window`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from . import _style
from ._common import SPACING, legend_note, log_axes, panel_title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_linear", "plot_sparse"]


def _dense(setting: Setting, xs: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and HBM bytes of one full (dense, causal) attention layer in ``mode``."""
    return (sweeps.attention_flops(setting, xs, "ideal"),
            sweeps.attention_bytes(setting, xs, mode))


def _axes(ax: Axes, xs: np.ndarray, name: str) -> None:
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "FLOP or bytes", name)
    _style.short_log_ticks(ax.xaxis)
    panel_title(ax, name)
    _style.plain_ticks(ax.yaxis)


def plot_linear(setting: Setting, xs: np.ndarray, ax: Axes | None = None) -> Axes:
    """One Gated DeltaNet layer's chunked recurrence (``linear_attention.recurrence``: FLOPs,
    and HBM bytes of FLA's kernels, or ideal in the ``ideal`` mode) beside one full-attention
    layer's attention in the setting's mode: Θ(T) against Θ(T²)."""
    ax = _style.axes(ax)
    mode = setting.attention
    full_flops, full_bytes = _dense(setting, xs, mode)
    flops, nbytes = sweeps.linear_attention(setting, xs, mode)
    ax.plot(xs, full_flops, color="#000000", lw=1.2, ls="--", gid="linear:flops:full",
            label="FLOPs, full-attention layer: Θ(T²)")
    (f,) = ax.plot(xs, flops, color="#000000", lw=2, gid="linear:flops",
                   label="FLOPs, linear-attention layer: Θ(T)")
    ax.plot(xs, full_bytes, color=_style.MODE[mode], lw=1.2, ls="--", gid="linear:bytes:full",
            label=f"HBM bytes ({mode}), full-attention layer")
    (q,) = ax.plot(xs, nbytes, color=_style.MODE[mode], lw=2, gid="linear:bytes",
                   label="HBM bytes, linear-attention layer")
    _axes(ax, xs, "Linear attention, one layer")
    legend_note(ax, [f, q], ["FLOPs", "HBM bytes"],
                "Solid: a Gated DeltaNet layer's chunked recurrence, Θ(T); dashed: a "
                f"full-attention layer ({mode}), Θ(T²).", labelspacing=SPACING, ncol=2)
    return ax


def plot_sparse(setting: Setting, xs: np.ndarray, ax: Axes | None = None) -> Axes:
    """One sparse-attention layer in the setting's mode (``sparse_attention``): the top-k
    attention's FLOPs and HBM bytes, Θ(k·T) beyond T = k_top, and its indexer's FLOPs, Θ(T²)
    (its scores over every causal pair), beside dense latent attention's, with T = k_top
    marked."""
    ax = _style.axes(ax)
    mode = setting.attention
    k = setting.model.index_topk
    full_flops, full_bytes = _dense(setting, xs, mode)
    parts = sweeps.sparse_attention(setting, xs, mode)
    ax.plot(xs, full_flops, color="#000000", lw=1.2, ls="--", gid="sparse:flops:dense",
            label="FLOPs, dense latent attention: Θ(T²)")
    (f,) = ax.plot(xs, parts["attention_flops"], color="#000000", lw=2, gid="sparse:flops",
                   label="FLOPs, top-k attention: Θ(k·T) beyond T = k")
    (i,) = ax.plot(xs, parts["indexer_flops"], color="#000000", lw=1.2, ls=(0, (1, 1)),
                   gid="sparse:flops:indexer", label="FLOPs, indexer: Θ(T²)")
    ax.plot(xs, full_bytes, color=_style.MODE[mode], lw=1.2, ls="--", gid="sparse:bytes:dense",
            label=f"HBM bytes ({mode}), dense latent attention")
    (q,) = ax.plot(xs, parts["attention_bytes"] + parts["indexer_bytes"],
                   color=_style.MODE[mode], lw=2, gid="sparse:bytes",
                   label=f"HBM bytes ({mode}), indexer and top-k attention")
    marker = ax.axvline(k, color="#777777", lw=0.9, gid="sparse:k", label=f"k = {k:,} tokens")
    _axes(ax, xs, "Sparse attention, one layer")
    labels = ["attention FLOPs", "indexer FLOPs", f"HBM bytes ({mode})", f"k = {k:,}"]
    legend_note(ax, [f, i, q, marker], labels,
                "Solid: the sparse layer (its bytes the indexer's and the attention's "
                "together); dotted: the indexer's FLOPs; dashed: dense latent attention, "
                "Θ(T²). Where the solid FLOPs leave the dashed, the bound turns from the "
                "masked MHA mode of short prompts to MQA mode over the top k.",
                labelspacing=SPACING, ncol=2)
    return ax
