"""Time to first token in three parts, as the bound and as the estimate: queueing, prompt
execution (the layers over the prompt) and first-token delivery (the final norm and the LM head
on the last position; in the estimate with their launches and one engine step's host overhead,
which holds the scheduling and the sampling).

The bound's parts sum to its TTFT (the prefill's roofline time is the queue's service time). Each
of the estimate's parts is the bound's plus what the estimate adds to it, never less: the
prompt's addition split as the parallel setting splits the prompt's execution (intra-op by K,
a pipeline as its stages), the first token's (its launches and one host step) whole. The
estimate's queue is the bound's with every time scaled by the estimate's execution over the
bound's (for a distribution the second moment from the estimate's own E[t²] over the lengths),
so that its queueing is what the longer service time makes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import InputError
from ..evaluate.estimate import WHAT, delivery, estimate_columns, missing
from ..evaluate.setting import Setting
from ..specs.distribution import Distribution
from .queue import QueueModel, moments, ttft

__all__ = ["ttft_parts"]


def ttft_parts(s: Setting, dist: Distribution, one: bool, queue: QueueModel,
               rate: float | None, bound_mean: float
               ) -> tuple[float, dict[str, Any], QueueModel | None]:
    """(the bound's first-token delivery in s, the estimate's parts: ``execution_s``,
    ``prompt_s``, ``first_token_s``, ``host_s``, and at a ``rate`` ``queueing_s`` and
    ``total_s``; or ``reason`` where the device gives no ``[estimate]``; the estimate's queue,
    None without one) for prompts of
    ``dist`` (``one``: a single length) queued as ``queue``, whose mean service time is
    ``bound_mean`` (the bound's E[t])."""
    first = int(dist.lengths[0])
    bound_first, est_first = delivery(s, first)
    if est_first is None:
        return bound_first, {"what": WHAT, "reason": missing(s)}, None
    mean, second = moments(dist, lambda lengths: estimate_columns(s, lengths)["time_s"])
    if one:
        second = mean**2
    # each part the bound's plus what the estimate adds to it: the prompt's addition split as
    # the parallelism splits the prompt's execution (r: the queue's execution over one
    # prefill's), the first token's (its launches and the host's step) whole, as the bound's is
    r = queue.execution / bound_mean
    prompt = queue.execution - bound_first + r * ((mean - est_first) - (bound_mean - bound_first))
    execution = prompt + est_first
    k = execution / queue.execution
    est = replace(queue, execution=execution, mean=queue.mean * k,
                  second=queue.second * k**2 if one else queue.second * second / bound_mean**2)
    host = float(estimate_columns(s, [first])["host_s"][0])
    out: dict[str, Any] = {"what": WHAT, "execution_s": execution, "prompt_s": prompt,
                           "first_token_s": est_first, "host_s": host}
    if rate is not None:
        try:
            point = ttft(rate, est)
        except InputError as err:  # the longer service time has no steady state at this rate
            out["reason"] = f"no steady state at this rate: {err.rule}"
            return bound_first, out, est
        out.update(queueing_s=point.queueing_s, total_s=point.total_s,
                   utilization=point.utilization)
    return bound_first, out, est
