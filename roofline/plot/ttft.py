"""TTFT against arrival rate: execution and queueing stacked, the target and the highest rate
that meets it marked; optionally two-way intra-op against inter-op (DistServe §3.1, Fig. 4), an
operating rate, batched prompts and chunked prefill (:func:`plot_ttft_result`).

The queue is :mod:`roofline.serving`'s: M/D/1 for one prompt length, M/G/1 for a distribution
of them, the mean wait by Pollaczek–Khinchine (DistServe §3.1 Eq. 1–3), said in a note under
the axes with the marked values. Every total (the stack, the inter-op and intra-op totals, the
chunked prefill's) includes the queueing; the batched prompts' curves do not
(:func:`roofline.serving.batching` counts none behind an earlier batch) and say so in their
labels. The house colours (:data:`._style.OKABE_ITO`), and a line style or marker apart for
curves that cross."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import serving
from ..errors import InputError
from . import _style
from ._common import fit_height

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


def _plain(x: float) -> str:
    """A number in plain digits, three significant: 0.0139, 27.2, 49, 5,230 (never 5.23e+03).

    >>> _plain(0.01388), _plain(49.01), _plain(5234.0), _plain(1e-5)
    ('0.0139', '49', '5,234', '0.00001')
    """
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return np.format_float_positional(x, precision=3, unique=True, fractional=False, trim="-")


def per_second(rate: float) -> str:
    """A rate for a label: '1 request/s', '39 requests/s', '5,230 requests/s'.

    >>> per_second(1.0), per_second(39.2), per_second(5234.0)
    ('1 request/s', '39.2 requests/s', '5,234 requests/s')
    """
    text = _plain(rate)
    return f"{text} request{'' if text == '1' else 's'}/s"


def _seconds(t: float) -> str:
    """A time for a label: '0.3 s', '73.2 ms', '850 µs'."""
    if t >= 1:
        return f"{_plain(t)} s"
    return f"{_plain(t * 1e3)} ms" if t >= 1e-3 else f"{_plain(t * 1e6)} µs"


def _config(parallel: str | None, speedup: float | None) -> str:
    if parallel == "inter":
        return "inter-op"
    if parallel == "intra":
        return f"intra-op, K = {speedup:g}" if speedup else "intra-op"
    return "one instance"


# The house colours (Okabe & Ito, :data:`._style.OKABE_ITO`) of the curves and marks; every
# pair that can cross also differs in line style or marker.
_C = _style.OKABE_ITO
COLOURS = {"execution": "#999999", "queueing": _C["sky blue"], "inter-op": _C["bluish green"],
           "intra-op": _C["reddish purple"], "batched": _C["vermillion"],
           "chunked": _C["orange"], "target": _C["black"], "rate": _C["blue"],
           "inter-op wins": _C["vermillion"], "one": _C["black"], "first token": _C["black"],
           "estimate": _C["reddish purple"]}
_GLYPH = {"o": "●", "s": "■", "D": "◆", "v": "▼"}  # a mark's marker, named in the note


def _staged(queue: serving.QueueModel) -> str:
    """How a pipeline serves: whole prompts through its stages (a prompt's execution the
    stages' sum, the queue served at the slowest) or a prompt's chunks filling it (one prompt
    at a time, execution and service alike)."""
    if math.isclose(queue.execution, queue.mean, rel_tol=1e-9):
        return "s a prompt's time through the pipeline, its chunks filling the stages"
    return "s the slowest pipeline stage, a prompt's execution the stages' sum (Eq. 2)"


def _queue_words(queue: serving.QueueModel, parallel: str | None, compare: bool,
                 replicas: int, inter: serving.QueueModel | None = None) -> str:
    """The queue model in a sentence: M/D/1 for one prompt length (every service time the
    same), M/G/1 for a distribution of them, both by Pollaczek–Khinchine (DistServe §3.1);
    a pipeline's (``queue``, or ``inter`` compared) as :func:`_staged` words it."""
    one = math.isclose(queue.second, queue.mean**2, rel_tol=1e-9)
    kind, wait = (("M/D/1, one prompt length", "R·s²/(2(1\u00a0−\u00a0R·s))") if one else
                  ("M/G/1, prompt lengths from a distribution",
                   "R·E[s²]/(2(1\u00a0−\u00a0R·E[s]))"))
    staged = not math.isclose(queue.execution, queue.mean, rel_tol=1e-9)  # pp stages, whole
    service = {None: _staged(queue) if staged else
               "s the prefill time" + ("" if one else " (execution: its mean)"),
               "inter": "inter-op: " + _staged(inter or queue),
               "intra": "intra-op: s the prefill time over K (Eq. 3)"}
    served = [service["inter"], service["intra"]] if compare else [service[parallel]]
    each = f"; each of {replicas} replicas at R/{replicas}" if replicas > 1 else ""
    return (f"Queue: {kind} (Poisson arrivals at rate R, service time s): mean wait {wait} "
            f"(Pollaczek–Khinchine; DistServe §3.1); {'; '.join(served)}{each}.")


def plot_ttft(mean: float, second: float | None = None, *, parallel: str | None = None,
              speedup: float | None = None, replicas: int = 1, slo: float | None = None,
              compare: bool = False, device: str = "", model: str = "", dtype: str = "",
              prompt: str = "", rate: float | None = None, batching: Batching | None = None,
              chunked: tuple[int, float] | None = None, points: int = 200,
              queue: serving.QueueModel | None = None, ax: Axes | None = None,
              legend: str = "right", first_token: float = 0.0,
              estimate: serving.QueueModel | None = None) -> Axes:
    """Mean TTFT against arrival rate, from 0 to 98 % of the rate where the load reaches 1 (or
    further, to show every marked rate with a margin).

    ``mean``, ``second``: E[t], E[t²] of the one-GPU prefill time (one length: ``second`` None).
    Execution and queueing of the chosen configuration are stacked; ``slo`` draws the target
    and marks the highest rate that meets it. ``compare`` (needs ``speedup``) adds the totals of
    two-way inter-op and intra-op, marks the highest rate that meets the target for each of
    them, and the rate above which inter-op wins. ``prompt``: a prompt length in tokens, or
    the name of a prompt-length distribution. ``rate`` marks that operating rate on the
    total; ``batching`` adds the TTFT of the first (wait (B − 1)/R plus the batch's execution)
    and last prompt of a batch, labelled as leaving out queueing (:func:`roofline.serving.batching`
    counts none behind an earlier batch); ``chunked`` = (chunk, execution) adds the
    total TTFT, queueing included, when each prompt is prefilled in chunks of that size with
    that execution time (one length). ``queue``: the configuration's queue where it is not the
    one ``mean``, ``parallel`` and ``speedup`` make (inter-op with the model's stage times: it
    is then also the inter-op curve of ``compare``, whose crossing with intra-op is found
    numerically).

    ``first_token`` (s) splits the execution into the prompt's and the first token's delivery
    (the final norm and the LM head on the last position), stacked apart; ``estimate``: the
    estimate's queue (:func:`roofline.serving.parts.ttft_parts`), whose total is drawn dotted
    and named as the estimate, not a bound.

    The legend keys the curves (at most six), outside the axes, where it covers none: on their
    right (``legend`` "right") or under the x label ("below"; a figure with a layout engine, or
    saved with ``bbox_inches="tight"``, keeps either in view); a note under the axes (gid
    ``ttft-note``) names the queue model and gives the marked values, each by its marker.
    """
    import matplotlib.pyplot as plt

    if legend not in ("right", "below"):
        raise InputError("legend", "must be right or below", legend)
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
    marked = [(label, queue, COLOURS["one"], "o")]
    if compare:
        for name, q, color, marker in (("inter-op", inter, COLOURS["inter-op"], "s"),
                                       (_config("intra", speedup), intra, COLOURS["intra-op"],
                                        "D")):
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
    which = "" if label == "one instance" else f", {label}"
    if first_token > 0:  # the prompt's execution and the first token's delivery apart
        handles = ax.stackplot(rates[shown], execution[shown] - first_token,
                               np.full(int(shown.sum()), first_token), queueing[shown],
                               labels=[f"prompt execution{which}", "first token",
                                       f"queueing{which}"],
                               colors=[COLOURS["execution"], COLOURS["first token"],
                                       COLOURS["queueing"]], alpha=0.6)
        handles = [h for h in handles if h.get_label() != "first token"]  # in the note
    else:
        handles = ax.stackplot(rates[shown], execution[shown], queueing[shown],
                               labels=[f"execution{which}", f"queueing{which}"],
                               colors=[COLOURS["execution"], COLOURS["queueing"]], alpha=0.6)
    note = [_queue_words(queue, parallel, compare, replicas, inter if compare else None)]
    if first_token > 0:
        share = first_token / float(execution[0])
        seen = "the dark band above the prompt's execution" if share >= 0.02 else \
            f"a band above the prompt's execution, too thin to see ({share:.1%} of it)"
        note.append(f"The first token's delivery (final norm, LM head on the last position), "
                    f"{_seconds(first_token)}: {seen}.")
    if estimate is not None and (batching is not None or chunked is not None):
        note.append("The estimate is left out beside batching and chunking (roofline ttft "
                    "prints it).")
    elif estimate is not None:
        e, w = serving.ttft_curve(rates, estimate)
        handles += ax.plot(rates, e + w, color=COLOURS["estimate"], linewidth=1.5, ls=":",
                           label="estimate: total (not a bound)")
        note.append("Dotted: the estimate, the bound with launch and host overhead, tile and "
                    "wave quantization and achievable fractions (the device file's "
                    "[estimate]); the stacked parts are the bound.")
    if compare:
        curves = {}
        for name, q, color, dashes in (("inter-op", inter, COLOURS["inter-op"], "-"),
                                       (_config("intra", speedup), intra, COLOURS["intra-op"],
                                        (0, (5, 2)))):
            e, w = serving.ttft_curve(rates, q)
            curves[name] = e + w
            handles += ax.plot(rates, curves[name], linewidth=1.5, color=color, ls=dashes,
                               label=f"total, {name}")
    top = base = max(5 * mean, 2 * (slo or 0.0))  # the queue diverges at the right edge
    if batching is not None:
        first = batching.execution_s + serving.batch_wait_curve(batching.batch, rates)
        # the batched prompts in view, their lowest times a quarter below the top (the first
        # prompt's at the highest rate drawn), unless that would flatten the queue's curves
        lowest = float(np.min(first[1:]))
        top = min(max(base, 1.25 * lowest, 1.25 * batching.execution_s), 4 * base)
        above = " (above the axis)"
        b = batching.batch
        handles += ax.plot(rates[1:], first[1:], color=COLOURS["batched"], linewidth=1.5,
                           label=f"first of {b} batched (no queueing)"
                                 + (above if lowest > top else ""))
        handles.append(ax.axhline(batching.execution_s, color=COLOURS["batched"],
                                  linestyle="--", linewidth=1,
                                  label=f"last of {b} batched (execution only)"
                                        + (above if batching.execution_s > top else "")))
        note.append("Batched: the first prompt waits (B\u00a0−\u00a01)/R for the batch to "
                    "fill, then its execution; no queueing behind an earlier batch.")
    if chunked is not None:
        size, time = chunked
        e, w = serving.ttft_curve(rates, serving.queue_model(time, None, None, None, replicas))
        handles += ax.plot(rates, e + w, color=COLOURS["chunked"], linewidth=1.5, ls="-.",
                           label=f"total, chunks of {size} tokens")
        note.append("Chunked: the same queue, s the chunked prefill's time.")
    marks = []
    if slo is not None:
        handles.append(ax.axhline(slo, color=COLOURS["target"], linestyle="--", linewidth=1,
                                  label=f"target {_plain(slo)} s"))
        for name, q, color, marker in marked:
            who = f", {name}" if compare else ""
            if best[name] is not None:
                ax.axvline(best[name], color=color, linestyle=":", linewidth=1)
                ax.plot([best[name]], [slo], marker, color=color, zorder=5,
                        label=f"highest rate meeting it{who}: {per_second(best[name])}")
                marks.append(f"{_GLYPH[marker]}\u00a0highest rate meeting the target{who}: "
                             f"{per_second(best[name])}")
            else:
                marks.append(f"no rate meets the target{who}: execution alone takes "
                             f"{_seconds(q.execution)}")
    if rate is not None:
        ax.axvline(rate, color=COLOURS["rate"], linestyle=":", linewidth=1)
        if rate < queue.stable_rate:
            point = serving.ttft(rate, queue)
            ax.plot([rate], [point.total_s], "v", color=COLOURS["rate"], zorder=5,
                    label=f"at {per_second(rate)}: {_seconds(point.total_s)}")
            marks.append(f"▼\u00a0{_seconds(point.total_s)} at {per_second(rate)}")
        else:
            marks.append(f"at {per_second(rate)} (dotted) the queue has no steady state")
    if compare:
        one_length = second is None or math.isclose(second, mean**2, rel_tol=1e-12)
        cross = (serving.inter_beats_intra_rate(mean, speedup) * replicas
                 if one_length and not derived else _crossing(rates, *curves.values()))
        if cross is not None and math.isfinite(cross) and cross <= rates[-1]:
            ax.axvline(cross, color=COLOURS["inter-op wins"], linestyle="-.", linewidth=1,
                       label=f"inter-op wins above {per_second(cross)}")
            marks.append(f"dash-dot line: inter-op wins above {per_second(cross)}")
    if marks:
        note.append("; ".join(marks)[:1].upper() + "; ".join(marks)[1:] + ".")
    ax.set_ylim(0, top)
    ax.set_xlim(0, rates[-1])
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    _style.plain_ticks(ax.yaxis, "s")  # 25 ms, 1 s: the unit on each tick
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("mean time to first token")
    if prompt:
        prompt = (f"prompt {int(prompt):,} tokens" if prompt.isdigit()
                  else f"prompts from {prompt}")
    parts = [p for p in (device, model, dtype, prompt) if p]
    ax.set_title("TTFT against arrival rate" + (f": {', '.join(parts)}" if parts else ""))
    _legend_and_note(ax, handles, " ".join(note), legend)
    return ax


def _legend_and_note(ax: Axes, handles: list, note: str, where: str) -> None:
    """The curves' legend outside the axes, on their right or under the x label (its ticks'
    and label's height in points, from the style), and the note under the x label or under
    the legend, wrapped to the axes' width."""
    import matplotlib as mpl
    from matplotlib.transforms import ScaledTranslation

    fig = ax.get_figure()
    inches = ax.get_position().width * fig.get_figwidth()
    if where == "right":
        legend = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1),
                           borderaxespad=0)
        anchor = ax.xaxis.label
    else:
        rc = mpl.rcParams
        ticks = rc["xtick.major.size"] + rc["xtick.major.pad"] \
            + 1.3 * mpl.font_manager.FontProperties(size=rc["xtick.labelsize"]).get_size()
        label = ax.xaxis.labelpad + 1.3 * ax.xaxis.label.get_fontsize() + 3
        down = ScaledTranslation(0, -(ticks + label) / 72, fig.dpi_scale_trans)
        # two columns where two of the longest entries fit (its text at about 0.55 em a
        # character, its handle and padding about 0.45 in)
        text = max(len(h.get_label()) for h in handles) * 0.55 * 7 / 72
        long = 2 * (text + 0.45) > fig.get_figwidth() - 0.3
        legend = ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0),
                           bbox_transform=ax.transAxes + down, borderaxespad=0,
                           ncol=1 if long else 2)
        anchor = legend
        inches = fig.get_figwidth() - 0.7  # the axes' left edge about half an inch in
    ax.annotate(_style.wrap(note, inches, 7), xy=(0, 0), xycoords=("axes fraction", anchor),
                xytext=(0, -4), textcoords="offset points", ha="left", va="top", fontsize=7,
                color="#444444", annotation_clip=False, gid="ttft-note")


def plot_ttft_result(result: TTFTResult, *, compare: bool = False, points: int = 200,
                     ax: Axes | None = None, legend: str = "right") -> Axes:
    """:func:`plot_ttft` of what :func:`roofline.ttft` returned: its queue, target, rate,
    batching and chunking (chunked execution: the prefill with its layers chunked); the
    setting's parallel degrees in the title."""
    from ._common import splits

    s, c = result.setting, result.chunking
    chunked = None if c is None else (c.chunk, result.mean_s - c.one_shot_s + c.total_s)
    prompt = str(result.prompt) if result.prompt_dist is None else result.prompt_dist
    return plot_ttft(result.mean_s, result.second_s2, parallel=result.parallel,
                     speedup=result.speedup, replicas=result.replicas, slo=result.slo,
                     compare=compare, device=s.hardware.name, model=s.model.name,
                     dtype=", ".join([s.precision_words, f"{s.attention} attention",
                                      *splits(s)]), prompt=prompt,
                     rate=result.rate, batching=result.batching, chunked=chunked,
                     points=points, queue=result.queue, ax=ax,
                     legend=legend, first_token=result.first_token_s,
                     estimate=result.estimate_queue)


def ttft_figure(result: TTFTResult, *, compare: bool = False, size: str | float = "page"
                ) -> Figure:
    """:func:`plot_ttft_result` on a new Figure in the house style, ``size`` wide
    (:func:`roofline.plot._style.width`: "column", "page" or inches): the legend and the note
    under the axes, the title wrapped to the width, and the height what the axes (1.9 in at a
    column's width, 2.4 in wider) and the text around them take (laid out once to measure)."""
    w = _style.width(size)
    with _style.style():
        fig = _style.figure((w, 2 * w))
        ax = fig.subplots()
        plot_ttft_result(result, compare=compare, ax=ax, legend="below")
        ax.set_title(_style.wrap(ax.get_title(), 0.85 * w, 8))
        fit_height(fig, 1, 1.9 if _style.narrow(size) else 2.4)
    return fig
