"""The figures: the only package that imports matplotlib, and only when a figure is drawn.

Each Axes-level function takes ``ax=None`` and returns the Axes; each ``*_figure`` function
returns a Figure in the house style (:mod:`roofline.plot._style`); :func:`save` writes one with
fixed metadata, so the same inputs give the same bytes of SVG and PDF. Every number plotted
comes from :mod:`roofline.evaluate` and :mod:`roofline.sweeps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InputError
from ..evaluate import Setting
from . import _style
from ._style import check_output, savefig as save
from .attention import attention_figure, plot_footprint, plot_traffic
from .phases import phases_figure, plot_decode_intensity, plot_prefill_intensity
from .roofline import plot_roofline, roofline_figure
from .scaling import plot_efficiency, plot_scaling_time, scaling_figure
from .time import plot_time, time_figure
from .ttft import plot_ttft, ttft_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["KINDS", "figure", "save", "check_output", "plot_roofline", "roofline_figure",
           "plot_time", "time_figure", "plot_traffic", "plot_footprint", "attention_figure",
           "plot_prefill_intensity", "plot_decode_intensity", "phases_figure", "plot_ttft", "ttft_figure",
           "plot_scaling_time", "plot_efficiency", "scaling_figure"]

KINDS = ("roofline", "time", "attention", "phases", "scaling")
PROMPTS = (128, 2048, 8192)  # default prompt lengths of the figures
BATCHES = (1, 64)  # default decode batches


def figure(kind: str, settings: Setting | Sequence[Setting], prompts: Sequence[int] = PROMPTS,
           batches: Sequence[int] = BATCHES, context: int | None = None,
           max_prompt: int | None = None, size: str | float = "page") -> Figure:
    """The figure of one kind (roofline, time, attention, phases) for one or several settings.

    ``prompts``: prompt lengths placed on the roofline and marked on the phases figure;
    ``batches``: decode batches; ``context``: the decode step's cached tokens (default: the
    longest prompt); ``max_prompt``: the longest prompt of the time, attention and phases
    figures' prompt axis (each has its default); ``size``: the printed width, "column" (3.33 in), "page" (7 in) or
    inches (:func:`roofline.plot._style.width`), the height chosen by the figure.
    """
    _style.width(size)  # a bad size refused before any work
    if kind == "roofline":
        return roofline_figure(settings, prompts=prompts, batches=batches, context=context,
                               size=size)
    if kind == "time":
        return time_figure(settings, max_prompt=max_prompt, size=size)
    if kind == "attention":
        return attention_figure(settings, size=size, max_prompt=max_prompt)
    if kind == "phases":
        return phases_figure(settings, prompts=prompts, batches=batches, context=context,
                             size=size, max_prompt=max_prompt)
    if kind == "scaling":
        return scaling_figure(settings, prompts=prompts, size=size)
    raise InputError("kind", f"must be one of {', '.join(KINDS)}", kind)
