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
(FlashAttention, Theorem 2).

Every ceiling is labelled on its line (direct labelling); the legend under the axes names the
operations' markers only (and, for several devices, each device's colour and dash pattern), and
a note under it says what marker size, hollow markers and the further markers mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import si
from . import _style
from ._common import as_list, binary_size, device_label, per_byte, title, work_unit

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_roofline", "roofline_figure", "ceilings"]

_MARKER = _style.MARKER
_SIZE = _style.MIN_POINTS  # points: every label on the axes and the note under them
_STEP = 10 ** 0.25  # the x axis grows by a quarter decade at a time for the ceilings' labels
_GROWTH = 16  # at most that many times (four decades, where labels crowd most)
_FAR = 1e4  # the compute ceilings run this far past the first right edge: past any growth
_STAR = 11.0  # points: a decode step's marker (three quarters of it in a column)
_SHAPE = {"P": "plus", "8": "octagon", "h": "hexagon"}  # a further level's marker, in words
AXES_HEIGHT = {"column": 2.4, "page": 3.4}  # inches: the plot of roofline_figure


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


def memory_name(s: Setting) -> str:
    """The device memory's kind as its file notes it ('HBM3', 'GDDR6'), else 'memory'."""
    note = (s.hardware.quantity_notes.get("memory.bandwidth") or "").split()
    return note[0] if note and note[0].upper().startswith(("HBM", "GDDR")) else "memory"


def _draw_ceilings(ax: Axes, s: Setting, i: int | None, x: tuple[float, float],
                   short: bool) -> list[tuple]:
    """The memory ceiling, each compute ceiling and its ridge (``i``: the device's place among
    several, None for one device); returns the labels to place on them: ("compute", text,
    colour, gid, peak, ridge), and for one device ("ridge", text, colour, gid, peak, ridge) and
    ("memory", text, colour, gid, bandwidth, end). ``short`` (a column's width): a memory
    level's label is its name alone (the note gives its bandwidth), a ridge's its number;
    several devices' compute ceilings are labelled with the peak of the setting's data type
    and the names of the other types."""
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
        ax.plot([ridge, x[1] * _FAR], [peak, peak], color=color, lw=1.8 if main else 1.0,
                ls=dashes if several else "-" if main else "--", alpha=1.0 if main else 0.6,
                gid=compute)
        # several devices: the label in the device's colour, without its name (long names
        # would not fit beside one another where ceilings crowd); in a column the data
        # type's peak alone (the title names the type), the other types' names alone
        text = ceiling_label(names, peak) if not (several and short) else (
            si(peak, f"{work_unit(names)}/s") if main else names)
        labels.append(("compute", text, color, compute, peak, ridge))
        ax.plot([ridge], [peak], "o", ms=4, color=color, mfc="white", zorder=4,
                gid=f"ridge:{s.hardware.name}:{names}")
        if not several:
            labels.append(("ridge", f"ridge {ridge:,.0f}" if short
                           else f"ridge {per_byte(ridge, names)}", color, compute, peak, ridge))
    return labels


def _root(ax: Axes) -> Any:
    try:
        return ax.get_figure(root=True)  # the Figure, also for an Axes in a SubFigure
    except TypeError:  # matplotlib < 3.10
        return ax.figure


def _layout(fig: Any) -> Any:
    """Lay the figure out (its layout engine alone, else a draw); returns its renderer."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
    else:
        fig.draw_without_rendering()
    return fig._get_renderer()


class _Frame:
    """The laid-out Axes in points from its lower-left corner, on its log–log scales, with the
    obstacles a label must avoid: each point's marker (centre and radius) and each ceiling
    (a segment, by gid). ``layout``: lay the figure out first (else as it was last laid out:
    a trial of another x range)."""

    def __init__(self, ax: Axes, layout: bool = True) -> None:
        self.fig = fig = _root(ax)
        self.renderer = _layout(fig) if layout else fig._get_renderer()
        self.k = 72.0 / fig.dpi  # points per pixel
        box = ax.get_window_extent()
        self.width, self.height = box.width * self.k, box.height * self.k
        (self.x0, x1), (self.y0, y1) = np.log10(ax.get_xlim()), np.log10(ax.get_ylim())
        self.px = self.width / (x1 - self.x0)  # points per decade
        self.py = self.height / (y1 - self.y0)
        self.points: list[tuple[float, float, float]] = []
        self.lines: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
        for line in ax.get_lines():
            gid, xs, ys = str(line.get_gid()), line.get_xdata(), line.get_ydata()
            if gid.startswith("point:"):
                self.points.append((*self.at(xs[0], ys[0]), line.get_markersize() / 2 + 1))
            elif gid.startswith(("memory:", "ceiling-", "compute:", "sram:")):
                self.lines[gid] = (self.at(xs[0], ys[0]), self.at(xs[-1], ys[-1]))

    def at(self, x: float, y: float) -> tuple[float, float]:
        """Where the data point (x, y) falls, in points."""
        return (math.log10(x) - self.x0) * self.px, (math.log10(y) - self.y0) * self.py

    def data(self, u: float, v: float) -> tuple[float, float]:
        return 10 ** (self.x0 + u / self.px), 10 ** (self.y0 + v / self.py)

    def size(self, text: str) -> tuple[float, float]:
        """Width and height in points of a label as drawn."""
        from matplotlib.text import Text

        label = Text(0, 0, text, fontsize=_SIZE)
        label.set_figure(self.fig)
        box = label.get_window_extent(self.renderer)
        return box.width * self.k, box.height * self.k


def _box(c: tuple[float, float], w: float, h: float, angle: float) -> tuple[float, ...]:
    """The bounding box (left, bottom, right, top) of a w × h label centred at c, turned by
    ``angle`` degrees."""
    a = math.radians(angle)
    half_w = (w * abs(math.cos(a)) + h * abs(math.sin(a))) / 2
    half_h = (w * abs(math.sin(a)) + h * abs(math.cos(a))) / 2
    return c[0] - half_w, c[1] - half_h, c[0] + half_w, c[1] + half_h


def _local(p: tuple[float, float], c: tuple[float, float], angle: float) -> tuple[float, float]:
    """p in the frame of a label centred at c and turned by ``angle`` degrees."""
    a = math.radians(angle)
    du, dv = p[0] - c[0], p[1] - c[1]
    return du * math.cos(a) + dv * math.sin(a), -du * math.sin(a) + dv * math.cos(a)


def _crosses(segment: tuple, c: tuple[float, float], w: float, h: float, angle: float) -> bool:
    """Whether a line segment runs through the label (Liang–Barsky clipping, in the label's
    frame, a point's margin around it)."""
    (u1, v1), (u2, v2) = (_local(p, c, angle) for p in segment)
    du, dv = u2 - u1, v2 - v1
    lo, hi = 0.0, 1.0
    for p, q in ((-du, u1 + w / 2 + 1), (du, w / 2 + 1 - u1), (-dv, v1 + h / 2 + 1),
                 (dv, h / 2 + 1 - v1)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
        if lo > hi:
            return False
    return True


def _candidates(spec: tuple, f: _Frame, w: float, h: float) -> list[tuple]:
    """The places a label may take, best first: (centre, angle, anchor, only where no line
    crosses it), in points; the anchor is a point of its own line or marker, from which it is
    drawn offset."""
    kind, _, _, _, a, b = spec
    out = []
    if kind == "compute":  # on its line, rightmost first, above or below (else lifted clear
        # of the markers on the line); left of its ridge only where no line crosses it
        v = f.at(1.0, a)[1]
        ridge = f.at(b, 1.0)[0] + 3
        for lift in (2.0, 1.0 + max((r for _, _, r in f.points), default=1.0)):
            u = f.width - 3 - w / 2
            while u - w / 2 >= 1 and u + w / 2 >= ridge + 20:  # over some of its line
                out += [((u, v + side * (lift + h / 2)), 0.0, (u, v), u - w / 2 < ridge)
                        for side in (1, -1)]
                u -= 4
        u = f.width - 3 - w / 2
        out = out or [((u, v + 2 + h / 2), 0.0, (u, v), False)]  # wider than its room
    elif kind == "ridge":  # beside the knee: left above, right below, left below, right above,
        ku, kv = f.at(b, a)  # then a line further out
        out = [((ku + du * (4 + w / 2), kv + dv * (3 + h / 2 + n * (h + 2))), 0.0, (ku, kv),
                False) for n in (0, 1) for du, dv in ((-1, 1), (1, -1), (-1, -1), (1, 1))]
    elif kind == "memory":  # turned with the line, from its foot up to its end: on it, else
        angle = math.atan2(f.py, f.px)  # beside it, below or above
        end = f.at(b, 1.0)[0]
        for off in (0.0, -(h / 2 + 1.5), h / 2 + 1.5):
            u = 0.0
            while u <= min(end, f.width):
                c = (u, (math.log10(a) + f.x0 + u / f.px - f.y0) * f.py)
                out.append(((c[0] - off * math.sin(angle), c[1] + off * math.cos(angle)),
                            math.degrees(angle), c, False))
                u += 3
    elif kind == "limit":  # beside the vertical line, turned upright, from the foot up
        cu, v = f.at(a, 1.0)[0], 3 + w / 2
        while v + w / 2 <= f.height:
            out += [((cu + side * (2 + h / 2), v), 90.0, (cu, v), False) for side in (-1, 1)]
            v += 4
    elif kind == "batch":  # beside its star: right, below right, below, left, above left,
        su, sv = f.at(a, b)  # then further right or lower
        r = max((r - 1 for pu, pv, r in f.points if abs(pu - su) + abs(pv - sv) < 0.5),
                default=4.0)  # its star's
        out = [((su + du, sv + dv), 0.0, (su, sv), False)
               for du, dv in ((r + 2 + w / 2, 0), (r / 2 + w / 2, -r - 1 - h / 2),
                              (0, -r - 1 - h / 2), (-r - 2 - w / 2, 0),
                              (-r / 2 - w / 2, r + 1 + h / 2), (r + 2 + w / 2, -h),
                              (r + 2 + w, -h / 2), (0, -r - 3 - 1.5 * h))]
    return out


def _overlap(box: tuple[float, ...], taken: list[tuple[float, ...]], f: _Frame) -> float:
    """How much of ``box`` lies over the labels taken or outside the Axes (points²)."""
    def common(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return (max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
                * max(0.0, min(a[3], b[3]) - max(a[1], b[1])))

    inside = common(box, (0.0, 0.0, f.width, f.height))
    return sum(common(box, t) for t in taken) + (box[2] - box[0]) * (box[3] - box[1]) - inside


def _place(specs: list[tuple], f: _Frame) -> tuple[list[tuple], tuple[int, int, int],
                                                   list[tuple]]:
    """Each label's place, in the order given, inside the Axes and clear of every label placed
    before it (a point and a half above or below, a space beside): where it can, clear of
    every marker and crossed by no line but its own, else clear of the markers, else anywhere
    (else where it overlaps the labels least); returns (spec, centre, angle, anchor) for each,
    how crowded the labels are: how many compute ceilings' labels found no place clear of the
    markers, how many a line crosses, and how many other labels found no place clear of the
    markers; and the labels that found no place clear of the markers."""
    taken: list[tuple[float, ...]] = []
    out, crowded, stuck = [], [0, 0, 0], []

    def free(c: tuple[float, float], w: float, h: float, angle: float, own: str,
             level: int) -> bool:
        left, bottom, right, top = box = _box(c, w, h, angle)
        if left < 1 or bottom < 1 or right > f.width - 1 or top > f.height - 1:
            return False
        if any(box[0] < t[2] + 5 and t[0] < box[2] + 5 and box[1] < t[3] + 1.5
               and t[1] < box[3] + 1.5 for t in taken):  # a space apart along a line
            return False
        if level < 2 and any(abs(lu) < w / 2 + r and abs(lv) < h / 2 + r for lu, lv, r in (
                (*_local((pu, pv), c, angle), r) for pu, pv, r in f.points)):
            return False
        return level > 0 or not any(_crosses(seg, c, w, h, angle)
                                    for gid, seg in f.lines.items() if gid != own)

    for spec in specs:
        w, h = f.size(spec[1])
        options = _candidates(spec, f, w, h)
        found = next(((level, o) for level in range(3) for o in options
                      if (level == 0 or not o[3]) and free(o[0], w, h, o[1], spec[3], level)),
                     None) or (3, min(options, key=lambda o: _overlap(_box(o[0], w, h, o[1]),
                                                                       taken, f)))
        if spec[0] == "compute" and found[0] > 0:
            crowded[0 if found[0] > 1 else 1] += 1
        elif found[0] > 1:
            crowded[2] += 1
        if found[0] > 1:
            stuck.append(spec)
        centre, angle, anchor, _ = found[1]
        taken.append(_box(centre, w, h, angle))
        out.append((spec, centre, angle, anchor))
    return out, (crowded[0], crowded[1], crowded[2]), stuck


def _cost(crowded: tuple[int, int, int]) -> int:
    """How crowded labels are: a compute ceiling's label over markers counts 100, one that a
    line crosses 4 (a decade's growth of the x axis), another label over markers 1."""
    over, crossed, others = crowded
    return 100 * over + 4 * crossed + others


def _arrange(specs: list[tuple], f: _Frame) -> tuple[list[tuple], tuple[int, int, int]]:
    """:func:`_place`, and again with the labels that found no place clear of the markers
    placed first (twice at most): the places of the least crowded arrangement (:func:`_cost`)
    and how crowded it is."""
    best: tuple[list[tuple], tuple[int, int, int]] | None = None
    for _ in range(3):
        out, crowded, stuck = _place(specs, f)
        if best is None or _cost(crowded) < _cost(best[1]):
            best = out, crowded
        if not stuck:
            break
        specs = stuck + [spec for spec in specs if spec not in stuck]
    assert best is not None
    return best


def _draw_labels(ax: Axes, specs: list[tuple]) -> None:
    """The labels on the ceilings, ridges, limits and decode steps, placed (:func:`_arrange`)
    in points of the laid-out Axes, its x axis grown (by quarter decades, up to four decades)
    as far as the compute ceilings' labels need: to the first x range where each lies clear
    of the markers and of every line but its own, else to the least crowded one, each quarter
    decade counted as a label over markers (:func:`_cost`). Each is drawn at its offset from
    a point of its own line, so that it moves with its line."""
    x0, x1 = ax.get_xlim()
    tried = []
    for n in range(_GROWTH + 1):  # trials on the Axes as laid out: the ticks change little
        ax.set_xlim(x0, x1 * _STEP**n)
        crowded = _arrange(specs, _Frame(ax, layout=n == 0))[1]
        tried.append((_cost(crowded) + n, n))
        if crowded[:2] == (0, 0):  # every compute ceiling's label clear
            break
    cost, n = min(tried)
    final = []  # laid out at that range (its ticks may move the Axes' edge a little), and
    for m in range(n, min(n + 3, _GROWTH + 1)):  # a quarter decade further while worse
        ax.set_xlim(x0, x1 * _STEP**m)
        f = _Frame(ax)
        final.append((_cost(_arrange(specs, f)[1]) + m, m, f))
        if final[-1][0] <= cost:
            break
    _, m, f = min(final, key=lambda t: t[:2])
    if m != final[-1][1]:  # laid out again at the range chosen
        ax.set_xlim(x0, x1 * _STEP**m)
        f = _Frame(ax)
    placed, _ = _arrange(specs, f)
    for spec, centre, angle, anchor in placed:
        kind, text, color, gid = spec[:4]
        name = "ceiling" if kind == "compute" else kind
        ax.annotate(text, f.data(*anchor), xytext=(centre[0] - anchor[0], centre[1] - anchor[1]),
                    textcoords="offset points", ha="center", va="center", rotation=angle,
                    rotation_mode="anchor", fontsize=_SIZE, color=color,
                    annotation_clip=False, in_layout=False, gid=f"{name}-label:{text}",
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.8)
                    if kind == "memory" else None)


def _fits(s: Setting, p: sweeps.OperationPoint, context: int) -> bool:
    """Whether the point runs in its device's memory: a decode step holds the weights and the
    KV cache of its batch at ``context``; a prefill (and its operations) the weights and the
    KV cache of its prompt, and with naive attention one layer's score matrix too."""
    if p.group.startswith("decode"):
        return bool(sweeps.decode_fits(s, [int(p.label.rsplit(" ", 1)[1])], context)[0])
    mode = p.group.partition(".")[2] or s.attention
    return bool(sweeps.prefill_fits(sweeps.with_mode(s, mode), [p.tokens])[0])


def _under(ax: Axes, legends: list[tuple[list, list[str]]], note: str) -> None:
    """The legends, one under the other, then the note, under the x axis's label, centred on
    the Axes, as wide as its figure allows there, and in its layout (the first legend is the
    Axes' legend)."""
    from matplotlib.legend import Legend
    from matplotlib.transforms import ScaledTranslation

    fig = _root(ax)
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
    if note:
        text = ax.annotate(_style.wrap(note, wide / 72, _SIZE), (0.5, 0.0),
                           xycoords="axes fraction", xytext=(0, -drop),
                           textcoords="offset points", ha="center", va="top", fontsize=_SIZE,
                           gid="note")
        drawn = text.get_window_extent(renderer).width * k
        if drawn > wide:  # glyphs wider than wrap's average: lines as much shorter
            text.set_text(_style.wrap(note, wide / 72 * wide / drawn, _SIZE))


def _note(group: list[Setting], prompts: Sequence[int], context: int, decode: bool,
          hollow: bool, levels: list[str], sram: bool, short: bool) -> str:
    """What marker size, hollow markers, the further levels' markers and the dotted line mean,
    and which bandwidths are estimates, in a sentence or two under the legend (``short``:
    fewer words, and one device's memory levels' bandwidths, which their labels leave out)."""
    tokens = sorted(set(prompts))
    parts = [f"Marker size: prompt tokens T = {', '.join(f'{t:,}' for t in tokens)}"
             if len(tokens) > 1 else f"Prompt tokens T = {tokens[0]:,}"]
    if decode:
        parts.append(f"decode at {context:,} cached tokens, batch B")
    if hollow:
        parts.append("hollow: does not fit in memory"
                     + ("" if short else " (weights + KV cache; naive: + scores)"))
    for level in levels:
        marker, name = _style.LEVEL[level][1:]
        parts.append(f"{_SHAPE.get(marker, 'small marker')}: attention at its {name} intensity"
                     + ("" if short else f" (FLOPs / {name} bytes)"))
    if sram:
        where = (f"{binary_size(group[0].hardware.sram_per_sm)} SRAM per SM"
                 if len(group) == 1 else "each device's SRAM per SM")
        parts.append(f"dotted: tiled attention's limit as T → ∞ ({where})")
    s = group[0]
    drawn = [(name, s.level_bandwidths[level], s.hardware.sources.get(
        f"on_chip.{level}_bandwidth", "").startswith("ESTIMATE"))
        for level, (_, _, name) in _style.LEVEL.items()
        if len(group) == 1 and level in s.level_bandwidths]
    if short and len(group) == 1:
        parts.append(", ".join(f"{name} {si(bw, 'B/s')}{'*' if e else ''}" for name, bw, e in
                               [(memory_name(s), s.hardware.bandwidth(), False), *drawn])
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
    :func:`roofline.sweeps.prefill_fits`) is hollow. Every ceiling is labelled on its line (the
    compute ceilings' labels staggered along x where they crowd; several devices: in the
    device's colour, without its name); the legend under the axes names the operations'
    markers (and the devices), a note under it what the markers' size and fill mean. The x
    axis runs from the data to as far right as the ceilings' labels need.
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
    if not several:
        xs += [p.level_intensity(level) for _, p in points for level, _ in p.levels]
    ridges = [c[2] for s in group for c in ceilings(s)]
    # the data and the ridges; the right end grows later as far as the ceilings' labels need
    x = (min(xs + ridges) / 2, max(xs + ridges) * 2)
    fig = _root(ax)
    inches = ax.figure.bbox.width / fig.dpi  # of the Axes' figure (or subfigure)
    short = inches < _style.NARROW  # a column: shorter labels, smaller markers
    labels: list[tuple] = []
    for i, s in enumerate(group):
        labels += _draw_ceilings(ax, s, i if several else None, x, short)
    scale = 0.75 if short else 1.0
    star = _STAR * scale
    sizes = dict(zip(sorted(set(prompts)),
                     scale * np.linspace(4.5, 10.0, len(set(prompts)))))
    op_handles: dict[str, Line2D] = {}
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
                          f"{binary_size(s.hardware.sram_per_sm)} SRAM per SM, no cache)")
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
    _layout(fig)
    decode = any(p.group.startswith("decode") for _, p in points)
    _under(ax, legends, _note(group, prompts, context, decode, hollow,
                              [lv for lv in _style.LEVEL if lv in levels_seen], bool(caps), short))
    if axes_height is not None:  # the figure as tall as the plot and what lies around it
        _layout(fig)
        fig.set_figheight(fig.get_figheight() + axes_height
                          - ax.get_window_extent().height / fig.dpi)
    # the compute ceilings' labels first (they set the x axis's right end), then each batch's
    # beside its star, the memory levels' along their lines, the limits' and the ridges'
    order = ("compute", "batch", "memory", "limit", "ridge")  # the highest ceiling first
    _draw_labels(ax, sorted(labels, key=lambda spec: (order.index(spec[0]),
                                                      -spec[4] if spec[0] == "compute" else 0)))
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
