"""Figure 1, the roofline (log–log): attainable FLOP/s against arithmetic intensity.

The memory ceiling β·I and one compute ceiling per data type of each device, each ridge P/β
annotated with its intensity, and, in the manner of Nsight Compute's hierarchical roofline (Yang,
Kurth & Williams, arXiv 2009.05257), a ceiling β_level·I for each further memory level whose
bandwidth the device's file gives (L2, L3, SRAM); the prefill's operations at the chosen prompt
lengths (projections, attention naive / kernel / ideal, the whole prefill) and a decode step at
each chosen batch (a latent-attention model's in both forms, weight-absorbed and naive), placed
at their HBM intensity and their attained FLOP/s = FLOPs / roofline time (from
:mod:`roofline.evaluate`), and an attention whose traffic at a further level is derived once
more at that level's intensity; optionally the SRAM-only limit of tiled attention: the
intensity it tends to as T → ∞ with the device's SRAM per SM when every re-read comes from HBM
(FlashAttention, Theorem 2). Under parallelism (:mod:`.collectives`), for each device its link
as a ceiling of its own, β_link·I against FLOP per byte sent over it (several devices: thin, in
each device's colour and dash pattern), and the whole prefill once more at that intensity; for
every device a bar from each whole prefill and decode step up to
where it would sit without its collectives' time.

Every ceiling is labelled on the axes (direct labelling: :mod:`.labels`), the compute
ceilings beside their lines or, where they crowd, at their lines' ends; the legend under the axes
names the operations' markers only (and, for several devices, each device's colour and dash
pattern), and a note under it says what marker size, hollow markers, the further markers and
the bars mean, and what a label that found no clear place would have said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import si
from . import _style
from . import collectives
from ._common import (as_list, binary_size, device_label, experts_note, per_byte, plain,
                      sram_unit, title)
from .ceilings import ceiling_label, ceilings, draw_ceilings, memory_name
from .labels import draw_labels, layout, root

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_roofline", "roofline_figure", "ceilings", "ceiling_label", "memory_name"]

_MARKER = _style.MARKER
_SIZE = _style.MIN_POINTS  # points: every label on the axes and the note under them
_STAR = 11.0  # points: a decode step's marker (three quarters of it in a column)
_SHAPE = {"P": "plus", "8": "octagon", "h": "hexagon"}  # a further level's marker, in words
AXES_HEIGHT = {"column": 2.4, "page": 3.4}  # inches: the plot of roofline_figure


def _color(group: str) -> str:
    if group.startswith("attention."):
        return _style.MODE[group.split(".", 1)[1]]
    return _style.KIND[group]


def _fits(s: Setting, p: sweeps.OperationPoint, context: int) -> bool:
    """Whether the point runs in its device's memory: a decode step holds the weights and the
    KV cache of its batch at ``context``; a prefill (and its operations) the weights, the KV
    cache of its prompt and its live activations (:func:`roofline.sweeps.prefill_fits`)."""
    if p.group.startswith("decode"):
        return bool(sweeps.decode_fits(s, [int(p.label.rsplit(" ", 1)[1])], context)[0])
    mode = p.group.partition(".")[2] or s.attention
    return bool(sweeps.prefill_fits(sweeps.with_mode(s, mode), [p.tokens])[0])


_DASH = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dotted"}


def _dashes(gid: str) -> str:
    """The dash pattern of a memory level's or a link's ceiling, by its gid (as
    :func:`.ceilings.draw_ceilings` and :func:`.collectives.draw_links` draw them)."""
    kind = gid.split(":", 1)[0].removeprefix("ceiling-")
    return "-" if kind == "memory" else "-." if kind == "link" else _style.LEVEL[kind][0]


def _under(ax: Axes, legends: list[tuple[list, list[str]]], note: str) -> Callable[[str], None]:
    """The legends, one under the other, then the note, under the x axis's label, centred on
    the Axes, as wide as its figure allows there, and in its layout (the first legend is the
    Axes' legend). Returns what writes the note again (the labels that found no place on the
    axes said in it)."""
    from matplotlib.legend import Legend
    from matplotlib.transforms import ScaledTranslation

    fig = root(ax)
    renderer = fig._get_renderer()
    k = 72.0 / fig.dpi
    box, frame = ax.get_window_extent(renderer), ax.figure.bbox
    middle = (box.x0 + box.x1) / 2
    wide = 2 * min(middle - frame.x0, frame.x1 - middle) * k - 8  # points a row may take
    drop = (box.y0 - ax.xaxis.get_tightbbox(renderer).y0) * k + 4
    for n, (handles, labels) in enumerate(legends):
        below = ax.transAxes + ScaledTranslation(0, -drop / 72, fig.dpi_scale_trans)
        options = dict(loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=below,
                       borderaxespad=0.0, fontsize=_SIZE, handlelength=1.8, columnspacing=1.2)
        for ncol in range(min(len(labels), 4), 0, -1):  # as few rows as the width allows
            legend = Legend(ax, handles, labels, ncol=ncol, **options)
            if legend.get_window_extent(renderer).width * k <= wide:
                break
        if n == 0:
            legend = ax.legend(handles, labels, ncol=ncol, **options)
        else:
            ax.add_artist(legend)
        drop += legend.get_window_extent(renderer).height * k + 3
    text = ax.annotate("", (0.5, 0.0), xycoords="axes fraction", xytext=(0, -drop),
                       textcoords="offset points", ha="center", va="top", fontsize=_SIZE,
                       gid="note")

    def write(note: str) -> None:  # its lines measured on the glyphs, not estimated
        text.set_text(_style.wrap_fitted(note, wide / 72, _SIZE))

    write(note)
    return write


def _note(group: list[Setting], prompts: Sequence[int], context: int, decode: list[int],
          hollow: bool, levels: list[str], sram: bool, short: bool,
          links: list[tuple[str, float]], bars: bool, dropped: Sequence[tuple] = (),
          device_links: Sequence[str] = ()) -> str:
    """What marker size, hollow markers, the further levels' and the links' markers, the bars
    and the dotted line mean, and which bandwidths are estimates, in a sentence or two under
    the legend (``short``: fewer words, and one device's memory levels' and links' bandwidths,
    which their labels leave out); ``decode``: the decode steps' batches, their stars from
    left to right; ``dropped``: the labels that found no clear place on the axes
    (:func:`.labels.draw_labels`), said here instead: the batches (all of them, left to
    right), the ridges, the memory levels (by their dash patterns), the limits;
    ``device_links``: several devices' links, named ('H100-SXM NVLink4 450 GB/s')."""
    tokens = sorted(set(prompts))
    kinds = {spec[0] for spec in dropped}
    parts = [f"Marker size: prompt tokens T = {', '.join(f'{t:,}' for t in tokens)}"
             if len(tokens) > 1 else f"Prompt tokens T = {tokens[0]:,}"]
    if decode:
        parts.append(f"decode at {context:,} cached tokens, batch B"
                     + (f" = {', '.join(map(str, decode))} (stars, left to right)"
                        if "batch" in kinds else ""))
    ridges = [spec for spec in dropped if spec[0] == "ridge"]
    if ridges:
        parts.append(f"ridge{'s' if len(ridges) > 1 else ''} at " + " and ".join(
            f"{per_byte(spec[5], names)} ({names})" for spec in sorted(
                ridges, key=lambda spec: spec[5]) for names in [spec[3].split(":")[-1]]))
    slopes = [spec for spec in dropped if spec[0] == "memory"]  # in the order drawn
    if slopes:
        parts.append(", ".join(
            f"{plain(spec[3].split(':')[1])}'s thin diagonal: {spec[1]}"
            if len(group) > 1 and spec[3].startswith("ceiling-link:")
            else f"{_DASH[_dashes(spec[3])]} diagonal: {spec[1]}" for spec in slopes))
    if hollow:
        parts.append("hollow: does not fit in memory"
                     + ("" if short else " (weights + KV cache; naive: + scores)"))
    for level in levels:
        marker, name = _style.LEVEL[level][1:]
        parts.append(f"{_SHAPE.get(marker, 'small marker')}: attention at its {name} intensity"
                     + ("" if short else f" (FLOPs / {name} bytes)"))
    parts += collectives.note_parts(group, [name for name, _ in links], bars, short,
                                    device_links)
    parts += [note for note in [experts_note(group)] if note]
    if sram:
        hw = group[0].hardware
        where = (f"{binary_size(hw.sram_per_sm)} SRAM per {sram_unit(hw)}"
                 if len(group) == 1 else "each device's SRAM per SM, CU or TensorCore")
        caps = [(plain(spec[3].split(":", 1)[1]) + " " if len(group) > 1 else "")
                + per_byte(spec[4]) for spec in dropped if spec[0] == "limit"]
        parts.append(f"dotted: tiled attention's limit as T → ∞ ({where})"
                     + (": " + ", ".join(caps) if caps else ""))
    s = group[0]
    drawn = [(name, s.level_bandwidths[level], s.hardware.sources.get(
        f"on_chip.{level}_bandwidth", "").startswith("ESTIMATE"))
        for level, (_, _, name) in _style.LEVEL.items()
        if len(group) == 1 and level in s.level_bandwidths]
    if short and len(group) == 1:
        parts.append(", ".join(f"{name} {si(bw, 'B/s')}{'*' if e else ''}" for name, bw, e in
                               [(memory_name(s), s.hardware.bandwidth(), False), *drawn,
                                *((name, bw, False) for name, bw in links)])
                     + (" (*estimated)" if any(e for _, _, e in drawn) else ""))
    elif any(e for _, _, e in drawn):
        names = [name for name, _, e in drawn if e]
        parts.append(f"{', '.join(names)} bandwidth{'s' if len(names) > 1 else ''}: estimates")
    return "; ".join(parts) + "."


def plot_roofline(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (128, 2048,
                  32768), batches: Sequence[int] = (1,), context: int | None = None,
                  sram: bool = True, ax: Axes | None = None,
                  axes_height: float | None = None) -> Axes:
    """The roofline of each device with the operations of a prefill and decode steps on it.

    One device: each operation class in its colour, the ceiling of each further memory level
    the device's file gives a bandwidth for, and each cached attention once more at its L2
    (and L3) intensity. Several: each device in its colour and the dash pattern of its
    ceilings (its HBM and compute ceilings, points and SRAM limit), each operation class by its
    marker; the further levels are left out, where they would crowd the axes. A point that does
    not fit in its device's memory (:func:`roofline.sweeps.decode_fits`,
    :func:`roofline.sweeps.prefill_fits`) is hollow. Under parallelism: each device's links as
    ceilings, the whole prefill at its link intensity, and for each device a bar from each
    whole prefill and decode step up to where it would sit without its collectives
    (:mod:`.collectives`). Every ceiling is labelled beside its line, the compute ceilings'
    labels where they crowd at their lines' ends, past the data (:mod:`.labels`; several
    devices: in the device's colour, without its name; in a column, the peak with the y axis's
    prefix alone); the legend under the axes names the operations' markers (and the devices),
    a note under it what the markers' size and fill and the bars mean, and what a label that
    found no clear place (a ridge's, a batch's, a limit's, a memory level's) would have said.
    The x axis is drawn over the data alone.
    ``context``: cached tokens of the decode step (default: the longest prompt). ``sram``: draw
    tiled attention's limit (devices that give their SRAM per SM). ``axes_height``: inches;
    the figure is made as tall as that plot needs (:func:`roofline_figure`).
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
    # the collectives of each prompt length: the link's ceiling and intensity, the time added
    shares = {id(s): {sh.tokens: sh for sh in collectives.prefill_shares(s, prompts)}
              for s in group}
    if not several:
        xs += [p.level_intensity(level) for _, p in points for level, _ in p.levels]
    xs += [sh.intensity(b) for s in group for sh in shares[id(s)].values() for b, _ in sh.sent]
    ridges = [c[2] for s in group for c in ceilings(s)]
    # the data and the ridges; the right end grows later as far as the ceilings' labels need
    x = (min(xs + ridges) / 2, max(xs + ridges) * 2)
    fig = root(ax)
    inches = ax.figure.bbox.width / fig.dpi  # of the Axes' figure (or subfigure)
    short = inches < _style.NARROW  # a column: shorter labels, smaller markers
    labels: list[tuple] = []
    for i, s in enumerate(group):
        labels += draw_ceilings(ax, s, i if several else None, x, short)
    links = sorted({(collectives.link_name(group[0], b), b) for sh in shares[id(group[0])]
                    .values() for b, _ in sh.sent}, key=lambda n: -n[1]) if not several else []
    if links:  # one device: each link's ceiling against FLOP per byte sent over it
        labels += collectives.draw_links(ax, group[0], list(shares[id(group[0])].values()),
                                         x[0], group[0].hardware.peak(group[0].dtype),
                                         "#444444", short)
    # several devices: each one's links, thin, in its colour and dash pattern, named in the note
    device_links = [f"{device_label(s)} {collectives.link_name(s, b)} {si(b, 'B/s')}"
                    for s in group if several
                    for b in sorted({b for sh in shares[id(s)].values() for b, _ in sh.sent},
                                    reverse=True)]
    for i, s in enumerate(group if several else ()):
        labels += collectives.draw_links(ax, s, list(shares[id(s)].values()), x[0],
                                         s.hardware.peak(s.dtype), _style.device_color(i),
                                         short, _style.device_dashes(i))
    scale = 0.75 if short else 1.0
    star = _STAR * scale
    sizes = dict(zip(sorted(set(prompts)),
                     scale * np.linspace(4.5, 10.0, len(set(prompts)))))
    op_handles: dict[str, Line2D] = {}
    decode_at: dict[str, tuple[float, float, str]] = {}  # batch → lowest star, its colour
    hollow = False  # a point that does not fit in its device's memory
    levels_seen: set[str] = set()  # levels at whose intensity some point is placed too
    bars = False  # a point whose collectives' time is drawn
    for i, s in enumerate(group):
        mine = [p for t, p in points if t is s]
        for g in dict.fromkeys(p.group for p in mine):
            pts = sorted((p for p in mine if p.group == g),
                         key=lambda p: p.tokens if not g.startswith("decode") else p.flops)
            color = _style.device_color(i) if several else _color(g)
            if len(pts) > 1:
                ax.plot([p.intensity for p in pts], [p.attained for p in pts], "-", lw=0.8,
                        color=color, alpha=0.5)
            step = g.startswith("decode")
            op_handles.setdefault(_legend_label(s, g), Line2D(
                [], [], ls="none", marker=_MARKER[g], color="#777777" if several else color,
                ms=9 if step else 6, mec="white"))
            for p in pts:
                size = star if step else sizes[p.tokens]
                fits = _fits(s, p, context)
                hollow = hollow or not fits
                ax.plot([p.intensity], [p.attained], _MARKER[g], color=color, ms=size,
                        mec="white" if fits else color, mew=0.6 if fits else 1.3,
                        mfc=color if fits else "white",
                        zorder=6 - size / 20,  # small ones on top
                        gid=f"point:{s.hardware.name}:{g}:{p.label if step else p.tokens}")
                if g == "prefill" or step:  # the time its collectives add, its link intensity
                    share = shares[id(s)].get(p.tokens) if g == "prefill" else None
                    comm = share.comm_s if share else collectives.decode_comm(s, p, context) \
                        if step else 0.0
                    collectives.bar(ax, s, p, comm, color, p.label if step else str(p.tokens))
                    bars = bars or comm > 0
                    if share:
                        collectives.place(ax, s, p, share, size, color, fits)
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
            gid = f"sram:{s.hardware.name}"
            # up to the roof at its intensity: nothing above it is reached
            roof = min(cap * s.hardware.bandwidth(), s.hardware.peak(s.dtype))
            ax.plot([cap, cap], [min(p.attained for _, p in points) / 10, roof], color=color,
                    ls=":", lw=1.2, gid=gid,
                    label=f"{who}tiled attention's SRAM ceiling: {per_byte(cap)}\n(T → ∞, "
                          f"{binary_size(s.hardware.sram_per_sm)} SRAM per "
                          f"{sram_unit(s.hardware)}, no cache)")
            labels.append(("limit", f"{'tiled' if short else 'tiled attention'} ≤ {cap:,.0f}",
                           color, gid, cap, 0.0))
    # one label per batch, at the lowest star: the stars of several devices line up
    labels += [("batch", f"B = {b}", "#777777" if several else color, "", ix, iy)
               for b, (ix, iy, color) in decode_at.items()]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x)
    peaks = [c[1] for s in group for c in ceilings(s)]
    attained = [p.attained for _, p in points]
    ax.set_ylim(min(attained) / 2, max(peaks) * 3)  # room for a star and a label on the top
    for axis in (ax.xaxis, ax.yaxis):
        _style.plain_ticks(axis)  # 1k FLOP/byte, 100T FLOP/s
    ax.set_xlabel("arithmetic intensity I (FLOP/byte)")
    ax.set_ylabel("attained performance (FLOP/s)")
    ax.set_title(_style.wrap(title("Roofline", group), inches - 0.4, ax.title.get_fontsize()))
    legends = [(list(op_handles.values()), list(op_handles))]
    if several:  # each device by its colour and its ceilings' dash pattern, named once
        legends.append(([Line2D([], [], color=_style.device_color(i), lw=1.8,
                                ls=_style.device_dashes(i)) for i in range(len(group))],
                        [f"{device_label(s)}: {memory_name(s)} {si(s.hardware.bandwidth(), 'B/s')}"
                         for s in group]))
    layout(fig)
    decode = [int(b) for b, _ in sorted(decode_at.items(), key=lambda item: item[1][0])]

    def note(dropped: Sequence[tuple] = ()) -> str:
        return _note(group, prompts, context, decode, hollow,
                     [lv for lv in _style.LEVEL if lv in levels_seen], bool(caps), short,
                     links, bars, dropped, device_links)

    def tall() -> None:  # the figure as tall as the plot and what lies around it
        if axes_height is not None:
            layout(fig)
            fig.set_figheight(fig.get_figheight() + axes_height
                              - ax.get_window_extent().height / fig.dpi)

    def said(dropped: list[tuple]) -> None:
        write(note(dropped))
        tall()

    write = _under(ax, legends, note())
    tall()
    # the compute ceilings' labels first (they may set the x axis's right end), then each
    # batch's beside its star, the memory levels' along their lines, the limits' and the
    # ridges'; those that find no clear place said in the note instead
    order = ("compute", "batch", "memory", "limit", "ridge")  # the highest ceiling first
    draw_labels(ax, sorted(labels, key=lambda spec: (
        order.index(spec[0]), -spec[4] if spec[0] == "compute" else 0)), said)
    return ax


def _legend_label(s: Setting, group: str) -> str:
    """The legend's words for an operation class: which form of decode step, for latent
    attention (MLA)."""
    if group == "decode.naive":
        return "decode, naive MLA"
    if group == "decode":
        return "decode, absorbed MLA" if s.architecture.mla else "decode step"
    if group.startswith("attention."):
        return f"attention, {group.split('.', 1)[1]}"
    return _style.LABEL[group]


def roofline_figure(settings: Setting | Sequence[Setting], size: str | float = "page",
                    **kwargs) -> Figure:
    """:func:`plot_roofline` on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches), as tall as a plot of
    :data:`AXES_HEIGHT` and the legends and note under it need."""
    w = _style.width(size)
    height = AXES_HEIGHT["column" if _style.narrow(size) else "page"]
    with _style.style():
        fig = _style.figure((w, 2 * height + 3))  # made as tall as it needs below
        plot_roofline(settings, ax=fig.subplots(), axes_height=height, **kwargs)
    return fig
