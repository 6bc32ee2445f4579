"""Figure 3, attention traffic (log–log): one layer's HBM bytes against T for naive, tiled at
several SRAM sizes, the FlashAttention-2 order, the released kernels' tiles (``kernel``, the
default mode) and ideal attention, with the T² and T²H²/M asymptotes (FlashAttention, Theorem 2)
drawn beside them; and the memory footprint of naive attention's score matrix (and of the KV
cache) beside the weights, against the device's memory. At a column's width the panels are
stacked, at a page's side by side; each has its legend under it and, where a reader needs one,
a short note under the legend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sweeps
from ..errors import InputError
from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import (SPACING, as_list, binary_size, crossovers, device_label,
                      fit_height_within, legend_note, log_axes, panel_title, room,
                      shade_beyond_context, sram_unit, tallest, title)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..specs.hardware import Hardware

__all__ = ["plot_traffic", "plot_footprint", "plot_window", "attention_figure",
           "DEFAULT_TOKENS", "attention_tokens"]

DEFAULT_TOKENS = np.geomspace(64, 2**20, 161)
_PER_DECADE = 40  # points a decade of T, as the time figure's (roofline.plot.time)
_SRAM_SCALES = (0.25, 1.0, 4.0)  # tiled attention at these multiples of the device's SRAM
# tiled attention at SRAM sizes other than the device's own (that one solid), in order
_DASHES = (((0, (1, 1)), "dotted"), ((0, (5, 2)), "dashed"), ((0, (10, 3)), "long-dashed"))
# Every other meaning has a line style of its own, dotted for none of them: the c·T²
# asymptotes thin dark grey dash-dot, over the curves (the naive curve runs along its
# asymptote at large T, and its vermillion is a mid grey in greyscale); one device's memory
# solid black (several: each device's dash pattern), where it is full a thin vertical (solid
# for the naive scores, dashed for the KV cache); T = W a thin grey vertical.
_ASYMPTOTE = {"color": "#333333", "lw": 0.8, "ls": (0, (6, 2, 1, 2)), "zorder": 3}
# several devices: each one's tiled line solid in its colour with its marker, as in the time
# figure (_style.device_marker: the same device, the same marker), every _MARK_EVERY
# points from a device's own offset
_MARK_EVERY = 20
_FULL = ("-", (0, (4, 2)))  # the verticals where the naive scores, the KV cache fill memory
_FOOTPRINT = 0.8  # the footprint's and the window's panel height, stacked, to the traffic's
_LEAST = 1.0  # inches: the least the stacked traffic panel is shortened to (the others 0.8 in),
# so that three panels and four devices' legends fit a column's 8.5 in
_TITLE_MARGIN = 0.1  # inches: the title's lines this much narrower than the figure


def _kib(nbytes: float) -> str:
    """A size for a label, with the largest binary prefix: '228 KiB', '128 MiB'."""
    return binary_size(nbytes)


def _per(hardware: Hardware, nbytes: float) -> str:
    """'228 KiB/SM', '128 MiB/TensorCore': an SRAM size and what it serves, kept on one line
    (a no-break space)."""
    return f"{_kib(nbytes)}/{sram_unit(hardware)}".replace(" ", "\u00a0")


def attention_tokens(max_prompt: int | None = None) -> np.ndarray:
    """The attention figure's prompt lengths: :data:`DEFAULT_TOKENS` (64 to 2²⁰), or up to
    ``max_prompt``, the axis's end, 40 a decade, from 64 (from 16, as the time figure, where
    ``max_prompt`` is under 1,024: a decade and more on the axis).

    >>> xs = attention_tokens(4096); xs[[0, -1]].tolist(), len(xs)
    ([64.0, 4096.0], 73)
    >>> attention_tokens(100)[[0, -1]]
    array([ 16., 100.])
    """
    if max_prompt is None:
        return DEFAULT_TOKENS
    high = float(max_prompt)
    if isinstance(max_prompt, bool) or not high > 16:
        raise InputError("max_prompt", "must be more than 16 tokens", max_prompt)
    low = 64.0 if high >= 1024 else 16.0
    n = max(int(round(_PER_DECADE * np.log10(high / low))) + 1, 2)
    return np.geomspace(low, high, n)


def _sizes(device: str, others: list[float]) -> str:
    r"""The device whose SRAM size the tiled line takes and the other sizes' dash patterns, in
    the tiled entry's brackets, the sizes on a line of their own.

    >>> _sizes("H100-SXM", []), _sizes("H100-SXM", [58368.0, 933888.0])
    (' (H100-SXM)', '\n(H100-SXM; dotted: 57 KiB, dashed: 912 KiB)')
    """
    words = ", ".join(f"{_DASHES[i % len(_DASHES)][1]}: {_kib(size)}"
                      for i, size in enumerate(others))
    inside = "; ".join(part for part in (device, words) if part)
    return "" if not inside else f"\n({inside})" if others else f" ({inside})"


def _columns(labels: list[str], inches: float) -> int:
    """The most columns (filled down each) a legend of these one-line labels may take across
    ``inches``, by the estimates of :func:`roofline.plot._style.wrap` (an average glyph 0.55
    of 7 pt) and of :func:`legend_note` (0.45 in a handle).

    >>> _columns(["FLOPs", "HBM bytes (kernel)", "W = 4,096"], 3.08)  # a column's panel
    3
    >>> _columns(["FLOPs", "HBM bytes (kernel)", "W = 4,096"], 2.08)  # a third of a page
    1
    """
    for n in range(len(labels), 1, -1):
        rows = -(-len(labels) // n)
        widths = [max(len(t) for t in labels[k:k + rows]) for k in range(0, len(labels), rows)]
        if sum(widths) * 0.55 * 7 / 72 + 0.45 * len(widths) <= inches:
            return n
    return 1


def plot_traffic(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                 srams: Sequence[float] | None = None, ax: Axes | None = None) -> Axes:
    """One layer's attention HBM bytes against T: naive; tiled (one device: at ``srams`` bytes
    per SM (CU, TensorCore: :func:`sram_unit`), default ¼×, 1× and 4× its own, the own solid and
    the others dotted, dashed; several: each at its own, in its colour); tiled_fa2 (one
    device); kernel, the released kernels' 128-row tiles (the same on every device); ideal; and
    the c·T² asymptotes of naive and (one device) of tiled, thin grey dash-dot lines, in one
    legend entry (several devices: in the note, with what "tiled" is, so that the legend keeps
    one short entry a device). The fused modes step at small T (whole row blocks): a note under
    the legend says so."""
    ax = _style.axes(ax)
    group = as_list(settings)
    first = group[0]
    several = len(group) > 1
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    handles: list[Any] = []
    labels: list[str] = []
    drawn: list[np.ndarray] = []

    def curve(ys: np.ndarray, label: str | None, **kwargs: Any) -> Any:
        (line,) = ax.plot(xs, ys, **kwargs)
        drawn.append(ys)
        if label:
            handles.append(line)
            labels.append(label)
        return line

    curve(sweeps.attention_bytes(first, xs, "naive"), "naive (S and P through HBM)",
          color=_style.MODE["naive"], lw=2, gid="traffic:naive")
    c = sweeps.attention_t2_coefficient(first, "naive")
    # over the curves (thin): at large T the naive curve runs along its asymptote
    asymptotes = ax.plot(xs, c * xs**2, gid="asymptote:naive", **_ASYMPTOTE)
    words = [f"naive {c:.4g}·T²"]
    m = first.hardware.sram_per_sm
    if m is not None and not several:
        sizes = [k * m for k in _SRAM_SCALES] if srams is None else list(srams)
        lead = next((size for size in sizes if np.isclose(size, m)), sizes[0])
        others = [size for size in sizes if size != lead]
        for size in sizes:
            main = size == lead
            dash, _ = _DASHES[others.index(size) % len(_DASHES)] if not main else ("-", "")
            curve(sweeps.attention_bytes(first, xs, "tiled", size),
                  None if not main else
                  f"tiled (FlashAttention), SRAM {_per(first.hardware, lead)}" + _sizes(
                      device_label(first) if np.isclose(lead, m) else "", others),
                  gid=f"traffic:tiled:{size:g}", color=_style.MODE["tiled"],
                  lw=2 if main else 1.3, ls=dash, alpha=1.0 if main else 0.8)
        c = sweeps.attention_t2_coefficient(first, "tiled")
        asymptotes += ax.plot(xs, c * xs**2, gid="asymptote:tiled", **_ASYMPTOTE)
        words.append(f"tiled {c:.4g}·T²")
        # under the kernel's line: where both take 128-row blocks the two coincide
        curve(sweeps.attention_bytes(first, xs, "tiled_fa2"),
              "tiled_fa2 (FlashAttention-2 order)",
              gid="traffic:tiled_fa2", color=_style.MODE["tiled_fa2"], lw=2.6)
    tiled = False
    for i, s in enumerate(group):  # several devices: tiled at each one's SRAM, in its colour
        if several and s.hardware.sram_per_sm is not None:
            tiled = True
            every = max(min(_MARK_EVERY, len(xs) // 4), 1)
            curve(sweeps.attention_bytes(s, xs, "tiled"),
                  f"{device_label(s)}: tiled, SRAM {_per(s.hardware, s.hardware.sram_per_sm)}",
                  color=_style.device_color(i), lw=_style.nested(i, len(group), 2.4, 1.2),
                  marker=_style.device_marker(i), ms=5.0, mec="white",
                  mew=0.5, markevery=((4 + 7 * i) % every, every),
                  gid=f"traffic:tiled:{s.hardware.name}")
    curve(sweeps.attention_bytes(first, xs, "kernel"),
          "kernel (FlashAttention-2 order, 128-row tiles)"
          + (", every device" if several else ""),
          color=_style.MODE["kernel"], lw=1.2, zorder=2.5, gid="traffic:kernel")
    curve(sweeps.attention_bytes(first, xs, "ideal"),
          "ideal (Q, K, V read once, O written once): Θ(T)",
          color=_style.MODE["ideal"], lw=2, gid="traffic:ideal")
    notes = []
    if several:  # the legend keeps one short entry a device: the styles said in the note
        if tiled:
            notes.append("Tiled: FlashAttention at each device's SRAM.")
        notes.append(f"Grey dash-dot: naive's asymptote, {words[0].removeprefix('naive ')}"
                     " (on the naive curve at large T).")
    else:
        handles.append(asymptotes[0])  # one style for both
        labels.append(f"asymptote{'s' if len(words) > 1 else ''}: {', '.join(words)}")
    panel = "HBM traffic of one causal layer"
    if first.parallel:  # its heads (tp), its share of the rows (cp)
        panel += ", one device's share"
    if first.model.window != "none":
        panel += ", global" if first.architecture.window_kind == "chunked" else ", no window"
    elif first.architecture.linear_attention:
        panel += ", full attention"
    elif first.architecture.sparse_attention:
        panel += ", dense"
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "HBM traffic (bytes)", panel)
    _style.short_log_ticks(ax.xaxis)
    panel_title(ax, panel)
    ax.set_ylim(min(y[0] for y in drawn) / 2, max(y[-1] for y in drawn) * 2)
    shaded = shade_beyond_context(ax, group, xs[-1])
    notes.append("Steps: kernel re-reads K and V once per 128 query rows.")
    if shaded:
        notes.append(f"{shaded[0].upper()}{shaded[1:]}.")
    legend_note(ax, handles, labels, " ".join(notes), labelspacing=SPACING)
    return ax


def plot_footprint(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                   ax: Axes | None = None, *, shading_note: bool = True,
                   legend_values: bool = True) -> Axes:
    """Device memory against T: the weights with one layer's naive score matrix, and with the
    KV cache; each device's capacity, and where each stops fitting (the crossovers, thin
    vertical lines: the scores' solid, the KV cache's dashed). Several devices: each capacity
    in its colour and dash pattern, one legend entry a device with its crossovers
    (``legend_values`` False: its capacity only, the crossovers drawn as the verticals and
    kept in the line's label, the series of ``--data``: a column's stacked figure, where each
    entry would take two lines). ``shading_note``: False where another panel of the figure
    says what the shading past the context is."""
    ax = _style.axes(ax)
    group = as_list(settings)
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    used = sweeps.footprint(group[0], xs)
    weights = used["weights"][0]
    ax.plot(xs, used["weights"] + used["kv_cache"] + used["scores"], color=_style.MODE["naive"],
            lw=2, gid="footprint:scores", label="weights + KV cache + naive scores (one layer)")
    ax.plot(xs, used["weights"] + used["kv_cache"], color=_style.KIND["projection"], lw=2,
            gid="footprint:kv_cache", label="weights + KV cache (all layers)")
    ax.plot(xs, used["weights"], color="#555555", lw=1, ls="--", gid="footprint:weights",
            label=f"weights ({si(weights, 'B')})")
    several = len(group) > 1
    whats = ("naive scores", "KV cache")
    tagged = None
    short_labels = {}  # capacity gid -> its legend entry without the crossovers
    for i, s in enumerate(group):
        color = _style.device_color(i)
        cap = s.hardware.memory_capacity
        values = crossovers(s)
        at = []
        for k, name in enumerate(("naive_scores_exceed_memory_tokens",
                                  "kv_cache_exceeds_memory_tokens")):
            v = values[name]
            if v.exists and xs[0] <= v.value <= xs[-1]:
                ax.axvline(v.value, color=color, lw=0.9, ls=_FULL[k],
                           gid=f"crossover:{s.hardware.name}:{name}",
                           label=None if several else
                           f"{whats[k]} exceed{'s' if k else ''} memory at T = {v.value:,.0f}")
                at.append(f"{v.value:,.0f} ({whats[k].removeprefix('naive ')})")
        short = " (less than the weights alone)" if weights > cap else ""
        label = f"device memory: {si(cap, 'B')}{short}"
        if several:
            label = f"{device_label(s)}: {si(cap, 'B')}" + (
                short or (f"; full at T\u00a0=\u00a0{', '.join(at)}" if at else ""))
            short_labels[f"capacity:{s.hardware.name}"] = f"{device_label(s)}: " \
                f"{si(cap, 'B')}{short}"
        line = ax.axhline(cap, color=color, lw=1.2,
                          ls=_style.device_dashes(i) if several else "-",
                          gid=f"capacity:{s.hardware.name}", label=label)
        if not several and not short:  # named just above its line, over the curves' start
            tagged = line
            ax.annotate(label.replace(":", ""), (xs[0] * 1.15, cap), xytext=(0, 1.5),
                        textcoords="offset points", va="bottom", fontsize=7, gid="tag:capacity")
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "memory in use (bytes)",
             "Memory footprint beside the weights")
    _style.short_log_ticks(ax.xaxis)
    panel_title(ax, "Memory footprint beside the weights")
    caps = [s.hardware.memory_capacity for s in group]
    low, high = min(weights, *caps) / 1.5, max(weights, *caps) * 3  # a decade's tick each way
    ax.set_ylim(10 ** np.floor(np.log10(low)), 10 ** np.ceil(np.log10(high)))
    shaded = shade_beyond_context(ax, group, xs[-1])
    shaded = shaded if shading_note else ""
    notes = ["Verticals: memory full (solid: scores; dashed: KV cache)."] if several else []
    shown = [h for h in ax.get_legend_handles_labels()[0] if h is not tagged]
    texts = [h.get_label() if legend_values else short_labels.get(h.get_gid(), h.get_label())
             for h in shown]
    legend_note(ax, shown, texts,
                " ".join(notes + ([shaded[0].upper() + shaded[1:] + "."] if shaded else [])),
                labelspacing=SPACING)
    return ax


def plot_window(setting: Setting, tokens: np.ndarray | None = None,
                ax: Axes | None = None) -> Axes:
    """One layer's attention with and without the model's sliding window W (or its chunks of
    C_att) against T: FLOPs (fused modes) and HBM bytes (the setting's mode), bending from T²
    to W·T beyond T = W (``window.flops``, ``window.hbm_bytes``; Mistral 7B, arXiv 2310.06825,
    §2; ``chunked.flops``, ``chunked.level_bytes``), with T = W marked. The legend names the
    quantities (the local layer's solid lines) and the note under it the two layers (global
    dashed)."""
    ax = _style.axes(ax)
    xs = DEFAULT_TOKENS if tokens is None else np.asarray(tokens, dtype=float)
    chunks = setting.architecture.window_kind == "chunked"
    w, letter = (setting.model.local_span, "C") if chunks else (setting.model.sliding_window, "W")
    kind, name = ("chunked", "Chunked attention") if chunks else ("windowed", "Sliding window")
    mode = setting.attention
    _, nbytes = sweeps.window_attention(setting, xs, mode)
    # the fused modes' FLOPs are one count; ideal's is taken, which needs no SRAM size (a
    # device without one has no tiled mode)
    full_flops = sweeps.attention_flops(setting, xs, "ideal")
    ax.plot(xs, full_flops, color="#000000", lw=1.2, ls="--", gid="window:flops:global",
            label="FLOPs, global layer: Θ(T²)")
    (flops,) = ax.plot(xs, sweeps.window_attention(setting, xs, "ideal")[0], lw=2,
                       color="#000000", gid="window:flops",
                       label=f"FLOPs, {kind} layer: Θ({letter}·T) beyond T = {letter}")
    ax.plot(xs, sweeps.attention_bytes(setting, xs, mode), color=_style.MODE[mode], lw=1.2,
            ls="--", gid="window:bytes:global", label=f"HBM bytes ({mode}), global layer")
    (local,) = ax.plot(xs, nbytes, color=_style.MODE[mode], lw=2, gid="window:bytes",
                       label=f"HBM bytes ({mode}), {kind} layer")
    marker = ax.axvline(w, color="#777777", lw=0.9, gid="window:W",
                        label=f"{letter} = {w:,} tokens")
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "FLOP or bytes",
             f"{name}, one layer")
    _style.short_log_ticks(ax.xaxis)
    panel_title(ax, f"{name}, one layer")
    _style.plain_ticks(ax.yaxis)  # 10 G, 1 T
    # the lines keep their full labels (the series of --data); the legend short, in a row
    # where it fits
    labels = ["FLOPs", f"HBM bytes ({mode})", f"{letter} = {w:,}"]
    legend_note(ax, [flops, local, marker], labels,
                f"Solid: the {kind} layer, Θ({letter}·T) beyond T = {letter}; dashed: a global "
                "layer, Θ(T²).", labelspacing=SPACING, ncol=_columns(labels, room(ax)))
    return ax


def _third_panel(setting: Setting) -> Any:
    """The panel where a model's attention stops growing as T²: a window's, a hybrid's linear
    layers', sparse attention's (:mod:`roofline.plot.attention_families`); None for others."""
    from .attention_families import plot_linear, plot_sparse

    arch = setting.architecture
    if arch.sparse_attention:
        return plot_sparse
    if arch.linear_attention:
        return plot_linear
    return plot_window if setting.model.window != "none" else None


def attention_figure(settings: Setting | Sequence[Setting], tokens: np.ndarray | None = None,
                     srams: Sequence[float] | None = None, size: str | float = "page",
                     max_prompt: int | None = None) -> Figure:
    """Traffic and footprint, titled with the devices, model and data type; with a third panel
    for a model with a sliding window (:func:`plot_window`), linear-attention layers or sparse
    attention (:mod:`roofline.plot.attention_families`); ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches): a narrow figure stacks
    its panels (the footprint and the window 0.8 of the traffic panel's height), a wide one
    puts them side by side; the height is what the panels, their legends and notes need, the
    panels shortened (stacked, the traffic panel to no less than 1 in, the others 0.8 in)
    where the figure would be taller than a page's text block can take
    (:func:`roofline.plot._common.tallest`). The prompt lengths:
    ``tokens``, else :func:`attention_tokens` up to ``max_prompt`` (the axes end there;
    default 2²⁰)."""
    group = as_list(settings)
    xs = attention_tokens(max_prompt) if tokens is None else np.asarray(tokens, dtype=float)
    third = _third_panel(group[0])
    n = 3 if third else 2
    w = _style.width(size)
    stacked = _style.narrow(size)
    with _style.style():
        fig = _style.figure((w, 8.0 * n if stacked else 10.0))
        # stacked, the footprint (two or three decades of bytes) and the window panel (two
        # lines and their global twins) are shorter than the traffic panel (five curves)
        ratios = [1.0, _FOOTPRINT, _FOOTPRINT][:n]
        panels = fig.subplots(n, 1, height_ratios=ratios) if stacked else fig.subplots(1, n)
        plot_traffic(group, xs, srams, ax=panels[0])
        # the shading past the context, the same on both, said under the traffic panel
        plot_footprint(group, xs, ax=panels[1], shading_note=False,
                       legend_values=not stacked)
        if third:
            third(group[0], xs, ax=panels[2])
        batch = f", batch {group[0].batch}" if group[0].batch != 1 else ", one sequence"
        text = title("Attention", group, attention=False).replace(")", f"{batch})", 1)
        fig.suptitle(_style.wrap_fitted(text, w - _TITLE_MARGIN, 8.5))
        # stacked, the panels give up height to the legends and notes, as little as fits: the
        # footprint, the shortest, sets the others
        if stacked:
            fit_height_within(fig, sum(ratios) / _FOOTPRINT, 1.8 * _FOOTPRINT, tallest(size),
                              _LEAST * _FOOTPRINT)
        else:
            fit_height_within(fig, 1, 2.4, tallest(size), 2.0)
    return fig
