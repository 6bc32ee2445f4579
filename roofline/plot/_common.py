"""Helpers shared by the figures: settings as a list, titles, log axes, legends and notes under
a panel, a height that gives each panel its plotting area."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..evaluate import CrossoverValue, Setting, crossover_values
from ..tables import binary_size, grouped
from . import _style

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..specs.hardware import Hardware

__all__ = ["sram_unit", "experts_note", "as_list", "title", "side_legend", "device_label", "plain", "crossovers", "room",
           "panel_title", "legend_note", "fit_height", "fit_height_within", "tallest", "NOTE",
           "SPACING", "shade_beyond_context", "binary_size", "per_byte", "work_unit", "grouped"]


def work_unit(dtypes: str | Sequence[str]) -> str:
    """'OP' when every data type is an integer one (int8: operations, not floating-point
    operations), else 'FLOP'.

    >>> work_unit("int8"), work_unit(["fp8", "int8"]), work_unit("bf16, fp16")
    ('OP', 'FLOP', 'FLOP')
    """
    names = [d.strip() for d in dtypes.split(",")] if isinstance(dtypes, str) else list(dtypes)
    return "OP" if names and all(d.startswith("int") for d in names) else "FLOP"


def per_byte(x: float, dtypes: str | Sequence[str] = "") -> str:
    """An intensity for a label: '86,480 FLOP/byte' (integer types: OP/byte)."""
    return f"{x:,.0f} {work_unit(dtypes) if dtypes else 'FLOP'}/byte"


def as_list(settings: Setting | Sequence[Setting]) -> list[Setting]:
    """One setting or several (devices overlaid), as a non-empty list."""
    out = [settings] if isinstance(settings, Setting) else list(settings)
    if not out:
        raise InputError("hardware", "needs at least one device")
    return out


def plain(name: str) -> str:
    r"""A user-given name (a device's or a model's) as plain text in a matplotlib label: each
    ``$`` escaped, so that no pair of them opens mathtext (where ``_``, ``^`` and ``\`` would
    be read as markup, and a bad formula raises when the figure is drawn). Matplotlib shows
    ``\$`` outside mathtext as ``$``.

    >>> plain("My$GPU_2^x")
    'My\\$GPU_2^x'
    """
    return name.replace("$", r"\$")


def device_label(s: Setting) -> str:
    """The device's name for a label (:func:`plain`)."""
    return plain(s.hardware.name)


def title(what: str, settings: list[Setting], attention: bool = True) -> str:
    """'<what>: <model> on <devices> (<dtype>, <mode> attention)'; a device in another mode
    (one without SRAM size) named after it: '(bf16, tiled attention; ideal on TPU-v4)'."""
    first = settings[0]
    devices = ", ".join(dict.fromkeys(device_label(s) for s in settings))
    models = ", ".join(dict.fromkeys(plain(s.model.name) for s in settings))
    dtypes = ", ".join(dict.fromkeys(s.dtype for s in settings))
    parts = [dtypes]
    for key, stored in (("weights", "weights"), ("activations", "activations"),
                        ("kv_cache", "KV cache")):
        if first.precision[key] != first.dtype:
            parts.append(f"{first.precision[key]} {stored}")
    if attention:
        others = {device_label(s): s.attention for s in settings if s.attention != first.attention}
        parts.append(f"{first.attention} attention"
                     + "".join(f"; {mode} on {name}" for name, mode in others.items()))
    if first.batch != 1:
        parts.append(f"batch {first.batch}")
    parts.extend(splits(first))
    return f"{what}: {models} on {devices} ({', '.join(parts)})"


def splits(s: Setting, tp: bool = True) -> list[str]:
    """The setting's parallel degrees above 1, as a title names them: ['TP 4', 'PP 2 chunked']
    (the pipeline with its schedule; without the tensor-parallel degree where ``tp`` is False:
    a figure that runs its own degrees)."""
    degrees = (("TP", s.tp if tp else 1), ("PP", s.pp), ("EP", s.ep), ("CP", s.cp))
    out = [f"{name} {n}" + (f" {s.pipeline}" if name == "PP" else "")
           for name, n in degrees if n > 1]
    return out + ["collectives overlapped"] if out and s.overlap else out


def side_legend(ax: Axes, **kwargs) -> None:
    """A legend outside the plotting area, to the right: it covers no data."""
    handles, labels = kwargs.pop("handles", None), kwargs.pop("labels", None)
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              **kwargs)


@lru_cache(maxsize=32)
def crossovers(s: Setting) -> dict[str, CrossoverValue]:
    """:func:`roofline.evaluate.crossover_values`, computed once per setting for all figures."""
    return crossover_values(s)


def log_axes(ax: Axes, xlim: tuple[float, float], xlabel: str, ylabel: str, panel: str) -> None:
    """Log–log axes with their x range, axis labels (with units) and a small panel title."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(panel, fontsize=9)
    for axis, label in ((ax.xaxis, xlabel), (ax.yaxis, ylabel)):
        if any(unit in label for unit in ("(tokens)", "(sequences)", "(bytes)")):  # 2k; 10 GB
            _style.plain_ticks(axis, "B" if "(bytes)" in label else "")


NOTE = "#333333"  # the colour of a note under a legend
_HANDLE = 0.45  # inches a legend entry's handle and padding take beside its text
_BELOW = 30.0  # points from a panel's bottom to its legend: the tick labels and axis label
SPACING = 0.35  # ems between the entries of a long legend (matplotlib's 0.5), for figures
# whose stacked panels' legends would otherwise make them taller than a column


def room(ax: Axes) -> float:
    """Inches a legend or a note under the panel may take: its share of the figure's width."""
    width = ax.figure.get_figwidth()
    spec = ax.get_subplotspec()
    if spec is None:
        return ax.get_position().width * width
    columns = spec.colspan
    return width * (columns.stop - columns.start) / spec.get_gridspec().ncols - 0.25


def panel_title(ax: Axes, text: str) -> None:
    """The panel's title, wrapped to its share of the figure's width."""
    ax.set_title(_style.wrap(text, room(ax), 9), fontsize=9)


def legend_note(ax: Axes, handles: list[Any] | None = None, labels: list[str] | None = None,
                note: str = "", **kwargs: Any) -> None:
    """The legend under the panel in one column, clear of its tick labels and axis label, each
    label wrapped to the panel's share of the figure's width; under it ``note`` (what a reader
    needs that no entry says), in dark grey."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    inches = room(ax)
    text = ["\n".join(_style.wrap(line, inches - _HANDLE, 7) for line in label.split("\n"))
            for label in labels or []]
    kwargs.setdefault("ncol", 1)  # one column, unless asked (short entries side by side)
    legend = ax.legend(handles, text, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                       fontsize=7, borderaxespad=_BELOW / 7, **kwargs)
    if note:
        ax.annotate(_style.wrap(note, inches, 7), xy=(0.5, 0.0), xycoords=legend,
                    xytext=(0, -3), textcoords="offset points", ha="center", va="top",
                    multialignment="left", fontsize=7, color=NOTE, gid="note")


def fit_height(fig: Figure, rows: int, inches: float) -> None:
    """The figure's height set so that each panel's plotting area is ``inches`` high once laid
    out, over ``rows`` rows of panels: one layout pass (no rendering) measures the titles,
    labels, legends and notes, which keep their size in inches."""
    fig.draw_without_rendering()
    high = min(ax.get_position().height for ax in fig.axes) * fig.get_figheight()
    fig.set_figheight(fig.get_figheight() + rows * (inches - high))


def tallest(size: str | float) -> float:
    """Inches a figure of this width may be tall: a column's figure 8.4 (a journal column's
    text block is about 9 in, with its caption), a wider one 8.9 (a page's text block)."""
    return 8.4 if _style.narrow(size) else 8.9


def fit_height_within(fig: Figure, rows: float, inches: float, most: float,
                      least: float) -> None:
    """:func:`fit_height` at ``inches`` a panel, unless the figure would be taller than
    ``most`` inches: then each panel's plotting area is shortened as much as that needs, to no
    less than ``least`` inches (the titles, legends and notes keep their size). Panels of
    unequal heights: ``inches`` and ``least`` the shortest's, ``rows`` the sum of the heights
    over the shortest's."""
    fit_height(fig, rows, inches)
    over = fig.get_figheight() - most
    if over > 0:
        fit_height(fig, rows, max(least, inches - over / rows))


def experts_note(group: Sequence[Setting]) -> str:
    """What a reader of a mixture-of-experts figure needs: a prefill is taken to read the
    weights of min(n_e, B·T·n_a) experts (uniform routing), an upper bound on the distinct
    experts its tokens reach (n_e·(1 − (1 − n_a/n_e)^(B·T)) in expectation); "" for dense."""
    if not any(s.model.num_experts > 1 for s in group):
        return ""
    return "MoE: the weights of min(n_e, B·T·n_a) experts read, an upper bound on those reached"


def shade_beyond_context(ax: Axes, group: Sequence[Setting], high: float) -> str:
    """The prompt lengths past the (shortest) model's context, up to ``high``, shaded faintly
    (evaluated all the same, as ``prefill`` does); the note's words for the shading, or "" where
    the axis stays within the context."""
    context = min(s.model.max_position for s in group)
    if context >= high:
        return ""
    ax.axvspan(context, high, color="#000000", alpha=0.05, lw=0, gid="beyond-context")
    return f"shaded: past the model's context ({context:,} tokens)"


def sram_unit(hardware: Hardware) -> str:
    """What one ``sram_per_sm`` serves, as the hardware file's ``kind`` and ``vendor`` say
    (hardware/README.md: ``sm_count`` counts "SMs (NVIDIA), compute units (AMD), TensorCores
    (TPU)"): 'TensorCore' for a TPU (its VMEM), 'SM' for an NVIDIA GPU (shared memory), 'CU'
    for an AMD one (LDS), 'core' for any other device.

    >>> from roofline.specs.hardware import load_hardware
    >>> [sram_unit(load_hardware(n)) for n in ("H100-SXM", "MI300X", "TPU-v5e", "Gaudi3")]
    ['SM', 'CU', 'TensorCore', 'core']
    """
    if hardware.kind == "tpu":
        return "TensorCore"
    if hardware.kind == "gpu":
        vendor = hardware.vendor.strip().lower()
        if vendor == "nvidia":
            return "SM"
        if vendor == "amd":
            return "CU"
    return "core"
