"""What :func:`roofline.ttft` returns: the queue of one configuration on one device, the mean
TTFT at a rate, and batched or chunked prefill; printable as text, and as a dict for JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from ..tables import si

if TYPE_CHECKING:
    from ..evaluate import Setting
    from ..specs.distribution import Distribution
    from .queue import QueueModel, QueuePoint
    from .schedule import Batching, Chunking

__all__ = ["TTFTResult", "per_s", "ms"]


def per_s(rate: float, spec: str = "g") -> str:
    """``1 request/s``, ``30 requests/s``.

    >>> per_s(1), per_s(30), per_s(8.333333, ".4g")
    ('1 request/s', '30 requests/s', '8.333 requests/s')
    """
    shown = format(rate, spec)
    return f"{shown} request{'' if shown == '1' else 's'}/s"


def ms(seconds: float) -> str:
    """Milliseconds, four significant digits below a second.

    >>> ms(0.0123), ms(0.14230612), ms(1.5)
    ('12.3 ms', '142.3 ms', '1,500 ms')
    """
    return f"{seconds * 1e3:,.4g} ms" if seconds < 1 else f"{seconds * 1e3:,.0f} ms"


@dataclass(frozen=True)
class TTFTResult:
    """Mean time to first token of one prefill configuration on one device.

    ``mean_s``, ``second_s2``: E[t], E[t²] of the one-device prefill time over the prompt
    lengths; ``queue``: the configuration's queue (parallelism, replicas); ``point``: the mean
    TTFT at ``rate`` (None without a rate); ``batching``, ``chunking``: None unless asked for.
    """

    setting: Setting
    distribution: Distribution
    prompt: int | None  # one prompt length, or None for a distribution
    prompt_dist: str | None  # the distribution's file, or None
    parallel: str | None
    speedup: float | None
    replicas: int
    slo: float | None
    mean_s: float
    second_s2: float
    queue: QueueModel
    point: QueuePoint | None
    batching: Batching | None = None
    chunking: Chunking | None = None
    speedup_derived: bool = False  # K from the model (two tensor-parallel devices), not given
    stage_s: tuple[float, ...] | None = None  # inter-op: each stage's mean time, from the model
    # first-token delivery within the execution (final norm, LM head on the last position)
    first_token_s: float = 0.0
    estimate: dict[str, Any] | None = None  # the estimate's parts (.parts.ttft_parts)
    estimate_queue: QueueModel | None = None  # the estimate's queue, where it has one

    @property
    def rate(self) -> float | None:
        return None if self.point is None else self.point.rate_per_s

    def as_dict(self) -> dict[str, Any]:
        """Inputs and results, JSON-ready (seconds, requests per second)."""
        s, p = self.setting, self.point
        out: dict[str, Any] = {
            "hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
            "weight_dtype": s.precision["weights"], "kv_dtype": s.precision["kv_cache"],
            "act_dtype": s.precision["activations"],
            "attention": s.attention,
            "parallel": self.parallel, "splits": s.splits, "speedup": self.speedup,
            "speedup_derived": self.speedup_derived, "replicas": self.replicas,
            "stage_s": None if self.stage_s is None else list(self.stage_s),
            "slo_s": self.slo,
            **({"prompt": self.prompt} if self.prompt_dist is None else
               {"prompt_dist": self.prompt_dist}),
            "rate_per_s": None if p is None else p.rate_per_s,
            "execution_s": self.queue.execution,
            "prompt_s": self.queue.execution - self.first_token_s,
            "first_token_s": self.first_token_s,
            "queueing_s": None if p is None else p.queueing_s,
            "total_s": None if p is None else p.total_s,
            "utilization": None if p is None else p.utilization,
            "max_rate_per_s": None if p is None else p.max_rate_per_s,
            "stable_rate_per_s": self.queue.stable_rate,
            "estimate": self.estimate,
        }
        if self.batching is not None:
            b = self.batching
            out["batching"] = {
                "prompts": b.batch, "prompt": b.prompt, "rate_per_s": b.rate_per_s,
                "execution_s": b.execution_s, "wait_s": b.wait_s, "ttft_first_s": b.first_s,
                "ttft_last_s": b.last_s, "per_prompt_s": b.per_prompt_s,
                "single_prompt_s": b.single_s, "crossover_rows": b.crossover_rows,
                "stops_helping_batch": b.stops_helping}
        if self.chunking is not None:
            c = self.chunking
            out["chunking"] = {
                "chunk": c.chunk, "prompt": c.prompt, "attention": c.attention,
                "chunks": len(c.sizes), "sizes": list(c.sizes), "times_s": list(c.times_s),
                "total_s": c.total_s, "one_shot_s": c.one_shot_s, "extra_bytes": c.extra_bytes,
                "min_compute_bound_chunk": c.min_chunk, "largest_chunk_that_fits": c.fits_chunk}
        return out

    def describe(self) -> str:
        """The configuration in words: prompt, parallelism, replicas."""
        prompt = (f"prompt {self.prompt} tokens" if self.prompt_dist is None else
                  f"prompt lengths from {self.prompt_dist}: execution is the mean over them")
        s = self.setting
        stages = ("; stage times from the model: "
                  + " and ".join(si(t, "s") for t in self.stage_s)
                  + ", the queue served at the slowest" if self.stage_s is not None else "")
        # DistServe's two-way split of the setting: its pipeline stages doubled (the setting
        # holds them: api.ttft), or its devices
        each = "" if not s.parallel else f" of {self._splits('')}"
        ratio = "t(1 device)/t(2 devices, tensor parallel)" if s.tp == 1 else \
            f"t(TP {s.tp})/t(TP {2 * s.tp})"
        parallel = (f"two-way inter-op (pipeline) parallelism: {self._splits(stages)}"
                    if self.parallel == "inter" else
                    f"two-way intra-op parallelism{each}, speedup K = {self.speedup:g}"
                    + (f" (derived: {ratio}, from the model)" if self.speedup_derived else "")
                    if self.parallel == "intra" else self._splits(stages))
        parts = [prompt, parallel]
        servers = self.replicas * s.ep  # each expert-parallel rank serves its own prompts
        if servers > 1:
            each = ("" if self.rate is None else
                    f", {per_s(self.rate / servers, '.4g')} each")
            who = "replicas" if s.ep == 1 else \
                f"servers ({self.replicas} × {s.ep} expert-parallel ranks, each its own prompts)"
            parts.append(f"{servers} {who}{each}")
        return "; ".join(parts)

    def _splits(self, stages: str) -> str:
        """The setting's parallelism in words, and how it is queued."""
        s = self.setting
        if not s.parallel:
            return "one device, no parallelism"
        words = s.parallel_words.removeprefix(", ").replace("; one device's share", "")
        return words + stages if s.pp > 1 else words

    def _title(self) -> str:
        s = self.setting
        types = s.precision_words
        at = "" if self.rate is None else f" at {per_s(self.rate)}"
        return (f"time to first token{at} ({s.hardware.name}, {s.model.name}, {types}, "
                f"{s.attention} attention; {self.describe()})")

    def _lines(self) -> list[str]:
        p, q = self.point, self.queue
        mean = " (mean over the prompt lengths)" if self.prompt_dist is not None else ""
        lines = [self._title(), f"  execution    {si(q.execution, 's')}{mean}"]
        if p is not None:
            lines += [f"  queueing     {si(p.queueing_s, 's')}",
                      f"  total        {si(p.total_s, 's')}",
                      f"  utilization  {p.utilization:.3f} (steady state below "
                      f"{per_s(p.stable_rate_per_s, '.4g')})"]
        else:
            lines.append(f"  steady state below {per_s(q.stable_rate, '.4g')}")
        if self.slo is not None and p is not None:
            if p.max_rate_per_s is None:
                lines.append(f"  no arrival rate meets the target {self.slo:g} s: execution "
                             f"alone takes {si(q.execution, 's')}")
            else:
                lines.append(f"  highest rate meeting the target {self.slo:g} s: "
                             f"{per_s(p.max_rate_per_s, '.4g')}")
        lines += [f"  parts        execution = prompt {si(q.execution - self.first_token_s, 's')}"
                  f" + first token {si(self.first_token_s, 's')} (final norm, LM head on the "
                  "last position; sampling and the host's step: none in the bound)",
                  self._estimate_line()]
        if self.batching is not None:
            lines += _batching_lines(self.batching, self.replicas)
        if self.chunking is not None:
            lines += _chunking_lines(self.chunking)
        return lines

    def _estimate_line(self) -> str:
        """The estimate's three parts in one line, or why there is none."""
        e = self.estimate or {}
        if "execution_s" not in e:
            return f"  estimate     {e.get('reason', 'none')}; the times above are the bound"
        parts = (f"prompt {si(e['prompt_s'], 's')} + first token {si(e['first_token_s'], 's')}"
                 f" (with one host step {si(e['host_s'], 's')}: scheduling, sampling)")
        if "total_s" in e:
            return (f"  estimate     {si(e['total_s'], 's')} = queueing "
                    f"{si(e['queueing_s'], 's')} + {parts}")
        why = f"; {e['reason']}" if "reason" in e else ""
        return f"  estimate     execution {si(e['execution_s'], 's')} = {parts}{why}"

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _repr_markdown_(self) -> str:
        return "```\n" + str(self) + "\n```"


def _batching_lines(b: Batching, replicas: int) -> list[str]:
    each = " per replica" if replicas > 1 else ""
    lines = [f"batching {b.batch} prompts of {b.prompt} tokens into one prefill (arrivals at "
             f"{per_s(b.rate_per_s, '.4g')}{each})",
             f"  execution          {ms(b.execution_s)} ({ms(b.per_prompt_s)} per prompt; one "
             f"prompt alone {ms(b.single_s)})",
             f"  TTFT first prompt  {ms(b.first_s)} (waits {ms(b.wait_s)} for {b.batch - 1} "
             f"more arrival{'' if b.batch == 2 else 's'})",
             f"  TTFT last prompt   {ms(b.last_s)}"]
    if b.stops_helping is None or b.crossover_rows is None:
        return [*lines, "  stops helping      never: the projections never reach the ridge"]
    already = "; here one prompt is compute-bound already" if b.stops_helping <= 1 else ""
    return [*lines,
            f"  stops helping at   {b.stops_helping:,.3g} prompts = projection crossover "
            f"{b.crossover_rows:,.0f} rows / {b.prompt} tokens",
            "                     (beyond it the projections are compute-bound: a larger batch",
            f"                     no longer lowers the time per prompt{already})"]


def _chunking_lines(c: Chunking) -> list[str]:
    n = len(c.sizes)
    last = f"; the last {c.sizes[-1]} tokens" if c.sizes[-1] != c.chunk else ""
    lines = [f"chunked prefill of {c.prompt} tokens in chunks of {c.chunk} ({n} chunk"
             f"{'' if n == 1 else 's'}{last}; {c.attention} attention; the layers only, batch 1)"]
    starts = [0, *accumulate(c.sizes)]  # where each chunk begins
    for k in range(n) if n <= 6 else [0, 1, 2, None, n - 2, n - 1]:
        if k is None:
            lines.append("  …")
            continue
        label = f"chunk {k}"
        lines.append(f"  {label:<18} {ms(c.times_s[k])} (tokens {starts[k]}–"
                     f"{starts[k] + c.sizes[k] - 1})")
    lines += [f"  total              {ms(c.total_s)} ({c.total_s / c.one_shot_s:.4g} × the "
              f"one-shot {ms(c.one_shot_s)}: the same layers and {c.attention} attention in one "
              "pass)",
              f"  extra HBM bytes    {si(c.extra_bytes, 'B')} (weights again for each later "
              "chunk, earlier chunks' KV cache"
              + ("; fewer score bytes than one T×T matrix)" if c.attention == "naive" else ")")]
    if c.min_chunk is None:
        lines.append("  smallest chunk     none keeps the projections compute-bound: they never "
                     "reach the ridge")
    else:
        lines.append(f"  smallest chunk     {c.min_chunk:,.1f} tokens keeps the projections "
                     "compute-bound (the projection crossover)")
    if c.fits_chunk is not None:
        most = math.floor(c.fits_chunk)
        whole = " (the whole prompt fits in one step)" if most >= c.prompt else ""
        lines.append(f"  largest chunk      {most:,} tokens fit in memory beside the weights and "
                     f"the prompt's KV cache, live activations counted{whole}")
    return lines
