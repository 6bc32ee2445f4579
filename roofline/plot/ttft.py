"""TTFT against arrival rate: execution and queueing stacked, the target and the highest rate
that meets it marked; optionally two-way intra-op against inter-op (DistServe §3.1, Fig. 4), an
operating rate, batched prompts and chunked prefill (:func:`plot_ttft_result`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import serving
from ..errors import InputError
from . import _style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..serving import Batching
    from ..serving.result import TTFTResult

__all__ = ["plot_ttft", "plot_ttft_result", "ttft_figure", "per_second"]


def _crossing(rates: np.ndarray, a: np.ndarray, b: np.ndarray) -> float | None:
    """First rate at which curve ``a`` drops below curve ``b`` (linear interpolation)."""
    diff = a - b
    ok = np.isfinite(diff)
    idx = np.flatnonzero(ok[:-1] & ok[1:] & (diff[:-1] > 0) & (diff[1:] <= 0))
    if idx.size == 0:
        return None
    i = idx[0]
    return float(rates[i] + (rates[i + 1] - rates[i]) * diff[i] / (diff[i] - diff[i + 1]))


def per_second(rate: float) -> str:
    """A rate for a label: '1 request/s', '39 requests/s'.

    >>> per_second(1.0), per_second(39.2)
    ('1 request/s', '39.2 requests/s')
    """
    text = f"{rate:.3g}"
    return f"{text} request{'' if text == '1' else 's'}/s"


def _config(parallel: str | None, speedup: float | None) -> str:
    if parallel == "inter":
        return "inter-op"
    if parallel == "intra":
        return f"intra-op, K = {speedup:g}" if speedup else "intra-op"
    return "one instance"


def plot_ttft(mean: float, second: float | None = None, *, parallel: str | None = None,
              speedup: float | None = None, replicas: int = 1, slo: float | None = None,
              compare: bool = False, device: str = "", model: str = "", dtype: str = "",
              prompt: str = "", rate: float | None = None, batching: Batching | None = None,
              chunked: tuple[int, float] | None = None, points: int = 200,
              queue: serving.QueueModel | None = None, ax: Axes | None = None) -> Axes:
    """Mean TTFT against arrival rate, from 0 to 98 % of the rate where the load reaches 1 (or
    further, to show every marked rate with a margin).

    ``mean``, ``second``: E[t], E[t²] of the one-GPU prefill time (one length: ``second`` None).
    Execution and queueing of the chosen configuration are stacked; ``slo`` draws the target
    and marks the highest rate that meets it. ``compare`` (needs ``speedup``) adds the totals of
    two-way inter-op and intra-op, marks the highest rate that meets the target for each of
    them, and the rate above which inter-op wins. ``prompt``: a prompt length in tokens, or
    the name of a prompt-length distribution. ``rate`` marks that operating rate on the
    total; ``batching`` adds the TTFT of the first (wait (B − 1)/R plus the batch's execution)
    and last prompt of a batch; ``chunked`` = (chunk, execution) adds the total TTFT when each
    prompt is prefilled in chunks of that size with that execution time (one length).
    ``queue``: the configuration's queue where it is not the one ``mean``, ``parallel`` and
    ``speedup`` make (inter-op with the model's stage times: it is then also the inter-op curve
    of ``compare``, whose crossing with intra-op is found numerically).
    """
    import matplotlib.pyplot as plt

    ax = plt.gca() if ax is None else ax
    derived = queue is not None and parallel == "inter"
    if queue is None:
        queue = serving.queue_model(mean, second, parallel, speedup, replicas)
    queues = [queue]
    if compare:
        if speedup is None:
            raise InputError("speedup", "comparing intra-op with inter-op needs a speedup K in "
                             "(1, 2]")
        inter = queue if derived else serving.queue_model(mean, second, "inter", None, replicas)
        intra = serving.queue_model(mean, second, "intra", speedup, replicas)
        queues += [inter, intra]
    label = _config(parallel, speedup) + (f", {replicas} replicas" if replicas > 1 else "")
    # (configuration, its queue, colour, marker) whose highest rate meeting the target is marked
    marked = [(label, queue, "black", "o")]
    if compare:
        for name, q, color, marker in (("inter-op", inter, "tab:green", "s"),
                                       (_config("intra", speedup), intra, "tab:purple", "D")):
            if name == label:
                marked[0] = (name, q, color, marker)
            else:
                marked.append((name, q, color, marker))
    best = {name: serving.max_rate(q, slo) if slo is not None else None
            for name, q, _, _ in marked}
    # the x range: 98 % of the highest stable rate, and every marked rate 4 % inside the right
    # edge (a mark at the edge would be cut in half; beyond a stable rate its curve stops)
    right = 0.98 * max(q.stable_rate for q in queues)
    for r in [*best.values(), rate]:
        if r is not None:
            right = max(right, 1.04 * r)
    rates = np.linspace(0.0, right, points)
    execution, queueing = serving.ttft_curve(rates, queue)
    shown = np.isfinite(queueing)
    ax.stackplot(rates[shown], execution[shown], queueing[shown],
                 labels=[f"execution, {label}", f"queueing, {label}"], alpha=0.6)
    if compare:
        curves = {}
        for name, q, color, _ in (("inter-op", inter, "tab:green", "s"),
                                  (_config("intra", speedup), intra, "tab:purple", "D")):
            e, w = serving.ttft_curve(rates, q)
            curves[name] = e + w
            ax.plot(rates, curves[name], linewidth=1.5, color=color, label=f"total, {name}")
    top = base = max(5 * mean, 2 * (slo or 0.0))  # the queue diverges at the right edge
    if batching is not None:
        first = batching.execution_s + serving.batch_wait_curve(batching.batch, rates)
        # the batched prompts in view, their lowest times a quarter below the top (the first
        # prompt's at the highest rate drawn), unless that would flatten the queue's curves
        lowest = float(np.min(first[1:]))
        top = min(max(base, 1.25 * lowest, 1.25 * batching.execution_s), 4 * base)
        above = " (above the axis)"
        ax.plot(rates[1:], first[1:], color="tab:brown", linewidth=1.5,
                label=f"first of {batching.batch} batched prompts"
                      + (above if lowest > top else ""))
        ax.axhline(batching.execution_s, color="tab:brown", linestyle="--", linewidth=1,
                   label=f"last of {batching.batch} batched prompts"
                         + (above if batching.execution_s > top else ""))
    if chunked is not None:
        size, time = chunked
        e, w = serving.ttft_curve(rates, serving.queue_model(time, None, None, None, replicas))
        ax.plot(rates, e + w, color="tab:olive", linewidth=1.5,
                label=f"total, chunks of {size} tokens")
    if slo is not None:
        ax.axhline(slo, color="black", linestyle="--", linewidth=1, label=f"target {slo:g} s")
        for name, q, color, marker in marked:
            if best[name] is not None:
                ax.axvline(best[name], color=color, linestyle=":", linewidth=1)
                who = f", {name}" if compare else ""
                ax.plot([best[name]], [slo], marker, color=color, zorder=5,
                        label=f"highest rate meeting it{who}: {per_second(best[name])}")
    if rate is not None:
        ax.axvline(rate, color="tab:blue", linestyle=":", linewidth=1)
        if rate < queue.stable_rate:
            point = serving.ttft(rate, queue)
            ax.plot([rate], [point.total_s], "v", color="tab:blue", zorder=5,
                    label=f"at {per_second(rate)}: {point.total_s:.3g} s")
    if compare:
        one_length = second is None or math.isclose(second, mean**2, rel_tol=1e-12)
        cross = (serving.inter_beats_intra_rate(mean, speedup) * replicas
                 if one_length and not derived else _crossing(rates, *curves.values()))
        if cross is not None and math.isfinite(cross) and cross <= rates[-1]:
            ax.axvline(cross, color="tab:red", linestyle="-.", linewidth=1,
                       label=f"inter-op wins above {per_second(cross)}")
    ax.set_ylim(0, top)
    ax.set_xlim(0, rates[-1])
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("mean time to first token (s)")
    if prompt:
        prompt = f"prompt {prompt} tokens" if prompt.isdigit() else f"prompts from {prompt}"
    parts = [p for p in (device, model, dtype, prompt) if p]
    ax.set_title("TTFT against arrival rate" + (f": {', '.join(parts)}" if parts else ""))
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_ttft_result(result: TTFTResult, *, compare: bool = False, points: int = 200,
                     ax: Axes | None = None) -> Axes:
    """:func:`plot_ttft` of what :func:`roofline.ttft` returned: its queue, target, rate,
    batching and chunking (chunked execution: the prefill with its layers chunked)."""
    s, c = result.setting, result.chunking
    chunked = None if c is None else (c.chunk, result.mean_s - c.one_shot_s + c.total_s)
    prompt = str(result.prompt) if result.prompt_dist is None else result.prompt_dist
    return plot_ttft(result.mean_s, result.second_s2, parallel=result.parallel,
                     speedup=result.speedup, replicas=result.replicas, slo=result.slo,
                     compare=compare, device=s.hardware.name, model=s.model.name,
                     dtype=f"{s.precision_words}, {s.attention} attention", prompt=prompt,
                     rate=result.rate, batching=result.batching, chunked=chunked,
                     points=points, queue=result.queue if result.stage_s else None, ax=ax)


def ttft_figure(result: TTFTResult, *, compare: bool = False, size: str | float = "page"
                ) -> Figure:
    """:func:`plot_ttft_result` on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches)."""
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 0.62 * w))
        plot_ttft_result(result, compare=compare, ax=fig.subplots())
    return fig
