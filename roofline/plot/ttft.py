"""TTFT against arrival rate: execution and queueing stacked, the target and the highest rate
that meets it marked; optionally two-way intra-op against inter-op (DistServe §3.1, Fig. 4)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import service
from ..errors import InputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_ttft", "per_second"]


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
              prompt: str = "", points: int = 200, ax: Axes | None = None) -> Axes:
    """Mean TTFT against arrival rate, from 0 to 98 % of the rate where the load reaches 1.

    ``mean``, ``second``: E[t], E[t²] of the one-GPU prefill time (one length: ``second`` None).
    Execution and queueing of the chosen configuration are stacked; ``slo`` draws the target
    and marks the highest rate that meets it. ``compare`` (needs ``speedup``) adds the totals of
    two-way inter-op and intra-op, marks the highest rate that meets the target for each of
    them, and the rate above which inter-op wins. ``prompt``: a prompt length in tokens, or
    the name of a prompt-length distribution.
    """
    import matplotlib.pyplot as plt

    ax = plt.gca() if ax is None else ax
    queue = service.queue_model(mean, second, parallel, speedup, replicas)
    top = queue.stable_rate
    if compare:
        if speedup is None:
            raise InputError("--speedup", "comparing intra-op with inter-op needs a "
                                     "speedup K in (1, 2]")
        inter = service.queue_model(mean, second, "inter", None, replicas)
        intra = service.queue_model(mean, second, "intra", speedup, replicas)
        top = max(top, inter.stable_rate, intra.stable_rate)
    rates = np.linspace(0.0, 0.98 * top, points)
    execution, queueing = service.ttft_curve(rates, queue)
    shown = np.isfinite(queueing)
    label = _config(parallel, speedup) + (f", {replicas} replicas" if replicas > 1 else "")
    ax.stackplot(rates[shown], execution[shown], queueing[shown],
                 labels=[f"execution, {label}", f"queueing, {label}"], alpha=0.6)
    # (configuration, its queue, colour, marker) whose highest rate meeting the target is marked
    marked = [(label, queue, "black", "o")]
    if compare:
        curves = {}
        for name, q, color, marker in (("inter-op", inter, "tab:green", "s"),
                                       (_config("intra", speedup), intra, "tab:purple", "D")):
            e, w = service.ttft_curve(rates, q)
            curves[name] = e + w
            ax.plot(rates, curves[name], linewidth=1.5, color=color, label=f"total, {name}")
            if name == label:
                marked[0] = (name, q, color, marker)
            else:
                marked.append((name, q, color, marker))
    if slo is not None:
        ax.axhline(slo, color="black", linestyle="--", linewidth=1, label=f"target {slo:g} s")
        for name, q, color, marker in marked:
            best = service.max_rate(q, slo)
            if best is not None:
                ax.axvline(best, color=color, linestyle=":", linewidth=1)
                who = f", {name}" if compare else ""
                ax.plot([best], [slo], marker, color=color, zorder=5,
                        label=f"highest rate meeting it{who}: {per_second(best)}")
    if compare:
        one_length = second is None or math.isclose(second, mean**2, rel_tol=1e-12)
        cross = (service.inter_beats_intra_rate(mean, speedup) * replicas if one_length
                 else _crossing(rates, *curves.values()))
        if cross is not None and math.isfinite(cross) and cross <= rates[-1]:
            ax.axvline(cross, color="tab:red", linestyle="-.", linewidth=1,
                       label=f"inter-op wins above {per_second(cross)}")
    ax.set_ylim(0, max(5 * mean, 2 * (slo or 0.0)))  # the queue diverges at the right edge
    ax.set_xlim(0, rates[-1])
    ax.set_xlabel("arrival rate (requests/s)")
    ax.set_ylabel("mean time to first token (s)")
    if prompt:
        prompt = f"prompt {prompt} tokens" if prompt.isdigit() else f"prompts from {prompt}"
    parts = [p for p in (device, model, dtype, prompt) if p]
    ax.set_title("TTFT against arrival rate" + (f": {', '.join(parts)}" if parts else ""))
    ax.legend(loc="upper left", fontsize="small")
    return ax
