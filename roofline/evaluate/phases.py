"""Prefill and decode of a setting in numbers: each operation's FLOPs and bytes (the derived
forms, compiled once with the setting's numbers folded in) and its roofline time; the prefill
at many prompt lengths at once is :mod:`.points`.

The roofline time of an operation is :func:`roofline_time`, the one numeric form of
``roofline.derive.bounds.op_time``: max(F/P_peak, Q/beta_hbm), and where the operation's
traffic at further memory levels is derived (fused attention behind a cache), the time at each
of them: :func:`level_time`. Everything that times an operation, here and in the sweeps, TTFT
and validation, calls them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from ..codegen import call
from ..errors import InputError
from .compiled import CompiledOp, compile_ops
from .links import LEVELS as LINK_LEVELS, linked
from .setting import Setting

if TYPE_CHECKING:
    import numpy as np

__all__ = ["roofline_time", "level_time", "timed", "OpResult", "PrefillPoint", "DecodeResult",
           "operations", "prefill_time", "prefill_columns", "exposed_fraction", "decode",
           "step_totals", "step_results", "decode_operations", "check_prompts", "check_count"]


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


def level_time(t_roof: Any, levels: Sequence[tuple[str, float, Any]]) -> tuple[Any, str]:
    """The time at the slowest of further memory levels, against the HBM roofline time
    ``t_roof``: (max(t_roof, Q_level/β_level, ...), the level that binds, or "" where none of
    them does). ``levels`` are (name, bandwidth, bytes) with numbers (not arrays).

    >>> level_time(1.0, [("l2", 1e12, 2e12), ("sram", 1e13, 1e12)])
    (2.0, 'l2')
    """
    worst, name = t_roof, ""
    for level, bw, q in levels:
        t = q / bw
        if t > worst:
            worst, name = t, level
    return worst, name


def bound(flops: float, nbytes: float, peak: float, bandwidth: float) -> str:
    """"compute" where F/P ≥ Q/β (the operation sits at or right of the ridge), else "memory"."""
    return "compute" if flops / peak >= nbytes / bandwidth else "memory"


class OpResult(NamedTuple):
    """One operation at one prompt length: totals over its ``count`` (layers). A named tuple: a
    prefill over many prompt lengths makes one per operation and length read."""

    name: str
    kind: str
    count: int | float  # a stage's mean share L/N_pp under a chunked pipeline
    flops: float
    bytes: float
    intensity: float
    time_s: float
    bound: str  # "compute" | "memory"
    level: str = "hbm"  # what binds: "compute", "hbm", or a memory level ("l2", "l3", "sram")
    levels: tuple[tuple[str, float], ...] = ()  # bytes at each further level, where derived


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
    communication_s: float = 0.0  # its all-reduces under tensor parallelism


def operations(setting: Setting) -> list[CompiledOp]:
    """The setting's prefill operations as functions of T (numbers or numpy arrays)."""
    return _compiled(setting, "prefill")


def decode_operations(setting: Setting) -> list[CompiledOp]:
    """The setting's decode step as functions of (T_ctx, T), numbers or numpy arrays; under
    tensor parallelism one device's share with its all-reduces."""
    return _compiled(setting, "decode")


# kept for the settings asked for last (a check over thousands of settings keeps 64 of them)
@lru_cache(maxsize=64)
def _compiled(setting: Setting, phase: str) -> list[CompiledOp]:
    numbers, bandwidths = setting.numbers(), setting.level_bandwidths
    if phase == "prefill":
        setting.check_attention()
        if not setting.parallel:
            return compile_ops(setting.forms["prefill"][setting.attention], numbers, ("T",),
                               bandwidths)
        degree = {"tp": setting.tp, "ep": setting.ep, "cp": setting.cp}
        ops = [op for op in setting.forms["prefill_parallel"][setting.attention]  # one device's
               if degree.get(op["name"].partition(".")[0], 2) > 1]  # share; no collective on one
        return linked(setting, ops, ("T",), compile_ops)
    if phase == "decode" and setting.tp > 1:  # one device's share, with its all-reduces
        return linked(setting, setting.forms["decode_tp"], ("T_ctx", "T"), compile_ops)
    return compile_ops(setting.forms["decode"], numbers, ("T_ctx", "T"), bandwidths)


def check_count(value: Any, name: str, what: str = "") -> int:
    """A count of tokens or sequences: a positive integer of at most ``MAX_COUNT`` (10⁹, see
    :mod:`roofline.specs.numbers`), else an InputError naming ``name``."""
    from numbers import Real  # numpy's integers and floats too

    from ..specs.numbers import MAX_COUNT

    if isinstance(value, bool) or not isinstance(value, Real) or value != value \
            or value in (float("inf"), float("-inf")) or int(value) != value or value <= 0:
        raise InputError(name, f"{what}must be a positive integer", value)
    if value > MAX_COUNT:
        raise InputError(name, f"{what}must be at most {MAX_COUNT:,}", value)
    return int(value)


def check_prompts(prompts: Sequence[int], name: str = "prompt") -> list[int]:
    """Prompt lengths as positive integers of at most 10⁹; anything else is an InputError."""
    from ..specs.numbers import MAX_COUNT

    try:
        tokens = list(prompts)
    except TypeError:  # not a sequence: a number has its own check (api.prefill's, or here)
        tokens = None
    if tokens is None or isinstance(prompts, str | bytes):
        raise InputError(name, "needs prompt lengths: a sequence of positive integers", prompts)
    if not tokens:
        raise InputError(name, "needs at least one prompt length", tokens)
    if all(type(t) is int and 0 < t <= MAX_COUNT for t in tokens):  # the common case, at once
        return tokens
    return [check_count(t, name, "a prompt length ") for t in tokens]


def _result(op: CompiledOp, peak: float, bw: float, *at: Any) -> OpResult:
    """One operation at one point, timed at compute, HBM and each further level."""
    f, q = float(op.flops(*at)) * op.count, float(op.bytes(*at)) * op.count
    served = [(name, b, float(q_at(*at)) * op.count) for name, b, q_at in op.levels]
    return timed(op, f, q, served, peak, bw)


def timed(op: CompiledOp, f: float, q: float, served: list[tuple[str, float, float]],
          peak: float, bw: float) -> OpResult:
    """The operation of F FLOPs, Q HBM bytes and the bytes ``served`` by each further level
    (name, bandwidth, bytes), timed: max(F/P, Q/β, Q_level/β_level, ...) and what binds."""
    t_compute = f / peak
    t_levels, slowest = level_time(q / bw, served)
    if t_compute >= t_levels:
        time_s, level = t_compute, "compute"
    else:
        time_s, level = t_levels, slowest or "hbm"
    return OpResult(op.name, op.kind, op.count, f, q, f / q if q else _INF, time_s,
                    "compute" if level == "compute" else "memory", level,
                    tuple((name, b) for name, _, b in served))


def _results(ops: list[CompiledOp], peak: float, bw: float, *at: Any) -> list[OpResult]:
    return [_result(op, peak, bw, *at) for op in ops]


def _totals(ops: list[OpResult], peak: float, bw: float) -> tuple[float, float, float, float, str]:
    f = sum(o.flops for o in ops)
    q = sum(o.bytes for o in ops)
    return sum(o.time_s for o in ops), f, q, f / q, bound(f, q, peak, bw)


def step_totals(ops: list[CompiledOp], setting: Setting, *at: Any
                ) -> tuple[float, float, float, float, str]:
    """(time, FLOPs, bytes, intensity, bound) of the operations ``ops`` at the point ``at``,
    each at its own roof on the setting's device."""
    return _totals(step_results(ops, setting, *at), setting.peak, setting.bandwidth)


def step_results(ops: list[CompiledOp], setting: Setting, *at: Any) -> list[OpResult]:
    """Each operation of ``ops`` at the point ``at``, at its own roof on the setting's
    device."""
    return _results(ops, setting.peak, setting.bandwidth, *at)


def exposed_fraction(compute: Any, communication: Any) -> Any:
    """The share of the communication time left exposed when it overlaps the compute
    (``roofline.derive.tensor_parallel``, overlapped variant: time = max(compute,
    communication)): max(0, C − K)/C, 0 where there is no communication.

    >>> exposed_fraction(3.0, 4.0)
    0.25
    """
    import numpy as np

    c = np.asarray(communication, dtype=float)
    out = np.where(c > 0, np.maximum(0.0, c - compute) / np.where(c > 0, c, 1.0), 0.0)
    return float(out) if out.ndim == 0 else out


def prefill_time(setting: Setting, prompts: np.ndarray | Sequence[int]) -> np.ndarray:
    """Prefill time in seconds for an array of prompt lengths (vectorised with numpy)."""
    return prefill_columns(setting, prompts)["time_s"]


def prefill_columns(setting: Setting, prompts: np.ndarray | Sequence[int]) -> dict[str, Any]:
    """The prefill's totals at an array of prompt lengths, as numpy arrays over them (one pass
    per operation, no record per point): ``time_s``, ``flops``, ``bytes`` (HBM), ``intensity``
    and ``compute_bound`` (its FLOPs take at least as long as its traffic at the slowest
    memory level, the ``bound`` of :class:`.points.PrefillPoints`). The numbers of
    :func:`.points.prefill`, at the cost of a few array operations per operation."""
    import numpy as np

    tokens = np.asarray(prompts, dtype=float)
    peak, bw = setting.peak, setting.bandwidth
    total, comm, attn, ring, flops, nbytes = (np.zeros(tokens.shape) for _ in range(6))
    beyond: dict[str, Any] = {}  # per further level, what it serves beyond the HBM bytes
    for op in operations(setting):
        f, q = op.count * op.flops(tokens), op.count * op.bytes(tokens)
        t = roofline_time(f, q, peak, bw)
        for level, level_bw, served in op.levels:
            s = op.count * served(tokens)
            t = np.maximum(t, s / level_bw)
            if level not in LINK_LEVELS:  # a link's bytes are not memory traffic
                beyond[level] = beyond.get(level, 0.0) + (s - q)
        if op.name.startswith("cp.") and op.kind == "communication":
            ring = ring + t
        elif op.kind == "communication":
            comm = comm + t
        else:
            total = total + t
            if op.kind == "attention":
                attn = attn + t
        flops, nbytes = flops + f, nbytes + q
    comm = comm + np.maximum(0.0, ring - attn)  # ring attention hides its passes
    # hidden under the compute (--overlap): max(compute, communication); else their sum
    time = np.maximum(total, comm) if setting.overlap else total + comm
    levels = setting.level_bandwidths
    memory = np.maximum.reduce([nbytes / bw, *((nbytes + extra) / levels[level]
                                               for level, extra in beyond.items())])
    with np.errstate(divide="ignore"):
        intensity = flops / nbytes
    return {"prompt_tokens": tokens.astype(np.int64), "time_s": time, "flops": flops,
            "bytes": nbytes, "intensity": intensity, "compute_bound": flops / peak >= memory}


def decode(setting: Setting, context: int) -> DecodeResult:
    """One decode step of ``setting.batch`` sequences at ``context`` cached tokens; under tensor
    parallelism one device's share of it, with the step's all-reduces (not overlapped) and its
    share of the KV cache (the other splits are not applied to the decode step)."""
    check_count(context, "context")
    peak, bw = setting.peak, setting.bandwidth
    results = _results(_compiled(setting, "decode"), peak, bw, context, context)
    kv = float(call(setting.forms["kv_cache_tp" if setting.tp > 1 else "kv_cache"],
                    {**setting.numbers(), "T": context}))
    comm = sum(r.time_s for r in results if r.kind == "communication")
    return DecodeResult(context, setting.batch, *_totals(results, peak, bw), kv, comm)
