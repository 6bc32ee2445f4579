"""Batching and chunked prefill in roofline times: B prompts batched into one prefill (the first
prompt's wait for the batch to fill, the batch at which batching stops helping) and a prompt
prefilled in chunks (each chunk's operations over the KV cache of the chunks before it, their
sum, the bytes chunking adds, the smallest compute-bound chunk).

An operation of F FLOPs and Q HBM bytes takes max(F/P_peak, Q/beta_hbm) (scaling-book, "All
About Rooflines"); chunked prefill as in SARATHI (Agrawal et al. 2023, arXiv 2308.16369). The
catalogue's entries are in :mod:`roofline.derive.service` (``service.batch.*``,
``service.chunk.*``), beside the queueing they feed.
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Eq, Expr, Integer, Min, Symbol, ceiling, floor, simplify, solve, summation

from ..symbols import B, H, R, T, T_chunk, b_a, b_kv, i_chunk, n_e, n_kv, n_q
from . import attention, levels
from .bounds import ridge, total_time
from .transformer import Architecture, Operation, layer_operations, prefill_operations

__all__ = ["batch_ttft_first", "batch_ttft_last", "batch_wait", "projection_ops",
           "projection_crossover_rows", "batch_stops_helping", "chunk_attention",
           "chunk_operations", "chunk_time", "chunk_bytes_extra", "min_compute_bound_chunk"]

ROOFLINE = "scaling-book 'All About Rooflines': time = max(FLOPs/P_peak, bytes/beta_hbm)"
SARATHI = "chunked prefill as in SARATHI (Agrawal et al. 2023, arXiv 2308.16369)"

def batch_ttft_first(arch: Architecture = Architecture(), mode: str = "tiled",
                     caches: Sequence[str] = ()) -> Expr:
    """TTFT of the first of B prompts batched into one prefill: it waits for the B − 1 later
    arrivals (mean (B − 1)/R at Poisson rate R), then the batch's execution t_batch(B) (its
    attention behind the cache levels ``caches``).

    Queueing for the server itself is not counted (the server is free when the batch is full).
    """
    return batch_wait() + batch_ttft_last(arch, mode, caches)


def batch_ttft_last(arch: Architecture = Architecture(), mode: str = "tiled",
                    caches: Sequence[str] = ()) -> Expr:
    """TTFT of the last prompt of the batch: only the batch's execution t_batch(B)."""
    return total_time(prefill_operations(arch, mode, caches=caches))


def batch_wait() -> Expr:
    """The first prompt's mean wait for the batch to fill: (B − 1)/R, the mean time of the B − 1
    later arrivals of a Poisson stream at rate R (``batch_ttft_first − batch_ttft_last``).

    >>> batch_wait().subs({B: 4, R: 10})
    3/10
    """
    return (B - 1) / R


def projection_ops(arch: Architecture, rows: Expr) -> list[Operation]:
    """One layer's projections (QKV, output, MLP) over ``rows`` token rows."""
    dummy = Operation("attention", "attention", Integer(0), Integer(0))
    return [op for op in layer_operations(arch, rows, dummy) if op.kind == "projection"]


def _every_expert(expr: Expr) -> Expr:
    """MoE: the experts read, min(n_e, rows·n_a), taken as n_e (every expert receives a token:
    rows·n_a ≥ n_e, the regime of any prompt near a crossover), so the equality is polynomial
    in the rows. A dense layer has no such term."""
    return expr.replace(lambda e: isinstance(e, Min) and n_e in e.args, lambda e: n_e)


def _projections_at_ridge(arch: Architecture, rows: Expr, unknown: Symbol, what: str) -> Expr:
    """``unknown`` at which a layer's projections over ``rows`` token rows reach the ridge:
    Σ FLOPs = I_ridge · Σ bytes, solved by SymPy (one root, or a ValueError)."""
    ops = projection_ops(arch, rows)
    fl = sum((op.flops for op in ops), Integer(0))
    by = _every_expert(sum((op.bytes for op in ops), Integer(0)))
    roots = solve(Eq(fl, ridge() * by), unknown)
    if len(roots) != 1:
        raise ValueError(f"expected one {what} crossover, got {roots}")
    return simplify(roots[0])


def projection_crossover_rows(arch: Architecture = Architecture(), rows: Symbol = T) -> Expr:
    """Rows at which the aggregated projections of a layer reach the ridge:
    Σ FLOPs / Σ bytes = P_peak/beta_hbm, solved for ``rows``.

    Exists when 2·W > I_ridge·b_a·A (W weight elements, A = Σ (d_in + d_out)): otherwise the
    projections never become compute-bound. For wide layers ≈ I_ridge·b_w/2.
    """
    return _projections_at_ridge(arch, rows, rows, "projection")


def batch_stops_helping(arch: Architecture = Architecture()) -> Expr:
    """Batch size B at which batching B prompts of T tokens stops helping: the projections of
    the B·T rows reach the ridge, so more prompts add time in proportion (no weight reuse left)
    while the first prompt's wait (B − 1)/R keeps growing. B* = crossover rows / T.
    """
    return _projections_at_ridge(arch, B * T, B, "batch")


def chunk_attention(mode: str = "ideal", index: Expr = i_chunk, size: Expr = T_chunk,
                    caches: Sequence[str] = (), offset: Expr | None = None) -> Operation:
    """Attention of one chunk in ``mode``: q = ``size`` queries at offset o = index·size (or
    ``offset`` where given; the last q positions) over k = o + q keys, causal, one sequence,
    per layer. The chunk's own K, V come
    from its projection (b_a bytes); the o earlier keys and values from the KV cache (b_kv).

    - ``ideal``: Q, O and the chunk's K, V once, plus the cache once per key/value head:
      H·b_a·(2·n_q·q + 2·n_kv·q) + 2·n_kv·H·o·b_kv.
    - ``naive`` (FlashAttention Algorithm 0 with a q×k score matrix): per query head read Q, K,
      V, write O, and write S, read S, write P, read P (4·q·k elements); every score computed:
      4·n_q·H·q·k FLOPs.
    - ``tiled`` (FlashAttention Algorithm 1 over the k keys in column blocks of B_c from
      position 0): K, V once, O, ℓ, m initialised for the q rows, then each row visits every
      column block that starts at or before it, reading Q_i, O_i, ℓ_i, m_i and writing O_i, ℓ_i,
      m_i: (3H + 4) elements a visit. With T_c = ⌈k/B_c⌉ and a = ⌊o/B_c⌋ + 1 blocks starting at
      or before o (visited by all q rows), the visits are a·q + Σ_{j=a}^{T_c−1} (k − j·B_c).
    - ``tiled_fa2`` (FlashAttention-2 order, row blocks of B_r aligned to the chunk): Q once, O and
      one logsumexp per row once; row block i reads the keys up to its last row, o + min((i+1)·B_r,
      q): T_r·o cached plus q + B_r·T_r(T_r − 1)/2 own key rows, T_r = ⌈q/B_r⌉, 2·H elements each;
      ``kernel`` the same at the kernels' B_r = 128.

    Behind cache levels (``caches``) a tiled chunk is split over them as a prefill layer is
    (:func:`roofline.derive.levels.behind`): its compulsory bytes are Q, O and the statistics of
    its q rows per query head and the K, V of its k keys once per key/value head (its own at
    b_a, the cache's at b_kv); the thread blocks in flight re-read those K and V.

    GQA as in :mod:`roofline.derive.attention`: naive and tiled read K, V once per query head.
    At o = 0, q = T each is that module's prefill attention of T tokens (B = 1).
    """
    q, o = size, index * size if offset is None else offset
    k = (index + 1) * size if offset is None else offset + size  # = o + q
    if mode == "naive":
        fl = 4 * n_q * H * q * k
    else:
        fl = attention.flops(size, k, causal=True).subs(B, 1)
    if mode == "ideal":
        by = attention.ideal_bytes(size, size).subs(B, 1) + 2 * n_kv * H * o * b_kv
    elif mode == "naive":
        by = n_q * (b_a * (4 * q * H + 4 * q * k) + b_kv * 2 * o * H)
    elif mode == "tiled":
        b_c, _ = attention.block_sizes()
        t_c = ceiling(k / b_c)
        a = floor(o / b_c) + 1
        visits = a * q + (t_c - a) * k - b_c * (t_c - a) * (a + t_c - 1) / 2
        by = n_q * (b_a * (2 * q * H + q * H + 2 * q + visits * (3 * H + 4)) + b_kv * 2 * o * H)
    elif mode in ("tiled_fa2", "kernel"):
        b_r = attention.row_block(mode)
        t_r = ceiling(q / b_r)
        own = q + b_r * t_r * (t_r - 1) / 2
        by = n_q * (b_a * (2 * q * H + q + 2 * H * own) + b_kv * 2 * H * t_r * o)
    else:
        raise ValueError(f"unknown attention mode {mode!r}; valid: {', '.join(attention.MODES)}")
    if mode not in levels.TILED or not caches:
        return Operation(f"attention.chunk.{mode}", "attention", fl, by)
    stats = 2 if mode == "tiled" else 1
    key_bytes = 2 * H * (q * b_a + o * b_kv)  # one key/value head's K and V: own and cached
    compulsory = n_q * b_a * (2 * q * H + stats * q) + n_kv * key_bytes
    hbm, served = levels.behind(mode, caches, by, compulsory, key_bytes, q)
    return Operation(f"attention.chunk.{mode}", "attention", fl, hbm.subs(B, 1),
                     levels=tuple((level, b.subs(B, 1)) for level, b in served.items()))


def chunk_operations(arch: Architecture = Architecture(), index: Expr = i_chunk,
                     size: Expr = T_chunk, mode: str = "ideal",
                     caches: Sequence[str] = ()) -> list[Operation]:
    """Chunk ``index`` of one prompt: ``size`` new tokens at offset index·size, per layer.

    Projections and element-wise operations run over the chunk's rows; attention is that of
    c queries over (i + 1)·c keys, causal (the chunk's queries are the last c positions), in
    ``mode`` (:func:`chunk_attention`); ``ideal`` (the default, and the catalogue's) reads Q
    and O of the chunk and its own K, V once plus the KV cache of the chunks before it,
    2·n_kv·H·i·c·b_kv bytes. One sequence (B = 1); embedding, final norm and LM head are left
    out (they cost the same chunked or not).
    """
    return layer_operations(arch, size, chunk_attention(mode, index, size, caches))


def chunk_time(arch: Architecture = Architecture(), mode: str = "ideal") -> Expr:
    """Roofline time of chunk i (lower bound: no overlap across operations)."""
    return total_time(chunk_operations(arch, mode=mode))


def chunk_bytes_extra(arch: Architecture = Architecture()) -> Expr:
    """HBM bytes of chunked prefill (T/T_chunk chunks; T_chunk divides T) minus those of the
    one-shot prefill in the same byte model (the chunk with c = T, i = 0): the weights read
    once per chunk and the KV cache of earlier chunks read again. Ideal attention: the sum
    over chunks is closed-form only there (the tiled modes' block counts have ceilings)."""
    per_chunk = sum((op.count * op.bytes for op in chunk_operations(arch)), Integer(0))
    one_shot = per_chunk.subs({i_chunk: 0, T_chunk: T})
    total = summation(per_chunk, (i_chunk, 0, T / T_chunk - 1))
    return simplify(total - one_shot)


def min_compute_bound_chunk(arch: Architecture = Architecture()) -> Expr:
    """The smallest chunk that keeps a layer's projections compute-bound: the chunk's rows are
    T_chunk, so it is the projection crossover with rows → T_chunk."""
    return projection_crossover_rows(arch, T_chunk)


