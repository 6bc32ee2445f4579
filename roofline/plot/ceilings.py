"""The roofline's ceilings (:mod:`.roofline`): the memory ceiling β·I and one compute ceiling
per data type of each device, each with its ridge P/β, and for one device the ceiling of each
further memory level the device's file gives a bandwidth for (the hierarchical roofline of
Yang, Kurth & Williams, arXiv 2009.05257); each drawn with the labels to place on it
(:func:`.labels.draw_labels`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import device_label, per_byte, work_unit

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["ceilings", "ceiling_label", "short_label", "memory_name", "draw_ceilings"]


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


def short_label(names: str, peak: float) -> str:
    """A compute ceiling's label where several devices' crowd a column: its data types and its
    peak with the SI prefix alone, as the y axis's ticks write FLOP/s (and OP/s).

    >>> short_label("bf16, fp16", 1.3074e15), short_label("fp32", 6.7e13)
    ('bf16, fp16: 1.31P', 'fp32: 67T')
    """
    return f"{names}: {si(peak).replace(' ', '')}"


def memory_name(s: Setting) -> str:
    """The device memory's kind as its file notes it ('HBM3', 'GDDR6'), else 'memory'."""
    note = (s.hardware.quantity_notes.get("memory.bandwidth") or "").split()
    return note[0] if note and note[0].upper().startswith(("HBM", "GDDR")) else "memory"


def draw_ceilings(ax: Axes, s: Setting, i: int | None, x: tuple[float, float],
                  short: bool) -> list[tuple]:
    """The memory ceiling, each compute ceiling and its ridge (``i``: the device's place among
    several, None for one device); returns the labels to place on them: ("compute", text,
    colour, gid, peak, ridge, its short text: :func:`short_label`), and for one device
    ("ridge", text, colour, its circle's gid, peak, ridge) and ("memory", text, colour, gid,
    bandwidth, end). ``short`` (a column's width): a memory level's label is its name alone
    (the note gives its bandwidth), a ridge's its number; several devices' compute ceilings
    with their peaks' SI prefix alone (:func:`short_label`). The compute ceilings run to the
    x axis's right end, ``x[1]`` (:func:`.labels.draw_labels` may end them sooner)."""
    several = i is not None
    color = _style.device_color(i) if several else "#444444"
    dashes = _style.device_dashes(i) if several else "-"
    bw = s.hardware.bandwidth()
    rows = ceilings(s)
    top = rows[-1][1]
    who = f"{device_label(s)}: " if several else ""
    ridges = (f"\n(ridge{'s' if len(rows) > 1 else ''} "
              f"{', '.join(f'{r:,.0f}' for _, _, r in rows)} FLOP/byte)" if several else "")
    gid = f"memory:{s.hardware.name}"
    ax.plot([x[0], top / bw], [x[0] * bw, top], color=color, lw=1.8, ls=dashes, gid=gid,
            label=f"{who}memory ceiling β·I, β = {si(bw, 'B/s')}{ridges}")
    labels: list[tuple] = []
    if not several:
        labels.append(("memory", memory_name(s) if short else f"{memory_name(s)}: {si(bw, 'B/s')}",
                       color, gid, bw, top / bw))
    roof = s.hardware.peak(s.dtype)
    # the hierarchical roofline's ceilings: one device only (several would crowd the axes)
    for level, level_bw in (s.level_bandwidths if not several else {}).items():
        if level not in _style.LEVEL:  # the interconnect or network: no memory ceiling
            continue
        style, _, name = _style.LEVEL[level]
        level_gid = f"ceiling-{level}:{s.hardware.name}"
        ax.plot([x[0], roof / level_bw], [x[0] * level_bw, roof], color=color, lw=1.0,
                ls=style, alpha=0.8, gid=level_gid,
                label=f"{who}{name} ceiling: {si(level_bw, 'B/s')} × FLOP per {name} byte")
        labels.append(("memory", name if short else f"{name}: {si(level_bw, 'B/s')}", color,
                       level_gid, level_bw, roof / level_bw))
    for names, peak, ridge in rows:
        main = s.dtype in names.split(", ")
        compute = f"compute:{s.hardware.name}:{names}"
        ax.plot([ridge, x[1]], [peak, peak], color=color, lw=1.8 if main else 1.0,
                ls=dashes if several else "-" if main else "--", alpha=1.0 if main else 0.6,
                gid=compute)
        # several devices: the label in the device's colour, without its name (long names
        # would not fit beside one another where ceilings crowd); in a column the peak with
        # the prefix alone, as the y axis's ticks give it ('bf16, fp16: 1.31P')
        text = short_label(names, peak) if several and short else ceiling_label(names, peak)
        labels.append(("compute", text, color, compute, peak, ridge, short_label(names, peak)))
        knee = f"ridge:{s.hardware.name}:{names}"
        ax.plot([ridge], [peak], "o", ms=4, color=color, mfc="white", zorder=4, gid=knee)
        if not several:
            labels.append(("ridge", f"ridge {ridge:,.0f}" if short
                           else f"ridge {per_byte(ridge, names)}", color, knee, peak, ridge))
    return labels


