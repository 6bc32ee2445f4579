"""The shapes figure: the fraction of peak work each of a model's GEMMs, and its attention, can
use against the prompt length T, with tile and wave quantization (:mod:`roofline.derive.shapes`:
NVIDIA's *Matrix Multiplication Background User's Guide*, "Tile Quantization" and "Wave
Quantization").

Left, the projections of one layer of B = 1 sequence of T tokens (each a T × d_out output):
QKV (d_out = (n_q + 2·n_kv)·H), O (D), the MLP's up and gate (2F, one GEMM; F without a gate)
and down (D). The efficiency does not depend on the inner dimension, so GEMMs of one width
share a curve (O and down: D). Right, FlashAttention's forward pass over the n_q heads: the
whole efficiency and its query-tile part alone. Both saw-tooth: a drop just past each multiple
of the row tile (a new row of tiles, nearly empty) and each wave's worth of tiles (a new wave,
nearly empty). The tiles and thread blocks per SM come from the device file's ``[estimate]``
(gemm_tile_m, gemm_tile_n, attention_tile, ctas_per_sm), the SMs from its on_chip.sm_count.
The roofline bound ignores both effects; only the estimate divides its compute time by them.

Every number comes from the derivation's expressions, as Python that SymPy writes
(:func:`roofline.codegen.function`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import codegen
from ..derive import shapes
from ..errors import InputError
from ..symbols import d_out
from . import _style
from ._common import fit_height, legend_note, panel_title, plain

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

    from ..specs.hardware import Hardware
    from ..specs.model import ModelShape

__all__ = ["draw", "plot_gemms", "plot_attention", "tile_values", "gemm_widths", "prompt_axis",
           "ESTIMATE_KEYS"]

# the device file's [estimate] keys this figure reads, by the symbol each sets
ESTIMATE_KEYS = {"B_m": "gemm_tile_m", "B_n": "gemm_tile_n", "B_r": "attention_tile",
                 "n_cta": "ctas_per_sm"}
_COLORS = (_style.OKABE_ITO["black"], _style.OKABE_ITO["blue"], _style.OKABE_ITO["orange"],
           _style.OKABE_ITO["bluish green"])
_DASHES = ("-", (0, (5, 1.5)), (0, (1.5, 1)), (0, (6, 1.5, 1.5, 1.5)))


def tile_values(hardware: Hardware) -> dict[str, int]:
    """B_m, B_n, B_r, n_cta from the device's ``[estimate]`` and N_sm from its SMs, by symbol
    name; a device without them is an InputError."""
    name = plain(hardware.name)
    if not hardware.sm_count:
        raise InputError("hardware", f"{name} gives no on_chip.sm_count: the waves need the SMs "
                         "that run the tiles")
    missing = [key for key in ESTIMATE_KEYS.values() if key not in hardware.estimate]
    if missing:
        raise InputError("hardware", f"{name} has no [estimate] {', '.join(missing)}: the "
                         "figure needs its tile shapes and thread blocks per SM")
    out = {symbol: int(hardware.estimate[key]) for symbol, key in ESTIMATE_KEYS.items()}
    return {**out, "N_sm": int(hardware.sm_count)}


def gemm_widths(model: ModelShape) -> list[tuple[str, int]]:
    """(names, d_out) of one layer's projections, GEMMs of one width joined ("O, MLP down":
    their efficiency is the same); a model whose projections are not these is an
    InputError."""
    name = plain(model.name)
    if model.mla:
        raise InputError("model", f"{name} uses latent attention (MLA): its projections are "
                         "not the (n_q + 2·n_kv)·H wide QKV of this figure")
    if model.num_experts > 1:
        raise InputError("model", f"{name} is a mixture of experts: an expert's GEMM has the "
                         "tokens routed to it as rows, not T")
    qkv = (model.num_heads + 2 * model.num_kv_heads) * model.head_dim
    up = ("MLP up, gate", 2 * model.intermediate_size) if model.gated_mlp \
        else ("MLP up", model.intermediate_size)
    by_width: dict[int, list[str]] = {}
    for label, width in (("QKV", qkv), ("O", model.hidden_size), (up[0], up[1]),
                         ("MLP down", model.hidden_size)):
        by_width.setdefault(width, []).append(label)
    return [(", ".join(labels), width) for width, labels in by_width.items()]


def prompt_axis(values: dict[str, int], prompts: Sequence[int] | None = None) -> np.ndarray:
    """The prompt lengths evaluated: ``prompts`` sorted, or every integer from 1 to
    max(2048, 4·B_m, 4·B_r) (at least four rows of tiles)."""
    if prompts is None:
        return np.arange(1, max(2048, 4 * values["B_m"], 4 * values["B_r"]) + 1)
    tokens = sorted(set(prompts))
    if not tokens or any(isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1
                         for t in tokens):
        raise InputError("prompts", "must be positive whole numbers of tokens", list(prompts))
    return np.asarray(tokens, dtype=np.int64)


def _evaluate(expr, values: dict[str, int], xs: np.ndarray) -> np.ndarray:
    """``expr`` at the device's values and every T of ``xs`` (the generated code, numpy)."""
    fn = codegen.function(expr)
    out = codegen.call(fn, {**values, "T": xs})
    return np.broadcast_to(np.asarray(out, dtype=float), xs.shape)


def _axes(ax: Axes, xs: np.ndarray, title: str, step: int) -> None:
    from matplotlib.ticker import MultipleLocator

    ax.set_xlim(0, xs[-1] * 1.01)
    ax.set_ylim(0, 1.04)
    ax.set_xlabel("prompt length T (tokens)")
    ax.set_ylabel("fraction of peak work usable")
    span = xs[-1] / step
    ax.xaxis.set_major_locator(MultipleLocator(step * max(1, int(np.ceil(span / 8)))))
    ax.xaxis.set_minor_locator(MultipleLocator(step))
    ax.grid(True, which="minor", axis="x", alpha=0.15, lw=0.4)
    panel_title(ax, title)


def plot_gemms(ax: Axes, model: ModelShape, values: dict[str, int], xs: np.ndarray) -> None:
    """Each projection width's GEMM efficiency against T."""
    handles, labels = [], []
    for i, (names, width) in enumerate(gemm_widths(model)):
        ys = _evaluate(shapes.library_efficiency().xreplace({d_out: width}), values, xs)
        (line,) = ax.plot(xs, ys, color=_COLORS[i % 4], ls=_DASHES[i % 4], lw=0.9,
                          gid=f"shapes:gemm:{width}")
        handles.append(line)
        labels.append(f"{names}: d_out = {width:,}")
    m, n, sms, per = values["B_m"], values["B_n"], values["N_sm"], values["n_cta"]
    _axes(ax, xs, f"Projections: the best of {m} × {n}, {m} × {n // 2}, {m // 2} × {n // 2} "
          "tiles", m)
    legend_note(ax, handles, labels,
                "T·d_out over the tile slots of the waves run (a wave: "
                f"{sms} SMs × {per} tile{'s' if per > 1 else ''}), at the tile a library "
                f"would pick for the shape. Faint grid: every {m} tokens.")


def plot_attention(ax: Axes, model: ModelShape, values: dict[str, int],
                   xs: np.ndarray) -> None:
    """FlashAttention's forward pass over the model's query heads, one sequence: its
    efficiency and the query-tile part of it."""
    from sympy import ceiling

    from ..symbols import B, B_r, T, n_q

    heads = {n_q: model.num_heads, B: 1}
    whole = _evaluate(shapes.attention_efficiency().xreplace(heads), values, xs)
    tile = _evaluate(T / (ceiling(T / B_r) * B_r), values, xs)
    color = _style.KIND["attention"]
    (a,) = ax.plot(xs, whole, color=color, lw=0.9, gid="shapes:attention")
    (b,) = ax.plot(xs, tile, color=color, lw=0.8, ls=(0, (1.5, 1)), alpha=0.8,
                   gid="shapes:attention:tile")
    _axes(ax, xs, f"Attention: {model.num_heads} heads, query tiles of {values['B_r']} rows",
          values["B_r"])
    r, wave = values["B_r"], values["N_sm"] * values["n_cta"]
    legend_note(ax, [a, b], [f"⌈T/{r}⌉·{model.num_heads} thread blocks in waves of {wave:,}",
                             f"query tiles alone: T / (⌈T/{r}⌉·{r})"],
                "One thread block per query tile per head (FlashAttention-2/3's grid); the "
                "causal mask's unequal blocks are not modelled.")


def draw(path: str | Path, hardware: Hardware, model: ModelShape,
         prompts: Sequence[int] | None = None, *, size: str | float = "page") -> Path:
    """The shapes figure for ``model`` on ``hardware``, written to ``path`` (its extension
    names the format); returns the path written. ``prompts``: the prompt lengths evaluated
    (every integer from 1 to 2,048 by default)."""
    return _style.savefig(figure(hardware, model, prompts, size=size), path)


def figure(hardware: Hardware, model: ModelShape, prompts: Sequence[int] | None = None, *,
           size: str | float = "page") -> Any:
    """The shapes figure (a matplotlib Figure), as :func:`draw` writes it."""
    values = tile_values(hardware)
    gemm_widths(model)  # a model without these projections refused before any drawing
    xs = prompt_axis(values, prompts)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 4.2))
        if _style.narrow(size):
            left, right = fig.subplots(2, 1)
        else:
            left, right = fig.subplots(1, 2)
        plot_gemms(left, model, values, xs)
        plot_attention(right, model, values, xs)
        title = (f"Tile and wave quantization: {plain(model.name)} on {plain(hardware.name)} "
                 f"({values['N_sm']} SMs, {values['n_cta']} thread block"
                 f"{'s' if values['n_cta'] > 1 else ''} per SM, batch 1)")
        fig.suptitle(_style.wrap_fitted(title, w - 0.2, 8.5), fontsize=8.5)
        fit_height(fig, 2 if _style.narrow(size) else 1, 2.4)
    return fig
