"""Figure 4, prefill against decode: arithmetic intensity against prompt length (prefill) and
against decode batch (one decode step), with each device's ridge P/β: prefill's projections
reuse each weight over T rows and cross the ridge after a few hundred tokens, while a decode
step reuses it over only B rows and reads the KV cache besides. Where a cache level's traffic
ends the prefill's compute-bound regime (fused attention re-reading K and V through the L2),
the prefill's intensity at that level is drawn too, against that level's ridge P/β_level, in
the manner of the hierarchical roofline (Yang, Kurth & Williams, arXiv 2009.05257). At a
column's width the panels are stacked, at a page's side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sweeps
from ..evaluate import Setting
from ..tables import level_name
from . import _style
from ._common import (SPACING, as_list, crossovers, device_label, fit_height_within,
                      legend_note, log_axes, panel_title, shade_beyond_context,
                      tallest, title)
from .phases_sweeps import PROMPTS, decode_batches, level_intensity, prompt_sweep
from .phases_sweeps import cached as _cached
from .phases_sweeps import regime as _regime

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_prefill_intensity", "plot_decode_intensity", "phases_figure", "decode_batches",
           "level_intensity", "prompt_sweep", "PROMPTS"]

_LEAST = 1.1  # inches: the least a stacked panel is shortened to, so that four devices'
# legends fit a column's 8.5 in
_LEVEL_MARKS = 9  # markers along a cache level's ridge, evenly across the panel (a tenth
# of its width apart)
_SHARED = "#777777"  # curves that do not depend on the device, when several are overlaid
# latent attention's decode forms in the legend (roofline.derive.mla.decode_step)
_FORM_WORDS = {"absorbed": "absorbed MLA: attention over the latent",
               "naive": "naive MLA: latent expanded each step"}


def _size(i: int, n: int, big: float, small: float, alone: float) -> float:
    """A line width or marker size: ``alone`` for one device; several: nested
    (:func:`roofline.plot._style.nested`), so that coinciding ones all show."""
    return alone if n == 1 else _style.nested(i, n, big, small)


def _proxy(**kwargs: Any) -> Any:
    """A legend handle drawn in no panel: a style said once for every device."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **kwargs)


def _ridges(ax: Axes, group: list[Setting], xs: np.ndarray,
            levels: dict[str, str] | None = None) -> list[Any]:
    """Each device's ridge and (``levels``: device → level) the ridge P/β_level of the cache
    level whose traffic binds it. One device: each labelled on its line; several: each in its
    colour and its own dash pattern, so that two ridges at nearly the same intensity both
    show; returns the ridge lines (several devices' legend handles)."""
    several = len(group) > 1
    lines = []
    for i, s in enumerate(group):
        color = _style.device_color(i) if several else "#444444"
        lines.append(ax.axhline(s.ridge, color=color, lw=1.2,
                                ls=_style.device_dashes(i) if several else "-.",
                                gid=f"ridge:{s.hardware.name}"))
        level = (levels or {}).get(s.hardware.name, "")
        cached = s.peak / s.level_bandwidths[level] if _cached(level) else None
        if cached is not None:
            # thin, dashed and marked with its level's marker (as the curve per byte of that
            # level), over the devices' ridges: where it lies on another device's ridge (H100's
            # L2 ridge 160 on A100's ridge 153) it still shows
            line = ax.axhline(cached, color=color, lw=0.8, ls=_style.LEVEL[level][0],
                              marker=_style.LEVEL[level][1], ms=3.5, zorder=2.3,
                              gid=f"ridge:{level}:{s.hardware.name}")
            across = np.linspace(0.0, 1.0, _LEVEL_MARKS + 2)  # axes fractions, as axhline's
            line.set_data(across, np.full(across.shape, cached))
            # not at the panel's edges; one device: clear of its tag at the left end
            line.set_markevery(slice(1 if several else 4, -1))
        if several:
            continue
        # short, at the left end, where the curves are still below the ridges (on a light
        # ground where one passes); the upper line's label above it, the lower one's below
        high = cached is None or s.ridge >= cached
        ground = {"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8}
        ax.text(xs[0] * 1.15, s.ridge, f"ridge {s.ridge:,.0f}", va="bottom" if high else "top",
                fontsize=7, color=color, gid="tag:ridge", bbox=ground)
        if cached is not None:
            ax.text(xs[0] * 1.15, cached, f"{level_name(level)} ridge {cached:,.0f}",
                    va="top" if high else "bottom", fontsize=7, color=color,
                    gid=f"tag:ridge:{level}", bbox=ground)
    return lines


def _cross(ax: Axes, x: float | None, y: float | None, color: str, label: str | None,
           gid: str, marker: str = "o", size: float = 6.0, zorder: float = 5) -> None:
    """A hollow marker at (x, y); at none (x None: past the axis), its legend entry only."""
    ax.plot([] if x is None else [x], [] if y is None else [y], marker, ms=size, mfc="white",
            mec=color, mew=1.5, zorder=zorder, label=label, gid=gid)


def _tokens(values: Sequence[int], what: str = "T") -> str:
    return f"{what} = {', '.join(f'{t:,}' for t in values)}"


def _glued(text: str) -> str:
    """'T = 128' with no break a note's wrapping may take (no-break spaces)."""
    return text.replace(" = ", "\u00a0=\u00a0", 1)


def _within(x: float | None, xs: np.ndarray) -> bool:
    """Whether a prompt length lies on the axis (``xs``'s range)."""
    return x is not None and xs[0] <= x <= xs[-1]


def plot_prefill_intensity(settings: Setting | Sequence[Setting],
                           prompts: Sequence[int] = (), tokens: np.ndarray | None = None,
                           ax: Axes | None = None, max_prompt: int | None = None) -> Axes:
    """Intensity (FLOP per HBM byte) of the whole prefill, its projections and its attention
    against T, with the ridge and the prompt lengths where the prefill (○) and its projections
    (□) reach it; diamonds at ``prompts``. Where a cache level's traffic ends the prefill's
    compute-bound regime, also the whole prefill's intensity at that level (thin, with its
    level's marker) against that level's ridge, the end marked where the two cross. One
    device: the ridges labelled on their lines. Several: each in its colour (whole prefill
    solid, attention dotted), one legend entry per device with its ridge and crossovers; the
    projections, the same on every device, once in grey; what the thin curves are, in the
    note. Where devices' curves or markers coincide they are nested: the first device's line
    widest and its markers largest, the later ones narrower and smaller on top, so that each
    stays visible. Default T: :func:`prompt_sweep` (up to ``max_prompt``, where the axis
    ends). A crossover past the axis is not drawn, its legend entry (one device; several: its
    value in the device's entry) marked "off axis"; a prompt past it is not marked."""
    ax = _style.axes(ax)
    group = as_list(settings)
    several = len(group) > 1
    n = len(group)
    xs = prompt_sweep(group, max_prompt) if tokens is None else np.asarray(tokens, dtype=float)
    first = group[0]
    prompts = [t for t in prompts if _within(t, xs)]
    regimes = {s.hardware.name: _regime(s) for s in group}
    bound = {name: level for name, (_, level) in regimes.items() if _cached(level)}
    ax.plot(xs, sweeps.intensity(first, xs, ("projection",)),
            color=_SHARED if several else _style.KIND["projection"], gid="prefill:projection",
            lw=1.3 if several else 1.6,
            label="projections (QKV, O, MLP)" + (", every device" if several else ""))
    handles: list[Any] = []
    labels: list[str] = []
    if several:  # the styles, said once for every device
        handles += [_proxy(color="#000000", lw=2.2), _proxy(color="#000000", lw=1.3, ls=":")]
        labels += ["whole prefill, in each device's colour",
                   f"attention ({first.attention}), dotted"]
    for i, s in enumerate(group):
        ax.plot(xs, sweeps.intensity(s, xs, ("attention",)),
                color=_style.device_color(i) if several else _style.KIND["attention"],
                ls=":" if several else "-", lw=_size(i, n, 2.0, 1.0, 1.3),
                zorder=2 + i / 10,
                gid="prefill:attention" if i == 0 else f"prefill:attention:{s.hardware.name}",
                label=None if several else f"attention ({s.attention})")
        color = _style.device_color(i) if several else _style.KIND["total"]
        ax.plot(xs, sweeps.intensity(s, xs), color=color, lw=_size(i, n, 3.0, 1.4, 2.2),
                zorder=2.5 + i / 10, gid=f"prefill:{s.hardware.name}",
                label=None if several else f"whole prefill ({s.attention} attention)")
        level = bound.get(s.hardware.name)
        if level:
            ax.plot(xs, level_intensity(s, xs, level), color=color, lw=0.9,
                    marker=_style.LEVEL[level][1], ms=3.5, markevery=0.08, zorder=2.4 + i / 10,
                    gid=f"prefill:{level}:{s.hardware.name}",
                    label=None if several else
                    f"whole prefill per {level_name(level)} byte (thin, +)")
        if prompts:
            ax.plot(prompts, sweeps.intensity(s, prompts), "D", color=color,
                    ms=_size(i, n, 7.0, 4.0, 4.5), mec="white" if several else color, mew=0.5,
                    zorder=5 + i / 10, gid=f"prompts:{s.hardware.name}",
                    label=None if several else _tokens(prompts))
    ridges = _ridges(ax, group, xs, bound)
    past = False  # a crossover past the axis, not drawn
    for i, s in enumerate(group):
        color = _style.device_color(i) if several else "#000000"
        size, z = _size(i, n, 9.0, 5.0, 6.0), 6 + i / 10
        v, level = regimes[s.hardware.name]
        cached = _cached(level)
        words = []  # several devices: the crossovers in the device's legend entry
        if v.exists:
            on = _within(v.value, xs)
            past |= not on
            drawn = v.ends_at is not None and _within(v.ends_at, xs)
            tail = "" if not v.ends_at else (
                f"memory-bound again from {v.ends_at:,.0f}"
                + (f" (by {level_name(level)} traffic)" if cached else ""))
            # past the axis: no marker, its legend entry (one device) kept, saying so
            _cross(ax, v.value if on else None, s.ridge if on else None, color,
                   None if several else f"prefill compute-bound from T = {v.value:,.0f}"
                   + ("" if on else " (off axis)") + (f";\n{tail}" if tail else ""),
                   f"crossover:{s.hardware.name}:{v.name}", size=size, zorder=z)
            words.append(f"○\u00a0{v.value:,.0f}" + ("" if on else "*") + (
                f"–{v.ends_at:,.0f}" + (f" ({level_name(level)})" if cached else "")
                if v.ends_at else ""))
            if drawn:
                # a cache level's traffic ends the regime where the prefill's intensity at
                # that level meets that level's ridge: marked there, on that curve
                y = level_intensity(s, [v.ends_at], level)[0] if cached else s.ridge
                _cross(ax, v.ends_at, y, color, None,
                       f"crossover:{s.hardware.name}:{v.name}:ends", size=size, zorder=z)
        p = crossovers(s)["projection_compute_bound_tokens"]
        if p.exists:
            on = _within(p.value, xs)
            past |= not on
            _cross(ax, p.value if on else None, s.ridge if on else None,
                   color if several else _style.KIND["projection"],
                   None if several else f"projections compute-bound from T = {p.value:,.0f}"
                   + ("" if on else " (off axis)"),
                   f"crossover:{s.hardware.name}:{p.name}", marker="s", size=size, zorder=z)
            words.append(f"□\u00a0{p.value:,.0f}" + ("" if on else "*"))
        if several:
            handles.append(ridges[i])
            labels.append(f"{device_label(s)}: ridge {s.ridge:,.0f}"
                          + (f", {level_name(level)} ridge "
                             f"{s.peak / s.level_bandwidths[level]:,.0f}" if cached else "")
                          + (f"; {'; '.join(words)}" if words else ""))
    log_axes(ax, (xs[0], xs[-1]), "prompt length T (tokens)", "intensity (FLOP/byte)",
             "Prefill: one sequence of T tokens")
    _style.short_log_ticks(ax.xaxis)
    panel_title(ax, "Prefill: one sequence of T tokens")
    _style.plain_ticks(ax.yaxis)  # 100, 1k, 10k FLOP/byte
    own, _ = ax.get_legend_handles_labels()
    mine = [h for h in own if h.get_label() and not h.get_label().startswith("_")]
    shaded = shade_beyond_context(ax, group, xs[-1])
    notes = [shaded[0].upper() + shaded[1:] + "."] if shaded else []
    if several:
        notes.append("○ whole prefill, □ projections: compute-bound from the T in each "
                     "device's entry (○ up to the second T, where one is given)"
                     + ("; *: off the axis" if past else "")
                     + (f"; ◇\u00a0{_glued(_tokens(prompts))}." if prompts else "."))
    if bound:
        # several devices bound by different levels (an L2, an L3): each named, P/β_L2/L3
        name = "/".join(sorted({level_name(v) for v in bound.values()}))
        notes.append((f"Thin + curves: the whole prefill per {name} byte. " if several else "")
                     + f"Where the thin + curve meets the {name} ridge P/β_{name} "
                     f"(thin, dashed, +), {name} traffic makes the prefill memory-bound again, "
                     "though above the HBM ridge (a hierarchical roofline).")
    legend_note(ax, mine[:1] + handles + mine[1:], [h.get_label() for h in mine[:1]] + labels
                + [h.get_label() for h in mine[1:]], " ".join(notes), labelspacing=SPACING)
    return ax


def _fit_line(ax: Axes, bs: np.ndarray, ys: np.ndarray, fits: np.ndarray, gid: str,
              **kwargs) -> None:
    """Solid where the batch fits in memory, dashed past it (the two stretches joined)."""
    past = ~fits | np.r_[~fits[1:], False]
    ax.plot(bs, np.where(fits, ys, np.nan), "-", gid=gid, **kwargs)
    kwargs.pop("label", None)
    ax.plot(bs, np.where(past, ys, np.nan), "--", gid=f"{gid}:does-not-fit", **kwargs)


def plot_decode_intensity(settings: Setting | Sequence[Setting], context: int,
                          batches: Sequence[int] = (), sweep: np.ndarray | None = None,
                          ax: Axes | None = None, *, ridge_values: bool = True) -> Axes:
    """Intensity of one decode step (and of its projections) against the batch B at
    ``context`` cached tokens, with the ridge and the critical batch (□); stars at
    ``batches``. A latent-attention (MLA) model's step is drawn in both forms: the setting's
    solid (weight-absorbed by default), the other dotted. The curves do not depend on the
    device: several devices differ by their ridge (in their colour and dash pattern) and so by
    their critical batch, and by their memory, one legend entry a device. The curves are solid
    while the weights and B sequences' KV cache fit in a device's memory, dashed past the
    largest batch any device holds; each device's largest batch is a vertical line; a batch
    marker that fits on no device is hollow (several devices: the dashes and the hollow
    markers said in the note, so that the legend keeps one entry a device).
    ``ridge_values``: False where another panel's legend gives each device's ridge (the
    phases figure's prefill panel, on the same intensity scale): the device entries leave it
    out. Default B: :func:`decode_batches`."""
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
    words = f",\n{_FORM_WORDS[first.mla_decode]}" if len(forms) > 1 else ""
    _fit_line(ax, bs, sweeps.decode_intensity(first, bs, context), fits, "decode:step",
              color=step, lw=2.2,
              label=f"whole decode step (context {context:,}){every}{words}")
    for other in forms:  # latent attention: the step in its other form too, dotted
        if other.mla_decode == first.mla_decode:
            continue
        key = "decode.naive" if other.mla_decode == "naive" else "decode"
        ax.plot(bs, sweeps.decode_intensity(other, bs, context), ":", lw=2.0,
                color=_SHARED if several else _style.KIND[key],
                gid=f"decode:step:{other.mla_decode}",
                label=f"whole decode step, {_FORM_WORDS[other.mla_decode]}{every}")
    hollow = False
    if batches:
        ys = sweeps.decode_intensity(first, batches, context)
        held = np.any([sweeps.decode_fits(s, batches, context) for s in group], axis=0)
        ax.plot(batches, ys, "*", ms=9, color=step, zorder=5, gid="batches",
                label=None if several else _tokens(batches, "B"))
        if not held.all():
            hollow = True
            ax.plot(np.asarray(batches)[~held], ys[~held], "*", ms=9, color=step, mfc="white",
                    mew=1.2, zorder=5.5, gid="batches:does-not-fit")
    unfit = ("dashed" if not fits.all() else "") + (
        ", hollow" if hollow and not fits.all() else "hollow" if hollow else "")
    if unfit and not several:
        ax.plot([], [], "--", color=step,
                label=f"{unfit}: does not fit in memory (weights + B × KV cache)")
    ridges = _ridges(ax, group, bs)
    for i, s in enumerate(group):
        who = f"{device_label(s)}: " if several else ""
        color = _style.device_color(i) if several else "#000000"
        held = sweeps.max_batch(s, context)
        holds = f"memory holds B ≤ {held:,} at context {context:,}"
        if bs[0] <= held <= bs[-1]:
            ax.axvline(held, color=color, lw=1.0, ls=_style.device_dashes(i) if several
                       else (0, (2, 2)), gid=f"memory:{s.hardware.name}",
                       label=None if several else holds)
        elif held < bs[0]:
            holds = f"memory holds no sequence at context {context:,}"
            ax.plot([], [], ls="none", marker="x", color=color, gid=f"memory:{s.hardware.name}",
                    label=None if several else holds)
        v = crossovers(s)["decode_critical_batch"]
        critical = ""
        if v.exists:
            beyond = "; more than memory holds" if v.value > held else ""
            critical = f"critical batch B = {v.value:,.0f}"
            _cross(ax, v.value, s.ridge, color,
                   None if several else f"{critical} (projections reach the ridge{beyond})",
                   f"crossover:{s.hardware.name}:{v.name}", marker="s",
                   size=_size(i, n, 9.0, 5.0, 6.0), zorder=6 + i / 10)
            critical = f"; □\u00a0B\u00a0=\u00a0{v.value:,.0f}"  # kept on one line
        if several:  # the ridge in the axis's unit; the note says what □ is
            ridges[i].set_label(who + (f"ridge {s.ridge:,.0f}; " if ridge_values else "")
                                + holds.replace("memory ", "").replace(
                                    f" at context {context:,}", "") + critical)
    log_axes(ax, (bs[0] / 1.2, bs[-1] * 1.2),  # room for a marker at B = 1
             "decode batch B (sequences)", "intensity (FLOP/byte)",
             f"Decode: one step of B sequences at context {context:,}")
    panel_title(ax, f"Decode: one step of B sequences at context {context:,}")
    _style.plain_ticks(ax.yaxis)
    note = ""
    if several:
        note = (f"☆\u00a0{_glued(_tokens(batches, 'B'))}. " if batches else "") + (
            "□ critical batch: the projections reach the ridge. Verticals: the largest "
            "batch each device holds.") + (
            f" {unfit[0].upper()}{unfit[1:]}: fits no device (weights + B × KV cache)."
            if unfit else "")
    legend_note(ax, note=note, labelspacing=SPACING)
    return ax


def phases_figure(settings: Setting | Sequence[Setting], prompts: Sequence[int] = (),
                  batches: Sequence[int] = (1,), context: int | None = None,
                  size: str | float = "page", max_prompt: int | None = None) -> Figure:
    """Prefill and decode on one intensity scale, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches): a narrow figure stacks
    the panels, a wide one puts them side by side; the height is what the panels, their
    legends and notes need, the panels shortened (stacked, to no less than 1.1 in) where the
    figure would be taller than a page's text block can take
    (:func:`roofline.plot._common.tallest`). Several devices: each one's ridge is given once,
    in the prefill panel's legend. The prefill's axis ends at ``max_prompt``
    (:func:`prompt_sweep`); ``prompts`` past it are not marked."""
    group = as_list(settings)
    context = context or (max(prompts) if prompts else 2048)
    w = _style.width(size)
    stacked = _style.narrow(size)
    with _style.style():
        fig = _style.figure((w, 16.0 if stacked else 10.0))
        left, right = fig.subplots(2, 1, sharey=True) if stacked else fig.subplots(
            1, 2, sharey=True)
        plot_prefill_intensity(group, prompts, ax=left, max_prompt=max_prompt)
        plot_decode_intensity(group, context, batches, ax=right, ridge_values=len(group) == 1)
        right.tick_params(labelleft=True)
        fig.suptitle(_style.wrap_fitted(title("Prefill against decode", group), w - 0.1, 8.5))
        # stacked, the panels give up height to the legends and notes, as little as fits
        fit_height_within(fig, 2 if stacked else 1, 1.8 if stacked else 2.4, tallest(size),
                          _LEAST if stacked else 2.0)
    return fig
