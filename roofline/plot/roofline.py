"""Figure 1, the roofline (log–log): attainable FLOP/s against arithmetic intensity.

The memory ceiling β·I and one compute ceiling per data type of each device, each ridge P/β
annotated with its intensity; the prefill's operations at the chosen prompt lengths
(projections, attention naive / tiled / ideal, the whole prefill) and a decode step at each
chosen batch, placed at their intensity and their attained FLOP/s = FLOPs / roofline time (from
:mod:`roofline.evaluate`); optionally the SRAM ceiling of tiled attention: the intensity it
tends to as T → ∞ with the device's SRAM per SM (FlashAttention, Theorem 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import as_list, side_legend, title

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_roofline", "roofline_figure", "ceilings"]

_MARKER = {"projection": "s", "attention.naive": "v", "attention.tiled": "D",
           "attention.tiled_fa2": "d", "attention.ideal": "^", "prefill": "o", "decode": "*"}


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


def _draw_ceilings(ax: Axes, s: Setting, color: str, x: tuple[float, float],
                   several: bool) -> None:
    bw = s.hardware.bandwidth()
    rows = ceilings(s)
    top = rows[-1][1]
    who = f"{s.hardware.name}: " if several else ""
    ax.plot([x[0], top / bw], [x[0] * bw, top], color=color, lw=1.8,
            gid=f"memory:{s.hardware.name}",
            label=f"{who}memory ceiling β·I, β = {si(bw, 'B/s')}")
    for names, peak, ridge in rows:
        main = s.dtype in names.split(", ")
        ax.plot([ridge, x[1]], [peak, peak], color=color, lw=1.8 if main else 1.0,
                ls="-" if main else "--", alpha=1.0 if main else 0.6,
                gid=f"compute:{s.hardware.name}:{names}")
        ax.annotate(f"{who}{names}: {si(peak, 'FLOP/s')}", (x[1], peak), xytext=(-2, 2),
                    textcoords="offset points", ha="right", va="bottom", fontsize=7,
                    color=color)
        ax.plot([ridge], [peak], "o", ms=4, color=color, mfc="white", zorder=4,
                gid=f"ridge:{s.hardware.name}:{names}")
        ax.annotate(f"ridge {ridge:.0f} FLOP/byte", (ridge, peak), xytext=(-4, 3),
                    textcoords="offset points", ha="right", va="bottom", fontsize=6.5,
                    color=color)


def plot_roofline(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (128, 2048,
                  32768), batches: Sequence[int] = (1,), context: int | None = None,
                  sram: bool = True, ax: Axes | None = None) -> Axes:
    """The roofline of each device with the operations of a prefill and decode steps on it.

    ``context``: cached tokens of the decode step (default: the longest prompt). ``sram``: draw
    tiled attention's ceiling (devices that give their SRAM per SM).
    """
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    context = context or max(prompts)
    points = []
    for s in group:
        points += [(s, p) for p in sweeps.operation_points(s, prompts)]
        points += [(s, sweeps.decode_point(s, b, context)) for b in batches]
    xs = [p.intensity for _, p in points if p.intensity > 0]
    low = min([*xs, *(c[2] for s in group for c in ceilings(s))])
    high = max([*xs, *(c[2] for s in group for c in ceilings(s))])
    x = (low / 2, 10 ** np.ceil(np.log10(high * 10)))  # room for the ceilings' labels
    for i, s in enumerate(group):
        _draw_ceilings(ax, s, _style.DEVICE[i] if several else "#444444", x, several)
    sizes = dict(zip(sorted(set(prompts)), np.linspace(4.5, 10.0, len(set(prompts)))))
    seen: set[str] = set()
    for i, s in enumerate(group):
        mine = [p for t, p in points if t is s]
        for g in dict.fromkeys(p.group for p in mine):
            pts = sorted((p for p in mine if p.group == g),
                         key=lambda p: p.tokens if g != "decode" else p.flops)
            color = _color(g)
            if len(pts) > 1:
                ax.plot([p.intensity for p in pts], [p.attained for p in pts], "-", lw=0.8,
                        color=color, alpha=0.5)
            for p in pts:
                label = p.label if g != "decode" else f"decode step (context {context:,})"
                label = label if label not in seen else None
                seen.add(label or "")
                size = 11.0 if g == "decode" else sizes[p.tokens]
                ax.plot([p.intensity], [p.attained], _MARKER[g], color=color, ms=size,
                        mec="white", mew=0.6, zorder=6 - size / 20,  # small ones on top
                        gid=f"point:{s.hardware.name}:{g}:{p.label if g == 'decode' else p.tokens}")
                if label:
                    ax.plot([], [], _MARKER[g], color=color, ms=11 if g == "decode" else 7,
                            mec="white", label=label)
                if g == "decode":
                    ax.annotate(f"B = {p.label.rsplit(' ', 1)[1]}", (p.intensity, p.attained),
                                xytext=(5, -5), textcoords="offset points", ha="left",
                                va="top", fontsize=7, color=color)
        if sram and s.hardware.sram_per_sm is not None:
            cap = sweeps.attention_intensity_limit(s, "tiled")
            who = f"{s.hardware.name}: " if several else ""
            ax.axvline(cap, color=_style.MODE["tiled"], ls=":", lw=1.2,
                       gid=f"sram:{s.hardware.name}",
                       label=f"{who}tiled attention's SRAM ceiling: {cap:.0f} FLOP/byte\n"
                             f"(T → ∞, {s.hardware.sram_per_sm / 1024:.0f} KiB SRAM per SM)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x)
    peaks = [c[1] for s in group for c in ceilings(s)]
    attained = [p.attained for _, p in points]
    ax.set_ylim(10 ** np.floor(np.log10(min([*attained, x[0] * group[0].hardware.bandwidth()]))),
                max(peaks) * 3)
    ax.set_xlabel("arithmetic intensity I (FLOP/byte)")
    ax.set_ylabel("attained FLOP/s (FLOP/s)")
    ax.set_title(title("Roofline", group))
    from matplotlib.lines import Line2D

    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], ls="none"))
    labels.append("marker size: prompt tokens")
    for t, size in sizes.items():
        handles.append(Line2D([], [], ls="none", marker="o", ms=size, color="#999999"))
        labels.append(f"T = {t:,}")
    side_legend(ax, handles=handles, labels=labels)
    return ax


def roofline_figure(settings: Setting | Sequence[Setting], **kwargs) -> Figure:
    """:func:`plot_roofline` on a new Figure in the house style."""
    with _style.style():
        fig = _style.figure(_style.WIDE)
        plot_roofline(settings, ax=fig.subplots(), **kwargs)
    return fig
