"""Figure 1, the roofline (log–log): attainable FLOP/s against arithmetic intensity.

The memory ceiling β·I and one compute ceiling per data type of each device, each ridge P/β
annotated with its intensity, and, in the manner of Nsight Compute's hierarchical roofline (Yang,
Kurth & Williams, arXiv 2009.05257), a ceiling β_level·I for each further memory level whose
bandwidth the device's file gives (L2, L3, SRAM); the prefill's operations at the chosen prompt
lengths (projections, attention naive / kernel / ideal, the whole prefill) and a decode step at
each chosen batch (a latent-attention model's in both forms, weight-absorbed and naive), placed
at their HBM intensity and their attained FLOP/s = FLOPs / roofline time (from
:mod:`roofline.evaluate`), and an attention whose traffic at a further level is derived once
more at that level's intensity; optionally the SRAM-only ceiling of tiled attention: the
intensity it tends to as T → ∞ with the device's SRAM per SM when every re-read comes from HBM
(FlashAttention, Theorem 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import (as_list, binary_size, device_label, per_byte, side_legend, title,
                      work_unit)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_roofline", "roofline_figure", "ceilings"]

_MARKER = _style.MARKER


def _color(group: str) -> str:
    if group.startswith("attention."):
        return _style.MODE[group.split(".", 1)[1]]
    return _style.KIND[group]


def ceilings(s: Setting) -> list[tuple[str, float, float]]:
    """(data types, peak FLOP/s, ridge FLOP/byte) of a device, data types of one peak joined,
    lowest peak first."""
    by_peak: dict[float, list[str]] = {}
    for dtype in s.hardware.peak_flops:
        by_peak.setdefault(s.hardware.peak(dtype), []).append(dtype)
    bw = s.hardware.bandwidth()
    return [(", ".join(names), peak, peak / bw) for peak, names in sorted(by_peak.items())]


def ceiling_label(names: str, peak: float) -> str:
    """'bf16, fp16: 989.4 TFLOP/s'; integer types count operations: 'int8: 1.979 POP/s',
    'fp8: 1.979 PFLOP/s, int8: 1.979 POP/s'.

    >>> ceiling_label("fp8, int8", 1.9789e15)
    'fp8: 1.98 PFLOP/s, int8: 1.98 POP/s'
    """
    kinds: dict[str, list[str]] = {}
    for name in names.split(", "):
        kinds.setdefault(work_unit(name), []).append(name)
    return ", ".join(f"{', '.join(group)}: {si(peak, unit + '/s')}"
                     for unit, group in kinds.items())


def _draw_ceilings(ax: Axes, s: Setting, color: str, x: tuple[float, float],
                   several: bool) -> list[tuple[float, str, str, float]]:
    """The memory ceiling, each compute ceiling and its ridge; returns the compute ceilings'
    labels (peak, text, colour, ridge), placed later so that they do not collide. Several devices:
    the ridges are listed in the memory ceiling's legend entry, not beside their knees, where
    two devices' labels would touch."""
    bw = s.hardware.bandwidth()
    rows = ceilings(s)
    top = rows[-1][1]
    who = f"{device_label(s)}: " if several else ""
    ridges = (f"\n(ridge{'s' if len(rows) > 1 else ''} "
              f"{', '.join(f'{r:,.0f}' for _, _, r in rows)} FLOP/byte)" if several else "")
    ax.plot([x[0], top / bw], [x[0] * bw, top], color=color, lw=1.8,
            gid=f"memory:{s.hardware.name}",
            label=f"{who}memory ceiling β·I, β = {si(bw, 'B/s')}{ridges}")
    roof = s.hardware.peak(s.dtype)
    # the hierarchical roofline's ceilings: one device only (several would crowd the axes)
    for level, level_bw in (s.level_bandwidths if not several else {}).items():
        if level not in _style.LEVEL:  # the interconnect or network: no memory ceiling
            continue
        style, _, name = _style.LEVEL[level]
        ax.plot([x[0], roof / level_bw], [x[0] * level_bw, roof], color=color, lw=1.0,
                ls=style, alpha=0.8, gid=f"ceiling-{level}:{s.hardware.name}",
                label=f"{who}{name} ceiling: {si(level_bw, 'B/s')} × FLOP per {name} byte")
    labels = []
    for names, peak, ridge in rows:
        main = s.dtype in names.split(", ")
        # on to far past the right edge, which moves right where the labels need room
        ax.plot([ridge, x[1] * 10**_WIDENINGS], [peak, peak], color=color,
                lw=1.8 if main else 1.0,
                ls="-" if main else "--", alpha=1.0 if main else 0.6,
                gid=f"compute:{s.hardware.name}:{names}")
        # several devices: the label in the device's colour, on its line, without its name
        # (long names would not fit beside one another where ceilings crowd)
        labels.append((peak, ceiling_label(names, peak), color, ridge))
        ax.plot([ridge], [peak], "o", ms=4, color=color, mfc="white", zorder=4,
                gid=f"ridge:{s.hardware.name}:{names}")
        if not several:
            ax.annotate(f"ridge {per_byte(ridge, names)}", (ridge, peak), xytext=(-4, 3),
                        textcoords="offset points", ha="right", va="bottom", fontsize=6.5,
                        color=color)
    return labels


_LABEL_SIZE = 7.0  # points: the compute ceilings' labels
_PAD = 2.0  # points between a ceiling and its label
_WIDENINGS = 3  # decades the x axis may grow by for the ceilings' labels


def _text_size(text: str) -> tuple[float, float]:
    """Width and height in points of one line of label text (no renderer needed)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    w, h, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=_LABEL_SIZE), ismath=False)
    return w, h


def _place_ceiling_labels(ax: Axes, labels: list[tuple[float, str, str, float]],
                          clear_of: float) -> None:
    """Each compute ceiling's label on its own ceiling, right of ``clear_of`` (the points):
    above the line, else below it, in the rightmost column where its box touches no other
    label and no other ceiling's line crosses it; further columns stagger the labels along x
    where ceilings lie closer than a line of text (several devices). Where some label finds no
    place that touches no other label, the x axis runs a decade further (up to three times),
    for one more column. Placed in points of the laid-out Axes, so that the boxes are those
    drawn."""
    slots, crowded = _label_slots(ax, labels, clear_of)
    for _ in range(_WIDENINGS if crowded else 0):
        x0, x1 = ax.get_xlim()
        ax.set_xlim(x0, x1 * 10)
        slots, crowded = _label_slots(ax, labels, clear_of)
        if not crowded:
            break
    for k, offset, side in slots:
        peak, text, color, _ = labels[k]
        # anchored to the right edge in points: a later layout that resizes the Axes moves
        # every label with it, the columns keep their widths
        ax.annotate(text, (1.0, peak), xycoords=("axes fraction", "data"),
                    xytext=(offset, side * _PAD), textcoords="offset points",
                    ha="right", va="bottom" if side > 0 else "top", fontsize=_LABEL_SIZE,
                    color=color, annotation_clip=False, in_layout=False,
                    gid=f"ceiling-label:{text}")


def _label_slots(ax: Axes, labels: list[tuple[float, str, str, float]],
                 clear_of: float) -> tuple[list[tuple[int, float, int]], int]:
    """Where each label goes, highest ceiling first: (its index, x offset from the right edge
    in points, side: 1 above its line, -1 below); and how many found no place clear of the
    other labels (those take the first column, above their line)."""
    try:
        fig = ax.get_figure(root=True)  # the Figure, also for an Axes in a SubFigure
    except TypeError:  # matplotlib < 3.10
        fig = ax.figure
    engine = fig.get_layout_engine()
    if engine is not None:  # the layout alone (not a whole draw): the Axes' final size
        engine.execute(fig)
    else:
        fig.draw_without_rendering()
    box = ax.get_window_extent()
    scale = 72.0 / fig.dpi
    width, height = box.width * scale, box.height * scale
    (x0, x1), (y0, y1) = (np.log10(v) for v in ax.get_xlim()), (np.log10(v) for v in ax.get_ylim())
    px = width / (x1 - x0)  # points per decade
    py = height / (y1 - y0)
    pad, gap = _PAD, 12.0
    sizes = [_text_size(text) for _, text, _, _ in labels]
    column = max(w for w, _ in sizes) + gap
    left_limit = (np.log10(clear_of) - x0) * px + 6  # and a large marker's radius
    lines = [((np.log10(r) - x0) * px, (np.log10(p) - y0) * py) for p, _, _, r in labels]
    placed: list[tuple[float, float, float, float]] = []  # (left, bottom, right, top) points

    def free(rect: tuple[float, float, float, float], own: int, lines_too: bool) -> bool:
        left, bottom, right, top = rect
        if bottom < 0 or top > height or left < left_limit:
            return False
        if any(left < r + 1 and l < right + 1 and bottom < t + 1 and b < top + 1
               for l, b, r, t in placed):  # a point apart: text extents round
            return False
        return not lines_too or not any(k != own and bottom < ly < top and lx < right
                                        for k, (lx, ly) in enumerate(lines))

    slots: list[tuple[int, float, int]] = []
    crowded = 0
    for k in sorted(range(len(labels)), key=lambda k: -labels[k][0]):
        w, h = sizes[k]
        y = lines[k][1]
        options = [(c, side, (width - 2 - c * column - w, y + pad if side > 0 else y - pad - h,
                              width - 2 - c * column, y + pad + h if side > 0 else y - pad))
                   for c in range(6) for side in (1, -1)]
        found = next((slot for strict in (True, False) for slot in options
                      if free(slot[2], k, strict)), None)
        crowded += found is None
        c, side, rect = found or options[0]
        placed.append(rect)
        slots.append((k, -2 - c * column, side))
    return slots, crowded


def _fits(s: Setting, p: sweeps.OperationPoint, context: int) -> bool:
    """Whether the point runs in its device's memory: a decode step holds the weights and the
    KV cache of its batch at ``context``; a prefill (and its operations) the weights and the
    KV cache of its prompt, and with naive attention one layer's score matrix too."""
    if p.group.startswith("decode"):
        return bool(sweeps.decode_fits(s, [int(p.label.rsplit(" ", 1)[1])], context)[0])
    mode = p.group.partition(".")[2] or s.attention
    return bool(sweeps.prefill_fits(sweeps.with_mode(s, mode), [p.tokens])[0])


def plot_roofline(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (128, 2048,
                  32768), batches: Sequence[int] = (1,), context: int | None = None,
                  sram: bool = True, ax: Axes | None = None) -> Axes:
    """The roofline of each device with the operations of a prefill and decode steps on it.

    One device: each operation class in its colour, the ceiling of each further memory level
    the device's file gives a bandwidth for, and each cached attention once more at its L2
    (and L3) intensity. Several: each device in its colour (its HBM and compute ceilings,
    points and SRAM ceiling), each operation class by its marker; the further levels are left
    out, where they would crowd the axes. A point that does
    not fit in its device's memory (:func:`roofline.sweeps.decode_fits`,
    :func:`roofline.sweeps.prefill_fits`) is hollow. The compute ceilings' labels sit on their
    lines, staggered along x where ceilings crowd (several devices: without the device's name,
    in its colour).
    ``context``: cached tokens of the decode step (default: the longest prompt). ``sram``: draw
    tiled attention's ceiling (devices that give their SRAM per SM).
    """
    from matplotlib.lines import Line2D

    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    context = context or max(prompts)
    points = []
    for s in group:
        points += [(s, p) for p in sweeps.operation_points(s, prompts)]
        # latent attention (MLA): the decode step absorbed and naive (sweeps.decode_forms)
        points += [(s, sweeps.decode_point(form, b, context)) for form in sweeps.decode_forms(s)
                   for b in batches]
    caps = {s.hardware.name: sweeps.attention_intensity_limit(s, "tiled") for s in group
            if sram and s.hardware.sram_per_sm is not None}
    xs = [p.intensity for _, p in points if p.intensity > 0] + list(caps.values())
    if not several:
        xs += [p.level_intensity(level) for _, p in points for level, _ in p.levels]
    low = min([*xs, *(c[2] for s in group for c in ceilings(s))])
    high = max([*xs, *(c[2] for s in group for c in ceilings(s))])
    # room for the ceilings' labels right of the points (longer with several devices' names)
    x = (low / 2, 10 ** np.ceil(np.log10(high * (100 if several else 10))))
    ceiling_labels = []
    for i, s in enumerate(group):
        ceiling_labels += _draw_ceilings(ax, s, _style.device_color(i) if several else "#444444",
                                         x, several)
    sizes = dict(zip(sorted(set(prompts)), np.linspace(4.5, 10.0, len(set(prompts)))))
    seen: set[str] = set()
    op_handles: list[tuple[Line2D, str]] = []
    decode_at: dict[str, tuple[float, float, str]] = {}  # batch → lowest star, its colour
    hollow = False  # a point that does not fit in its device's memory
    levels_seen: set[str] = set()  # levels at whose intensity some point is placed too
    for i, s in enumerate(group):
        mine = [p for t, p in points if t is s]
        for g in dict.fromkeys(p.group for p in mine):
            pts = sorted((p for p in mine if p.group == g),
                         key=lambda p: p.tokens if not g.startswith("decode") else p.flops)
            color = _style.device_color(i) if several else _color(g)
            if len(pts) > 1:
                ax.plot([p.intensity for p in pts], [p.attained for p in pts], "-", lw=0.8,
                        color=color, alpha=0.5)
            for p in pts:
                step = g.startswith("decode")
                label = p.label if not step else _decode_label(s, g, context)
                if label not in seen:
                    seen.add(label)
                    legend_color = "#777777" if several else color
                    op_handles.append((Line2D([], [], ls="none", marker=_MARKER[g],
                                              color=legend_color,
                                              ms=11 if step else 7, mec="white"),
                                       label))
                size = 11.0 if step else sizes[p.tokens]
                fits = _fits(s, p, context)
                hollow = hollow or not fits
                ax.plot([p.intensity], [p.attained], _MARKER[g], color=color, ms=size,
                        mec="white" if fits else color, mew=0.6 if fits else 1.3,
                        mfc=color if fits else "white",
                        zorder=6 - size / 20,  # small ones on top
                        gid=f"point:{s.hardware.name}:{g}:{p.label if step else p.tokens}")
                for level, _ in p.levels if not several else ():  # the same operation at
                    # each cache's intensity (the SRAM's bytes are the L2's, a lower bound: the
                    # point would hide behind it)
                    if level == "sram" or level not in s.level_bandwidths:
                        continue
                    at = p.level_intensity(level)
                    ax.plot([at, p.intensity], [p.attained] * 2, ":", lw=0.7, color=color,
                            alpha=0.6)
                    ax.plot([at], [p.attained], _style.LEVEL[level][1], color=color,
                            ms=size * 0.8, mec="white", mew=0.5, zorder=5,
                            gid=f"point:{s.hardware.name}:{g}:{p.tokens}:{level}")
                    levels_seen.add(level)
                if g == "decode":
                    b = p.label.rsplit(" ", 1)[1]
                    if b not in decode_at or p.attained < decode_at[b][1]:
                        decode_at[b] = (p.intensity, p.attained, color)
        if sram and s.hardware.sram_per_sm is not None:
            cap = caps[s.hardware.name]
            who = f"{device_label(s)}: " if several else ""
            color = _style.device_color(i) if several else _style.MODE["tiled"]
            ax.axvline(cap, color=color, ls=":", lw=1.2, gid=f"sram:{s.hardware.name}",
                       label=f"{who}tiled attention's SRAM ceiling: {per_byte(cap)}\n"
                             f"(T → ∞, {binary_size(s.hardware.sram_per_sm)} SRAM per SM, "
                             "no cache)")
            # short, at the foot of the line, under the memory ceiling: its colour tells whose
            ax.annotate(f"SRAM ceiling {cap:,.0f}", (cap, 0.02), xytext=(-2, 0),
                        xycoords=("data", "axes fraction"), textcoords="offset points",
                        rotation=90, ha="right", va="bottom", fontsize=6.5, color=color)
    for b, (ix, iy, color) in decode_at.items():  # one label per batch: the stars line up
        ax.annotate(f"B = {b}", (ix, iy), xytext=(6, -4), textcoords="offset points",
                    ha="left", va="top", fontsize=7, color="#777777" if several else color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x)
    peaks = [c[1] for s in group for c in ceilings(s)]
    attained = [p.attained for _, p in points]
    bottom = min([*attained, x[0] * group[0].hardware.bandwidth()]) / 2  # room for "B = 1"
    ax.set_ylim(10 ** np.floor(np.log10(bottom)), max(peaks) * 3)
    ax.set_xlabel("arithmetic intensity I (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s (FLOP/s)")
    ax.set_title(title("Roofline", group))
    handles, labels = ax.get_legend_handles_labels()
    if several:
        handles.append(Line2D([], [], ls="none"))
        labels.append("operations (colour: device)")
    handles += [h for h, _ in op_handles]
    labels += [text for _, text in op_handles]
    for level in (lv for lv in _style.LEVEL if lv in levels_seen):
        handles.append(Line2D([], [], ls="none", marker=_style.LEVEL[level][1], ms=6,
                              color="#777777"))
        labels.append(f"the same attention at its {_style.LEVEL[level][2]} intensity\n"
                      f"(FLOPs / bytes the {_style.LEVEL[level][2]} serves)")
    if hollow:
        handles.append(Line2D([], [], ls="none", marker="o", ms=7, color="#777777", mfc="white",
                              mew=1.3))
        labels.append("hollow: does not fit in memory\n(weights + KV cache, naive: + scores)")
    handles.append(Line2D([], [], ls="none"))
    labels.append("marker size: prompt tokens")
    for t, size in sizes.items():
        handles.append(Line2D([], [], ls="none", marker="o", ms=size, color="#999999"))
        labels.append(f"T = {t:,}")
    side_legend(ax, handles=handles, labels=labels)
    clear = max([p.intensity for _, p in points] + [c[2] for s in group for c in ceilings(s)])
    _place_ceiling_labels(ax, ceiling_labels, clear * 1.5)  # after the legend: final layout
    return ax


def _decode_label(s: Setting, group: str, context: int) -> str:
    """The legend's words for a decode step: which form, for latent attention (MLA)."""
    if group == "decode.naive":
        return f"decode step, naive MLA: latent expanded each step (context {context:,})"
    if s.architecture.mla:
        return f"decode step, absorbed MLA: attention over the latent (context {context:,})"
    return f"decode step (context {context:,})"


def roofline_figure(settings: Setting | Sequence[Setting], size: str | float = "page",
                    **kwargs) -> Figure:
    """:func:`plot_roofline` on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches)."""
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 0.75 * w))
        plot_roofline(settings, ax=fig.subplots(), **kwargs)
    return fig
