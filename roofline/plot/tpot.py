"""TPOT against the prefill chunk of a hybrid step (Sarathi-Serve, arXiv 2403.02310): one curve
per count of decodes beside the chunk, the TPOT objective a horizontal line, and on each curve
its budget, the largest whole chunk whose step meets the objective, marked and tagged.

Every point is :func:`roofline.serving.hybrid.step`: the step's operations as SymPy derived
them (:mod:`roofline.derive.hybrid`), each at its roofline, on one device or its share under
TP; every budget is :func:`roofline.serving.hybrid.budget`, the crossover
``tpot_chunk_budget_tokens.<mode>`` at these numbers made whole. The house colours and a line
style apart for each curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..evaluate.memory import check_memory
from ..evaluate.phases import check_count
from ..serving.hybrid import budget, step
from . import _style
from ._common import fit_height, legend_note, title

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..evaluate.setting import Setting

__all__ = ["tpot_figure"]

_POINTS = 160  # chunks evaluated along the axis, the budgets' own added


def _axis_end(budgets: list[int | None], given: int | None) -> int:
    """The longest chunk on the axis: ``given``, else 1.5 times the largest budget (at least
    512 tokens), rounded up to a multiple of 256."""
    if given is not None:
        return given
    longest = max([b for b in budgets if b is not None] or [0])
    return max(512, int(np.ceil(1.5 * longest / 256)) * 256)


def tpot_figure(setting: Setting, decodes: Sequence[int], context: int, objective: float,
                done: int = 0, max_chunk: int | None = None, size: str | float = "page"
                ) -> Figure:
    """The figure for ``setting`` (one device, or its share under TP): a curve per count of
    ``decodes`` at ``context`` cached tokens, the chunk after ``done`` tokens of its prompt, the
    TPOT ``objective`` (seconds) and each curve's budget; the chunk axis to ``max_chunk`` tokens
    (default: past the largest budget)."""
    if not decodes or len(decodes) > 6:
        raise InputError("decodes", "give one to six counts of decodes, one curve each",
                         ",".join(map(str, decodes)))
    if max_chunk is not None:
        check_count(max_chunk, "max_chunk")
    found = [budget(setting, b, context, objective, done) for b in decodes]
    end = _axis_end([f.chunk for f in found], max_chunk)
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 2 * w))
        ax = fig.subplots()
        for i, (count, b) in enumerate(zip(decodes, found)):
            chunks = np.unique(np.concatenate([np.linspace(0, end, _POINTS).round(),
                                               [b.chunk] if b.chunk is not None else []]))
            times = [step(setting, int(c), done, count, context).time_s for c in chunks]
            color = _style.device_color(i)
            beyond = " (beyond the axis)" if b.chunk is not None and b.chunk > end else ""
            over = check_memory(replace(setting, batch=count), context + 1, "", "decode")
            label = f"{count:,} decode{'s' if count != 1 else ''}: " + (
                f"budget {b.chunk:,} tokens{beyond}" if b.chunk is not None
                else "no chunk meets it") + ("; its caches exceed the memory" if over else "")
            ax.plot(chunks, np.array(times) * 1e3, color=color, ls=_style.device_dashes(i),
                    lw=1.4, label=label, gid=f"tpot.{count}")
            if b.chunk is not None and b.chunk <= end:
                ax.plot([b.chunk], [b.at.time_s * 1e3], marker="o", ms=4, color=color,
                        ls="none", gid=f"budget.{count}")
                ax.plot([b.chunk, b.chunk], [0, b.at.time_s * 1e3], color=color, lw=0.6,
                        ls=":", gid=f"budget_line.{count}")  # from the dot down to the axis
        ax.axhline(objective * 1e3, color=_style.OKABE_ITO["vermillion"], lw=1.0, ls="--",
                   label=f"TPOT objective {objective * 1e3:g} ms", gid="objective")
        ax.set_xlim(0, end)
        ax.set_ylim(0, None)
        ax.set_xlabel("prefill chunk C beside the decodes (tokens)")
        ax.set_ylabel("step time = the decodes' TPOT (ms)")
        after = "the first chunk of its prompt" if done == 0 else \
            f"the chunk after {done:,} tokens of its prompt"
        ax.set_title(_style.wrap(title(f"TPOT against the prefill chunk at context {context:,}",
                                       [setting]), 0.85 * w, 8))
        legend_note(ax, note=(
            f"One engine step: {after} beside the decodes, the weights read once for all rows"
            + (f"; one device's share under TP {setting.tp}, with its all-reduces"
               if setting.tp > 1 else "")
            + "; every operation at its roofline (a bound). A dot: the budget, the largest "
            "whole chunk whose step meets the objective (the crossover "
            f"tpot_chunk_budget_tokens.{setting.attention} made whole)."))
        fit_height(fig, 1, 1.9 if _style.narrow(size) else 2.4)
    return fig
