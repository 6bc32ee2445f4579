"""A request end to end in numbers: the prefill of its prompt, then one decode step per further
output token over the growing KV cache; its time, the decodes' TPOT, the memory it ends with,
and the throughput bounds of a batch of such requests.

A batch of B requests of T prompt tokens and T_out output tokens is a prefill of the B prompts
(``prefill``'s bound: it gives each its first token), then T_out − 1 decode steps of the B
sequences at contexts T, T + 1, ..., T + T_out − 2 (``decode``'s step: the weights read once a
step, every sequence's cache so far; under tensor parallelism one device's share with its
all-reduces). The steps are timed as ``decode`` times one, all of them at once over numpy arrays
of the contexts; their FLOPs and bytes agree with the closed forms ``request.decode_flops`` and
``request.decode_bytes`` of :mod:`roofline.derive.hybrid` (tested).

**Throughput.** The batch's bounds are its own: B·T_out output tokens (B requests) in its time.
The bound for any schedule on these devices is the same at the largest batch whose KV caches fit
beside the weights when every sequence holds its prompt alone (``max_batch_at_prompt``): a step's
weights are shared by at most that many sequences, and every sequence's FLOPs and cache reads
are its own, so the time per request under the roofline falls with the batch and is least
there (scaling-book "All About Transformer Inference": the batch amortises the weights).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ..errors import InputError
from ..evaluate.memory import held_bytes, stage_bytes
from ..evaluate.phases import check_count, decode_operations, prefill_time, roofline_time
from ..evaluate.setting import Setting
from ..tables import si
from .checks import first_split, shown

__all__ = ["Request", "request", "decode_part", "fits"]

_MAX_OUTPUT = 10**7  # output tokens: more is surely a slip (and ~80 MB of arrays a column)


@dataclass(frozen=True)
class Request:
    """A batch of ``batch`` requests of ``prompt`` and ``output`` tokens, end to end."""

    setting: Setting
    prompt: int
    output: int  # tokens generated, the first by the prefill
    batch: int
    prefill_s: float  # the B prompts' prefill: the first token (TTFT's execution part)
    decode_s: float  # the T_out − 1 decode steps
    total_s: float
    first_tpot_s: float  # the first decode step's time (context T); 0 where T_out = 1
    last_tpot_s: float  # the last one's (context T + T_out − 2)
    mean_tpot_s: float  # decode_s / (T_out − 1)
    decode_flops: float
    decode_bytes: float
    kv_cache_bytes: float  # one device's, at the end: T + T_out − 1 tokens a sequence
    memory_bytes: float  # weights and that cache
    capacity_bytes: float  # the device's memory
    max_batch_at_end: int  # sequences whose caches fit at the end (0: none)
    max_batch_at_prompt: int  # sequences whose caches fit holding their prompts alone
    requests_per_s: float  # the batch's: B / total
    output_tokens_per_s: float  # the batch's: B·T_out / total
    bound_requests_per_s: float | None  # at max_batch_at_prompt: no schedule does better
    bound_output_tokens_per_s: float | None
    # decode alone at the largest batch whose caches fit at the end: its B·(T_out − 1) tokens
    # over its steps' sum (B/t_step grows with B, the weights shared: no static batch whose
    # caches fit decodes faster)
    decode_bound_tokens_per_s: float | None = None

    def as_dict(self) -> dict[str, object]:
        s = self.setting
        none = self.output == 1  # no decode step: no TPOT
        return {"hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
                "precision": dict(s.precision), "fusion": s.fusion,
                "attention": s.attention, "splits": s.splits,
                **{f.name: None if none and f.name.endswith("tpot_s") else
                   shown(v) if isinstance(v, float) else v
                   for f in fields(self) if f.name != "setting"
                   for v in (getattr(self, f.name),)}}

    def __str__(self) -> str:
        s, b = self.setting, self.batch
        per = f"{b:,} requests" if b > 1 else "one request"
        bound = ("– (the weights alone exceed the device's memory)"
                 if self.bound_requests_per_s is None else
                 f"{self.bound_requests_per_s:,.4g} requests/s, "
                 f"{self.bound_output_tokens_per_s:,.4g} output tokens/s at "
                 f"{self.max_batch_at_prompt:,} sequences (the most whose prompts' caches fit: "
                 "no schedule on this device that fits does better)")
        steps = self.output - 1
        decode = "none: one output token, the prefill's" if steps == 0 else (
            f"{si(self.decode_s, 's')} in {steps:,} step{'s' if steps > 1 else ''}: TPOT "
            f"{si(self.first_tpot_s, 's')} at context {self.prompt:,} to "
            f"{si(self.last_tpot_s, 's')} at {self.prompt + steps - 1:,}, mean "
            f"{si(self.mean_tpot_s, 's')}")
        fits = "" if b <= self.max_batch_at_end else \
            " (this batch does not fit: its numbers assume it does)"
        return "\n".join([
            f"request end to end ({s.hardware.name}, {s.model.name}, {s.precision_words}, "
            f"{s.attention} attention{s.parallel_words}; {per} of {self.prompt:,} prompt and "
            f"{self.output:,} output tokens)",
            f"  prefill      {si(self.prefill_s, 's')} (the first token)",
            f"  decode       {decode}",
            f"  total        {si(self.total_s, 's')}",
            f"  memory       {si(self.memory_bytes, 'B')} at the end (weights and a KV cache of "
            f"{si(self.kv_cache_bytes, 'B')}) of {si(self.capacity_bytes, 'B')}: "
            f"{self.max_batch_at_end:,} such sequences fit",
            f"  throughput   {self.requests_per_s:,.4g} requests/s, "
            f"{self.output_tokens_per_s:,.4g} output tokens/s (this batch){fits}",
            f"  bound        {bound}",
            *([f"  decode bound {self.decode_bound_tokens_per_s:,.4g} output tokens/s from the "
               f"decode steps alone at {self.max_batch_at_end:,} sequences (the most that fit "
               f"at the end; their B·(T_out − 1) tokens over their steps' sum)"]
              if self.decode_bound_tokens_per_s
              else [])])


def decode_part(setting: Setting, prompt: int, output: int) -> tuple[float, float, float,
                                                                       np.ndarray]:
    """(time, FLOPs, bytes, each step's time) of the T_out − 1 decode steps of the setting's
    batch after a ``prompt``-token prefill: each operation of the step at its own roof, at
    every context at once."""
    contexts = np.arange(prompt, prompt + output - 1, dtype=float)
    peak, bw = setting.peak, setting.bandwidth
    times, flops, nbytes = (np.zeros(contexts.shape) for _ in range(3))
    for op in decode_operations(setting):
        f = op.count * op.flops(contexts, contexts)
        q = op.count * op.bytes(contexts, contexts)
        t = roofline_time(f, q, peak, bw)
        for _, level_bw, served in op.levels:
            t = np.maximum(t, op.count * served(contexts, contexts) / level_bw)
        times, flops, nbytes = times + t, flops + f, nbytes + q
    return float(times.sum()), float(flops.sum()), float(nbytes.sum()), times


def fits(setting: Setting, context: int) -> int:
    """Sequences whose KV caches of ``context`` tokens fit beside the weights (one device; under
    N_pp stages in every stage, each holding its layers' share of both and its edge,
    :func:`roofline.evaluate.memory.stage_bytes`)."""
    one, capacity = replace(setting, batch=1), setting.hardware.memory_capacity
    if setting.pp > 1:
        weights, kv = stage_bytes(one, context)
        return max(0, int(((capacity - weights) // kv).min()))
    room = capacity - held_bytes(one, "weights", 0, "decode")
    return max(0, int(room // held_bytes(one, "kv_cache", context, "decode")))


def _time(setting: Setting, prompt: int, output: int) -> tuple[float, float, float, float,
                                                               np.ndarray]:
    pre = float(prefill_time(setting, [prompt])[0])
    dec, f, q, steps = decode_part(setting, prompt, output)
    return pre, dec, f, q, steps


def request(setting: Setting, prompt: int, output: int) -> Request:
    """A batch of ``setting.batch`` requests of ``prompt`` tokens in and ``output`` out."""
    check_count(prompt, "prompt")
    if isinstance(output, int) and output > _MAX_OUTPUT:
        raise InputError("output", f"must be at most {_MAX_OUTPUT:,} tokens", output)
    check_count(output, "output")
    if setting.pp > 1 or setting.ep > 1 or setting.cp > 1:
        name, value = first_split(replace(setting, tp=1))
        raise InputError(name, "a request's decode steps are modelled on one device or under "
                         "tensor parallelism alone: give pp, ep and cp 1", value)
    batch, end = setting.batch, prompt + output - 1
    pre, dec, f, q, steps = _time(setting, prompt, output)
    total = pre + dec
    kv = held_bytes(setting, "kv_cache", end, "decode")
    weights = held_bytes(setting, "weights", 0, "decode")
    best, most = fits(setting, prompt), fits(setting, end)
    bound = None
    if best > 0:
        b_pre, b_dec, *_ = _time(replace(setting, batch=best), prompt, output)
        bound = best / (b_pre + b_dec)
    n = output - 1
    decoding = None if not (n and most) else \
        most * n / decode_part(replace(setting, batch=most), prompt, output)[0]
    return Request(setting, prompt, output, batch, pre, dec, total,
                   float(steps[0]) if n else 0.0, float(steps[-1]) if n else 0.0,
                   dec / n if n else 0.0, f, q, kv, weights + kv,
                   setting.hardware.memory_capacity, most, best,
                   batch / total, batch * output / total, bound,
                   bound * output if bound is not None else None, decoding)
