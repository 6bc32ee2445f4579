"""Prefill and decode of a setting in numbers: each operation's FLOPs and bytes (the derived
forms, compiled once with the setting's numbers folded in) and its roofline time.

The roofline time of an operation is :func:`roofline_time`, the one numeric form of
``roofline.derive.bounds.op_time``: max(F/P_peak, Q/beta_hbm). Everything that times an
operation, here and in the sweeps, TTFT and validation, calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError
from . import arith
from .setting import Setting

if TYPE_CHECKING:
    import numpy as np

__all__ = ["roofline_time", "OpResult", "PrefillPoint", "DecodeResult", "CompiledOp",
           "operations", "prefill", "prefill_time", "decode", "check_prompts", "check_count",
           "memory_bytes", "check_memory"]


_INF = float("inf")


def roofline_time(flops: Any, nbytes: Any, peak: float, bandwidth: float) -> Any:
    """max(F/P_peak, Q/beta_hbm) (``roofline.derive.bounds.op_time``), for numbers or arrays.

    >>> roofline_time(2e12, 1e9, 1e15, 1e12)
    0.002
    """
    t_compute, t_memory = flops / peak, nbytes / bandwidth
    if isinstance(t_compute, float) and isinstance(t_memory, float):
        return t_compute if t_compute >= t_memory else t_memory
    import numpy as np

    return np.maximum(t_compute, t_memory)


def bound(flops: float, nbytes: float, peak: float, bandwidth: float) -> str:
    """"compute" where F/P ≥ Q/β (the operation sits at or right of the ridge), else "memory"."""
    return "compute" if flops / peak >= nbytes / bandwidth else "memory"


class OpResult(NamedTuple):
    """One operation at one prompt length: totals over its ``count`` (layers). A named tuple:
    a prefill over many prompt lengths makes one per operation and length."""

    name: str
    kind: str
    count: int
    flops: float
    bytes: float
    intensity: float
    time_s: float
    bound: str  # "compute" | "memory"


class PrefillPoint(NamedTuple):
    """The whole prefill at one prompt length, with its operations."""

    prompt_tokens: int
    time_s: float
    flops: float
    bytes: float
    intensity: float
    bound: str
    operations: list[OpResult]


@dataclass(frozen=True)
class DecodeResult:
    context_tokens: int
    batch: int
    time_s: float
    flops: float
    bytes: float
    intensity: float
    bound: str
    kv_cache_bytes: float


@dataclass(frozen=True)
class CompiledOp:
    """An operation with the setting's numbers folded in: ``flops(x)``, ``bytes(x)`` of its
    free variable (the prompt length, or the decode context), ``count`` times."""

    name: str
    kind: str
    count: int
    flops: Callable[..., Any]
    bytes: Callable[..., Any]


def _compile(ops: list[dict[str, str]], numbers: dict[str, Any], free: tuple[str, ...],
             array: bool) -> list[CompiledOp]:
    return [CompiledOp(op["name"], op["kind"], int(arith.value(op["count"], numbers)),
                       arith.compile(op["flops"], numbers, free, array),
                       arith.compile(op["bytes"], numbers, free, array)) for op in ops]


def operations(setting: Setting, array: bool = False) -> list[CompiledOp]:
    """The setting's prefill operations as functions of T."""
    return _compiled(setting, "prefill", array)


@cache
def _compiled(setting: Setting, phase: str, array: bool) -> list[CompiledOp]:
    numbers = setting.numbers()
    if phase == "prefill":
        setting.check_attention()
        return _compile(setting.forms["prefill"][setting.attention], numbers, ("T",), array)
    return _compile(setting.forms["decode"], numbers, ("T_ctx", "T"), array)


def check_count(value: Any, name: str, what: str = "") -> int:
    """A count of tokens or sequences: a positive integer of at most ``MAX_COUNT`` (10⁹, see
    :mod:`roofline.specs.numbers`), else an InputError naming ``name``."""
    from ..specs.numbers import MAX_COUNT

    if isinstance(value, bool) or not isinstance(value, int | float) or value != value \
            or value in (float("inf"), float("-inf")) or int(value) != value or value <= 0:
        raise InputError(name, f"{what}must be a positive integer", value)
    if value > MAX_COUNT:
        raise InputError(name, f"{what}must be at most {MAX_COUNT:,}", value)
    return int(value)


def check_prompts(prompts: Sequence[int], name: str = "prompt") -> list[int]:
    """Prompt lengths as positive integers of at most 10⁹; anything else is an InputError."""
    if len(prompts) == 0:
        raise InputError(name, "needs at least one prompt length", list(prompts))
    return [check_count(t, name, "a prompt length ") for t in prompts]


def _results(ops: list[CompiledOp], peak: float, bw: float, *at: Any) -> list[OpResult]:
    out = []
    for op in ops:
        f, q = float(op.flops(*at)) * op.count, float(op.bytes(*at)) * op.count
        out.append(OpResult(op.name, op.kind, op.count, f, q, f / q if q else float("inf"),
                            roofline_time(f, q, peak, bw), bound(f, q, peak, bw)))
    return out


def _totals(ops: list[OpResult], peak: float, bw: float) -> tuple[float, float, float, float, str]:
    f = sum(o.flops for o in ops)
    q = sum(o.bytes for o in ops)
    return sum(o.time_s for o in ops), f, q, f / q, bound(f, q, peak, bw)


def prefill(setting: Setting, prompts: Sequence[int]) -> list[PrefillPoint]:
    """Time, FLOPs, bytes, intensity and bound of the prefill at each prompt length, with the
    per-operation breakdown: one pass per operation over every prompt length (this loop is the
    API's hot path: :func:`roofline_time` and :func:`bound` are inlined in it)."""
    peak, bw = setting.peak, setting.bandwidth
    tokens = check_prompts(prompts)
    columns, flops, nbytes, times = [], [], [], []  # per operation, over the prompt lengths
    for op in operations(setting):
        name, kind, n, fl, by = op.name, op.kind, op.count, op.flops, op.bytes
        column, f_col, q_col, t_col = [], [], [], []
        for t in tokens:
            f, q = float(fl(t)) * n, float(by(t)) * n
            t_compute, t_memory = f / peak, q / bw
            compute = t_compute >= t_memory
            time_s = t_compute if compute else t_memory
            column.append(OpResult(name, kind, n, f, q, f / q if q else _INF, time_s,
                                   "compute" if compute else "memory"))
            f_col.append(f)
            q_col.append(q)
            t_col.append(time_s)
        columns.append(column)
        flops.append(f_col)
        nbytes.append(q_col)
        times.append(t_col)
    return [PrefillPoint(t, time_s, f, q, f / q, bound(f, q, peak, bw), list(results))
            for t, time_s, f, q, results in zip(tokens, map(sum, zip(*times)),
                                                map(sum, zip(*flops)), map(sum, zip(*nbytes)),
                                                zip(*columns))]


def prefill_time(setting: Setting, prompts: np.ndarray | Sequence[int]) -> np.ndarray:
    """Prefill time in seconds for an array of prompt lengths (vectorised with numpy)."""
    import numpy as np

    tokens = np.asarray(prompts, dtype=float)
    peak, bw = setting.peak, setting.bandwidth
    total = np.zeros(tokens.shape)
    for op in operations(setting, array=True):
        total = total + op.count * roofline_time(op.flops(tokens), op.bytes(tokens), peak, bw)
    return total


def memory_bytes(setting: Setting, tokens: int) -> float:
    """Device memory a prefill of ``tokens`` tokens (the setting's batch) holds at its peak: the
    weights, the KV cache it builds, and with naive attention one layer's score matrix
    (the derived forms ``weights``, ``kv_cache``, ``scores``)."""
    vals = {**setting.numbers(), "T": tokens}
    used = arith.value(setting.forms["weights"], vals) + arith.value(setting.forms["kv_cache"], vals)
    if setting.attention == "naive":
        used += arith.value(setting.forms["scores"], vals)
    return used


def check_memory(setting: Setting, tokens: int, what: str) -> str | None:
    """A warning's text where ``what`` (a prefill of, or a decode step at, ``tokens``) does not
    fit in the device's memory; None where it fits, or where the weights alone do not (the
    setting's own warning says so)."""
    used, capacity = memory_bytes(setting, tokens), setting.hardware.memory_capacity
    weights = arith.value(setting.forms["weights"], setting.numbers())
    if used <= capacity or weights > capacity:  # fits, or the weights alone do not (said apart)
        return None
    scores = " and one layer's scores" if setting.attention == "naive" else ""
    return (f"{what} of batch {setting.batch} at {tokens:,} tokens needs {used / 1e9:,.4g} GB "
            f"(weights, KV cache{scores}), more than {setting.hardware.name}'s "
            f"{capacity / 1e9:.4g} GB: the time assumes it fits")


def decode(setting: Setting, context: int) -> DecodeResult:
    """One decode step of ``setting.batch`` sequences at ``context`` cached tokens."""
    check_count(context, "context")
    peak, bw = setting.peak, setting.bandwidth
    results = _results(_compiled(setting, "decode", False), peak, bw, context, context)
    kv = arith.value(setting.forms["kv_cache"], {**setting.numbers(), "T": context})
    return DecodeResult(context, setting.batch, *_totals(results, peak, bw), kv)
