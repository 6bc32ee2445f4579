"""Attainment against request rate per device, in the manner of DistServe's figures (arXiv
2401.09670, §6): the fraction of requests meeting both the TTFT and the TPOT objective for the
disaggregated pair and for the colocated instance, the chosen attainment a horizontal line and
each one's goodput (the highest rate per device that reaches it) marked.

Every point is :func:`roofline.serving.goodput.attainment_curves` of the result of
:func:`roofline.serving.goodput.goodput`: the pair at a fraction of its goodput runs each side
at that fraction of its capacity; the colocated instance its hybrid steps at that rate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..serving.goodput import Goodput, attainment_curves
from . import _style
from ._common import fit_height, legend_note, title

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["goodput_figure"]

_POINTS = 120


def goodput_figure(g: Goodput, size: str | float = "page") -> Figure:
    """The figure of ``g``: attainment (%) against requests per second per device."""
    best = max(g.disaggregated_per_device, g.colocated_per_device)
    end = 1.6 * best if best > 0 else 1.0
    served = [r for r in (g.disaggregated_per_device, g.colocated_per_device) if r > 0]
    start = 0.5 * min(served) if served else 0.0  # below both goodputs: 100 % met, no news
    rates = np.linspace(max(start, end / _POINTS), end, _POINTS)
    pair, colo = attainment_curves(g, rates)
    p, d, c = g.prefill, g.decode, g.colocated
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 2 * w))
        ax = fig.subplots()
        curves = (
            ("disaggregated", pair, g.disaggregated_per_device, 0,
             f"disaggregated: prefill TP {p.tp} PP {p.pp} + decode TP {d.tp} PP {d.pp}"),
            ("colocated", colo, g.colocated_per_device, 1,
             f"colocated: TP {c.tp} PP {c.pp}, chunks of up to {c.chunk:,} tokens beside the decodes"))
        for gid, ys, good, i, label in curves:
            color = _style.device_color(i)
            ax.plot(rates, np.array(ys) * 100, color=color, ls=_style.device_dashes(i), lw=1.4,
                    label=f"{label}: goodput {good:,.3g} requests/s a device", gid=gid)
            if good > 0:  # a marker of its own: the two goodputs may lie close together
                ax.plot([good], [g.attainment * 100], marker="os"[i], ms=5 - i, color=color,
                        mfc="none" if i else color, ls="none", gid=f"goodput.{gid}")
        ax.axhline(g.attainment * 100, color="0.45", lw=0.9, ls=":",
                   label=f"attainment {g.attainment:.0%}", gid="attainment")
        ax.set_xlim(rates[0], end)
        ax.set_ylim(0, 102)
        ax.set_xlabel("request rate per device (requests/s)")
        ax.set_ylabel("requests meeting both objectives (%)")
        ax.set_title(_style.wrap(title(
            f"TTFT {g.ttft * 1e3:g} ms, TPOT {g.tpot * 1e3:g} ms met, "
            f"{g.prompt:,} in, {g.output:,} out", [g.setting]), 0.85 * w, 8))
        legend_note(ax, note=(
            "The pair replicated to match its sides' rates; its KV cache sent over the "
            "interconnect. Every time at the roofline (a bound); TTFT by Erlang's M/D/1 waiting "
            "times; TPOT met or not by every request alike (one step time a batch). A marker: "
            "each one's goodput; the rates below half the smaller goodput, all met, left out."))
        fit_height(fig, 1, 1.9 if _style.narrow(size) else 2.4)
    return fig
