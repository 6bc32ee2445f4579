"""Batched and chunked prefill of one device, evaluated through :mod:`roofline.evaluate`: the
derivations of :mod:`roofline.derive.service` with a setting's numbers, each operation timed by
:func:`roofline.evaluate.roofline_time`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .checks import check_batch, check_chunk, check_prompt, check_rate

if TYPE_CHECKING:
    from sympy import Expr

    from ..derive.transformer import Architecture, Operation
    from ..evaluate import Setting

__all__ = ["Batching", "batching", "batch_wait_curve", "Chunking", "chunking"]


def _projection_crossover_rows(setting: Setting) -> float | None:
    """Token rows at which a layer's projections reach the ridge (one sequence): the core's
    ``projection_compute_bound_tokens`` at batch 1; None where they never do."""
    from ..evaluate import crossover_values

    value = crossover_values(replace(setting, batch=1))["projection_compute_bound_tokens"]
    return value.value if value.exists and value.value is not None else None


@dataclass(frozen=True)
class Batching:
    """``batch`` prompts of ``prompt`` tokens prefilled together (one instance, weights read once
    per batch). Times in seconds; the rate is the arrival rate this instance sees."""

    prompt: int  # tokens per prompt
    batch: int  # prompts per batch
    rate_per_s: float
    execution_s: float  # the batch's prefill
    wait_s: float  # (B − 1)/R: the first prompt waits for the B − 1 later arrivals
    first_s: float  # TTFT of the first prompt: wait + execution
    last_s: float  # TTFT of the last prompt: execution
    per_prompt_s: float  # execution / batch
    single_s: float  # one prompt prefilled alone (batch 1)
    crossover_rows: float | None  # rows at which the projections reach the ridge (None: never)
    stops_helping: float | None  # batch size at which batching stops helping (None: never)


def batching(setting: Setting, prompt: int, batch: int, rate: float) -> Batching:
    """Batch ``batch`` prompts of ``prompt`` tokens into one prefill, arrivals Poisson at ``rate``.

    The batch's execution is the roofline prefill of ``batch`` sequences (``prefill_time`` of the
    setting at that batch); the last prompt's TTFT is that execution, the first prompt's adds
    the mean wait (B − 1)/R for the later arrivals (``batch_wait``, evaluated). Queueing for a
    busy server is not counted.

    Batching *stops helping* at B* = (projection crossover rows)/T (``batch_stops_helping``;
    the crossover rows are the core's ``projection_compute_bound_tokens`` at one sequence, which
    also holds for mixture-of-experts layers): below it a layer's projections are memory-bound,
    reading the weights once for the whole batch, so a larger batch lowers the time per
    prompt; beyond it they are compute-bound, a larger batch adds time in proportion and no
    longer lowers the time per prompt, while the first prompt's wait keeps growing. B* < 1
    means the projections of one prompt are compute-bound already.
    """
    from ..derive.batching import batch_wait
    from ..evaluate import prefill_time, scalar
    from ..symbols import B, R

    check_prompt(prompt)
    check_batch(batch)
    check_rate(rate)
    single, execution = (float(prefill_time(replace(setting, batch=b), [prompt])[0])
                         for b in (1, batch))
    wait = scalar(batch_wait(), {B: batch, R: rate})
    rows = _projection_crossover_rows(setting)
    stops = None if rows is None else rows / prompt
    return Batching(prompt, batch, rate, execution, wait, wait + execution, execution,
                    execution / batch, single, rows, stops)


def batch_wait_curve(batch: int, rates: np.ndarray) -> np.ndarray:
    """The first prompt's mean wait (B − 1)/R for the batch to fill, at each rate (s)."""
    from ..derive.batching import batch_wait
    from ..evaluate import numeric
    from ..symbols import B, R

    check_batch(batch)
    with np.errstate(divide="ignore"):
        return numeric(batch_wait(), {B: batch}, R)(rates)


@dataclass(frozen=True)
class Chunking:
    """One prompt prefilled in chunks: per-chunk numbers (all layers) and the one-shot prefill in
    the same model and attention mode. Embedding, final norm and LM head are left out of both
    (they cost the same chunked or not)."""

    prompt: int  # tokens
    chunk: int  # tokens per chunk (the last one may be shorter)
    attention: str  # the attention mode of every chunk and of the one-shot prefill
    sizes: tuple[int, ...]  # tokens of each chunk
    times_s: tuple[float, ...]  # roofline time of each chunk
    flops: tuple[float, ...]
    bytes: tuple[float, ...]  # HBM bytes, the KV cache of earlier chunks included
    total_s: float  # Σ times_s
    one_shot_s: float  # the whole prompt as one chunk
    one_shot_flops: float
    one_shot_bytes: float
    extra_bytes: float  # Σ bytes − one-shot bytes
    min_chunk: float | None  # smallest compute-bound chunk, tokens (None: never compute-bound)
    # the largest chunk whose step fits in memory beside the weights and the prompt's KV cache
    # (roofline.derive.workspace.largest_chunk, its floor); None where not derived
    fits_chunk: float | None = None


@cache
def _chunk_ops(arch: Architecture, mode: str, caches: tuple[str, ...]) -> list[Operation]:
    from ..derive.batching import chunk_operations

    return chunk_operations(arch, mode=mode, caches=caches)


@cache
def _extra_bytes_form(arch: Architecture) -> Expr:
    from ..derive.batching import chunk_bytes_extra

    return chunk_bytes_extra(arch)


def chunking(setting: Setting, prompt: int, chunk: int) -> Chunking:
    """Prefill one prompt of ``prompt`` tokens in chunks of ``chunk`` tokens (batch 1).

    Chunk k covers tokens [o, o + size) with o = k·c: ``chunk_operations`` of
    :mod:`roofline.derive.service` in the setting's attention mode (its queries over the keys
    of all earlier chunks, reading their KV cache), each operation timed by the roofline. When
    c does not divide T the last chunk has the T mod c remaining tokens; it is evaluated with
    its real size s at offset o (``chunk_operations`` takes offset index·size, so index o/s).
    The one-shot prefill is the chunk with o = 0 and size T in the same mode: the layers of the
    ordinary prefill. The extra bytes are Σ bytes − one-shot bytes (``chunk_bytes_extra``
    evaluated, for ideal attention and c dividing T). The smallest compute-bound chunk is the
    projection crossover at one sequence (``min_compute_bound_chunk``; the core's
    ``projection_compute_bound_tokens`` at batch 1). A tiled chunk's attention is split over
    the device's cache levels as a prefill's is (``chunk_attention``), and timed at each.
    """
    from ..symbols import i_chunk
    from ..evaluate import numeric, roofline_time, scalar
    from ..symbols import T_chunk

    check_prompt(prompt)
    check_chunk(chunk, prompt)
    setting.check_attention()
    if setting.architecture.window != "none":
        raise InputError("model", "chunked prefill is not modelled for sliding-window attention "
                         "(each chunk's attention would be charged as global)",
                         setting.model.name)
    if setting.architecture.mla:
        raise InputError("model", "chunked prefill is not modelled for multi-head latent "
                         "attention (each chunk's attention over the cache would be charged "
                         "as ordinary attention)", setting.model.name)
    full, rest = divmod(prompt, chunk)
    sizes = np.array([chunk] * full + ([rest] if rest else []), dtype=float)
    offsets = np.concatenate(([0.0], np.cumsum(sizes)[:-1]))
    index = np.append(offsets / sizes, 0.0)  # the chunks, then the one-shot prefill
    rows = np.append(sizes, float(prompt))
    flops, nbytes, times = np.zeros(rows.shape), np.zeros(rows.shape), np.zeros(rows.shape)
    peak, bw = setting.peak, setting.bandwidth
    bandwidths = setting.level_bandwidths
    for op in _chunk_ops(setting.architecture, setting.attention, setting.caches):
        count = scalar(op.count, setting)
        f = count * numeric(op.flops, setting, i_chunk, T_chunk)(index, rows)
        q = count * numeric(op.bytes, setting, i_chunk, T_chunk)(index, rows)
        t = roofline_time(f, q, peak, bw)
        for level, served in op.levels:  # its time at each further level with a bandwidth
            if level in bandwidths:
                q_level = count * numeric(served, setting, i_chunk, T_chunk)(index, rows)
                t = np.maximum(t, q_level / bandwidths[level])
        flops, nbytes = flops + f, nbytes + q
        times = times + t
    if setting.attention == "ideal" and rest == 0:
        extra = scalar(_extra_bytes_form(setting.architecture), setting, T=prompt,
                       T_chunk=chunk)
    else:
        extra = float(nbytes[:-1].sum() - nbytes[-1])
    return Chunking(prompt, chunk, setting.attention, tuple(int(n) for n in sizes),
                    tuple(times[:-1].tolist()), tuple(flops[:-1].tolist()),
                    tuple(nbytes[:-1].tolist()), float(times[:-1].sum()), float(times[-1]),
                    float(flops[-1]), float(nbytes[-1]), extra,
                    _projection_crossover_rows(setting), _fits_chunk(setting, prompt))


def _fits_chunk(setting: Setting, prompt: int) -> float | None:
    """The largest chunk of a ``prompt``-token prefill whose step fits in the device's memory,
    the KV cache of the whole prompt resident (:func:`roofline.derive.workspace.largest_chunk`,
    its closed form evaluated; the chunk in tokens is its floor); None where the workspace is
    not derived or nothing fits (the weights and the cache alone exceed the memory)."""
    from ..derive import workspace
    from ..evaluate import scalar

    if not workspace.supported(setting.architecture):
        return None
    try:
        value = scalar(workspace.largest_chunk(setting.architecture, setting.attention),
                       setting, T=prompt)
    except (TypeError, ValueError):  # complex or not comparable: nothing fits
        return None
    return value if value > 0 else None
