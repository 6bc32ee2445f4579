"""Time to first token: queueing plus prefill execution, in closed form.

One prefill instance serves prompts in arrival order (FCFS); arrivals are Poisson at rate R.
With one execution time t_pre for every prompt this is an M/D/1 queue, DistServe's model
(Zhong et al. 2024, arXiv 2401.09670, §3.1, Eq. 1–3); with prompts of varied length it is an
M/G/1 queue, whose mean wait is the Pollaczek–Khinchine formula. TTFT is execution + queueing,
and the two are kept apart. Every derived form (highest rate for a target, crossover rates and
loads, chunk sizes) is solved by SymPy from its defining equality, not typed in.

Batching and chunked prefill are expressed through roofline operation times: an operation of
F FLOPs and Q HBM bytes takes max(F/P_peak, Q/beta_hbm) (scaling-book, "All About Rooflines").
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import (Eq, Expr, Integer, Min, Rational, Sum, Symbol, ceiling, floor, simplify, solve,
                   summation)

from ..symbols import (B, H, K_intra, R, T, T_chunk, b_a, b_kv, i_chunk, n_e, n_kv, n_q, n_rep,
                       t_mean, t_pre, t_slo, t_sq)
from . import attention, levels
from .bounds import ridge, total_time
from .entry import Entry
from .transformer import Architecture, Operation, layer_operations, prefill_operations

__all__ = [
    "md1_queueing", "md1", "inter_op", "intra_op", "replicas", "mg1_queueing", "mg1",
    "max_rate", "max_rate_for_slo", "load_queueing_equals_execution", "inter_beats_intra_rate",
    "batch_ttft_first", "batch_ttft_last", "batch_wait", "projection_ops",
    "projection_crossover_rows", "batch_stops_helping", "chunk_attention", "chunk_operations",
    "chunk_time",
    "chunk_bytes_extra", "min_compute_bound_chunk", "entries",
]

DISTSERVE = "DistServe (Zhong et al. 2024, arXiv 2401.09670) §3.1"
PK = ("Pollaczek–Khinchine mean-value formula of the M/G/1 queue (Kleinrock, Queueing Systems "
      "Vol. I, 1975, ch. 5)")
ROOFLINE = "scaling-book 'All About Rooflines': time = max(FLOPs/P_peak, bytes/beta_hbm)"
SARATHI = "chunked prefill as in SARATHI (Agrawal et al. 2023, arXiv 2308.16369)"
_QUEUE = ("Poisson arrivals at rate R", "one server, first come first served",
          "steady state: load below 1")


# --- the queue ---------------------------------------------------------------------------------
def md1_queueing(rate: Expr = R, service: Expr = t_pre) -> Expr:
    """Mean wait in an M/D/1 queue: R·t² / (2(1 − R·t)); needs R·t < 1.

    Source: DistServe §3.1, Eq. 1 (its second term).

    >>> md1_queueing().subs({R: 5, t_pre: Rational(1, 10)})
    1/20
    """
    return rate * service**2 / (2 * (1 - rate * service))


def md1(rate: Expr = R, service: Expr = t_pre) -> Expr:
    """Mean TTFT of one prefill instance, M/D/1: t + R·t² / (2(1 − R·t)).

    Source: DistServe §3.1, Eq. 1 (Avg_TTFT = D + R·D²/(2(1 − R·D))).

    >>> md1().subs({R: 5, t_pre: Rational(1, 10)})
    3/20
    """
    return service + md1_queueing(rate, service)


def inter_op(rate: Expr = R, service: Expr = t_pre) -> tuple[Expr, Expr]:
    """Two-way inter-op (pipeline) parallelism: (execution, queueing) = (D, M/D/1 wait at D/2).

    The pipeline still takes D per prompt (D_s ≈ D) but admits one every D_m ≈ D/2, the slowest
    stage; the sum is D + R·D²/(4(2 − R·D)). Source: DistServe §3.1, Eq. 2.
    """
    return service, md1_queueing(rate, service / 2)


def intra_op(rate: Expr = R, service: Expr = t_pre, speedup: Expr = K_intra) -> tuple[Expr, Expr]:
    """Two-way intra-op parallelism with speedup K (1 < K ≤ 2): an M/D/1 queue of service D/K.

    The sum is D/K + R·D²/(2K(K − R·D)). Source: DistServe §3.1, Eq. 3.
    """
    return service / speedup, md1_queueing(rate, service / speedup)


def replicas(rate: Expr = R, service: Expr = t_pre, count: Expr = n_rep) -> Expr:
    """N equal replicas share the arrivals evenly (random split): Eq. 1 with R → R/N.

    Source: DistServe §3.1 ("replication": each instance sees R/N).
    """
    return md1(rate / count, service)


def mg1_queueing(rate: Expr = R, mean: Expr = t_mean, second: Expr = t_sq) -> Expr:
    """Mean wait in an M/G/1 queue: R·E[t²] / (2(1 − R·E[t])) (Pollaczek–Khinchine).

    >>> mg1_queueing().subs({R: 2, t_mean: Rational(1, 5), t_sq: Rational(1, 20)})
    1/12
    """
    return rate * second / (2 * (1 - rate * mean))


def mg1(rate: Expr = R, mean: Expr = t_mean, second: Expr = t_sq) -> Expr:
    """Mean TTFT for prompts of varied length: E[t] + R·E[t²]/(2(1 − R·E[t])).

    With one length (E[t²] = E[t]²) it is DistServe's Eq. 1. Source: Pollaczek–Khinchine.
    """
    return mean + mg1_queueing(rate, mean, second)


# --- solved forms --------------------------------------------------------------------------------
def max_rate(execution: Expr, mean: Expr, second: Expr, slo: Expr = t_slo) -> Expr:
    """The arrival rate at which execution + R·E[s²]/(2(1 − R·E[s])) equals the target ``slo``.

    ``mean`` and ``second`` are the moments of the queue's service time s (D/2 per stage for
    inter-op, D/K for intra-op). Solved by SymPy; the one root is a valid rate (0 < R < 1/E[s])
    when slo > execution, and the mean TTFT stays below the target for every lower rate.
    """
    rate = Symbol("R_solve", positive=True)
    roots = solve(Eq(execution + mg1_queueing(rate, mean, second), slo), rate, dict=True)
    if len(roots) != 1:
        raise ValueError(f"expected one root for the highest rate, got {roots}")
    return simplify(roots[0][rate])


def max_rate_for_slo() -> Expr:
    """The highest rate meeting a mean-TTFT target t_slo, Eq. 1 solved for R:
    2(t_slo − t_pre) / (t_pre·(2·t_slo − t_pre)), valid when t_slo > t_pre. Source: Eq. 1.

    >>> max_rate_for_slo().subs({t_pre: Rational(1, 10), t_slo: Rational(1, 5)})
    20/3
    """
    return simplify(max_rate(t_pre, t_pre, t_pre**2))


def load_queueing_equals_execution() -> tuple[Expr, Expr]:
    """(rate, load) at which Eq. 1's queueing equals its execution: R = 2/(3·t_pre), load 2/3."""
    (rate,) = solve(Eq(md1_queueing(R, t_pre), t_pre), R)
    return rate, simplify(rate * t_pre)


def inter_beats_intra_rate() -> Expr:
    """The arrival rate above which two-way inter-op (Eq. 2) gives a lower mean TTFT than two-way
    intra-op with speedup K (Eq. 3): the root of Eq. 2 = Eq. 3 in (0, K/t_pre), for 1 < K < 2.

    Below it intra-op wins (its execution D/K is shorter); above it inter-op wins (its queue
    serves at D/2 < D/K). Source: DistServe §3.1, Fig. 4.
    """
    inter, intra = sum(inter_op(), Integer(0)), sum(intra_op(), Integer(0))
    roots = solve(Eq(inter, intra), R)
    probe = {K_intra: Rational(3, 2), t_pre: Integer(1)}
    valid = [r for r in roots if 0 < r.subs(probe) < Rational(3, 2)]
    if len(valid) != 1:
        raise ValueError(f"expected one root in (0, K/t_pre), got {roots}")
    return valid[0]


# --- roofline times of batching and chunking -------------------------------------------------
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


def projection_crossover_rows(arch: Architecture = Architecture(), rows: Symbol = T) -> Expr:
    """Rows at which the aggregated projections of a layer reach the ridge:
    Σ FLOPs / Σ bytes = P_peak/beta_hbm, solved for ``rows``.

    Exists when 2·W > I_ridge·b_a·A (W weight elements, A = Σ (d_in + d_out)): otherwise the
    projections never become compute-bound. For wide layers ≈ I_ridge·b_w/2.
    """
    ops = projection_ops(arch, rows)
    fl = sum((op.flops for op in ops), Integer(0))
    by = _every_expert(sum((op.bytes for op in ops), Integer(0)))
    roots = solve(Eq(fl, ridge() * by), rows)
    if len(roots) != 1:
        raise ValueError(f"expected one projection crossover, got {roots}")
    return simplify(roots[0])


def batch_stops_helping(arch: Architecture = Architecture()) -> Expr:
    """Batch size B at which batching B prompts of T tokens stops helping: the projections of
    the B·T rows reach the ridge, so more prompts add time in proportion (no weight reuse left)
    while the first prompt's wait (B − 1)/R keeps growing. B* = crossover rows / T.
    """
    ops = projection_ops(arch, B * T)
    fl = sum((op.flops for op in ops), Integer(0))
    by = _every_expert(sum((op.bytes for op in ops), Integer(0)))
    roots = solve(Eq(fl, ridge() * by), B)
    if len(roots) != 1:
        raise ValueError(f"expected one batch crossover, got {roots}")
    return simplify(roots[0])


def chunk_attention(mode: str = "ideal", index: Expr = i_chunk, size: Expr = T_chunk,
                    caches: Sequence[str] = ()) -> Operation:
    """Attention of one chunk in ``mode``: q = ``size`` queries at offset o = index·size (the last
    q positions) over k = o + q keys, causal, one sequence, per layer. The chunk's own K, V come
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
    q, o = size, index * size
    k = (index + 1) * size  # = o + q
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


# --- the catalogue -------------------------------------------------------------------------------
def entries() -> list[Entry]:
    exec_inter, queue_inter = inter_op()
    exec_intra, queue_intra = intra_op()
    rate_eq, load_eq = load_queueing_equals_execution()
    arch = Architecture()
    llama = "Llama-style dense layer: gated SiLU MLP, RMSNorm, rotary positions, no biases"
    chunk_ops = chunk_operations(arch)
    chunk_flops = sum((op.count * op.flops for op in chunk_ops), Integer(0))
    chunk_bytes = sum((op.count * op.bytes for op in chunk_ops), Integer(0))
    solve_note = "solved by SymPy from the defining equality"
    return [
        Entry("service.ttft.md1", md1(), "mean TTFT of one prefill instance (M/D/1)", "s",
              f"{DISTSERVE}, Eq. 1", (*_QUEUE, "one execution time t_pre for every prompt",
                                        "R·t_pre < 1")),
        Entry("service.queueing.md1", md1_queueing(), "mean queueing delay before prefill "
              "(M/D/1)", "s", f"{DISTSERVE}, Eq. 1", (*_QUEUE, "R·t_pre < 1")),
        Entry("service.ttft.inter_op", exec_inter + queue_inter,
              "mean TTFT with two-way inter-op (pipeline) parallelism", "s",
              f"{DISTSERVE}, Eq. 2", (*_QUEUE, "two equal stages of t_pre/2", "R·t_pre < 2"),
              steps=(("execution D_s ≈ t_pre", exec_inter),
                     ("queueing: M/D/1 at D_m = t_pre/2", queue_inter),
                     ("simplified", simplify(exec_inter + queue_inter)))),
        Entry("service.ttft.intra_op", exec_intra + queue_intra,
              "mean TTFT with two-way intra-op parallelism of speedup K_intra", "s",
              f"{DISTSERVE}, Eq. 3", (*_QUEUE, "1 < K_intra ≤ 2", "R·t_pre < K_intra"),
              steps=(("execution t_pre/K", exec_intra),
                     ("queueing: M/D/1 at t_pre/K", queue_intra))),
        Entry("service.ttft.replicas", replicas(), "mean TTFT with n_rep equal replicas", "s",
              f"{DISTSERVE}, Eq. 1 with R → R/N", (*_QUEUE, "arrivals split evenly at random",
                                                    "R·t_pre < n_rep")),
        Entry("service.ttft.mg1", mg1(), "mean TTFT for prompts of varied length (M/G/1)", "s",
              PK, (*_QUEUE, "t_mean = E[t], t_sq = E[t²] over the prompt-length distribution",
                   "R·t_mean < 1")),
        Entry("service.queueing.mg1", mg1_queueing(), "mean queueing delay (M/G/1)", "s", PK,
              (*_QUEUE, "R·t_mean < 1")),
        Entry("service.max_rate_for_slo", max_rate_for_slo(),
              "highest arrival rate whose mean TTFT (Eq. 1) meets t_slo", "1/s",
              f"{DISTSERVE}, Eq. 1 = t_slo solved for R", (*_QUEUE, "t_slo > t_pre", solve_note),
              steps=(("Eq. 1 = t_slo", Eq(md1(), t_slo)), ("root", max_rate_for_slo()))),
        Entry("service.max_rate_for_slo.mg1", max_rate(t_mean, t_mean, t_sq),
              "highest arrival rate whose M/G/1 mean TTFT meets t_slo", "1/s",
              f"{PK}, = t_slo solved for R", (*_QUEUE, "t_slo > t_mean", solve_note)),
        Entry("service.rate_queueing_equals_execution", rate_eq,
              "arrival rate at which queueing equals execution (Eq. 1)", "1/s",
              f"{DISTSERVE}, Eq. 1", (*_QUEUE, solve_note)),
        Entry("service.load_queueing_equals_execution", load_eq,
              "load R·t_pre at which queueing equals execution (Eq. 1)", "1",
              f"{DISTSERVE}, Eq. 1", (*_QUEUE, solve_note),
              steps=(("queueing = execution", Eq(md1_queueing(), t_pre)), ("R", rate_eq))),
        Entry("service.inter_beats_intra_rate", inter_beats_intra_rate(),
              "arrival rate above which two-way inter-op beats two-way intra-op", "1/s",
              f"{DISTSERVE}, Eq. 2 = Eq. 3 solved for R; Fig. 4",
              (*_QUEUE, "1 < K_intra < 2", "the root in (0, K_intra/t_pre)", solve_note)),
        Entry("service.batch.ttft_first", batch_ttft_first(arch),
              "TTFT of the first of B prompts batched into one prefill", "s",
              f"{ROOFLINE}; Poisson arrivals: B − 1 more arrive in (B − 1)/R on average",
              (llama, "B prompts of T tokens", "tiled attention")),
        Entry("service.batch.ttft_last", batch_ttft_last(arch),
              "TTFT of the last of B prompts batched into one prefill", "s", ROOFLINE,
              (llama, "B prompts of T tokens", "tiled attention")),
        Entry("service.batch.stops_helping", batch_stops_helping(arch),
              "batch size at which the projections of B·T rows reach the ridge", "1",
              f"{ROOFLINE}; projection intensity (scaling-book)",
              (llama, "per layer", "exists when the layer's projections can reach the ridge",
               solve_note)),
        Entry("service.chunk.flops", chunk_flops,
              "FLOPs of chunk i_chunk of chunked prefill (all layers)", "FLOP",
              f"{SARATHI}; attention FLOPs of FlashAttention-2 (arXiv 2307.08691) §4.1",
              (llama, "one sequence", "chunk i_chunk of T_chunk tokens at offset "
                       "i_chunk·T_chunk; i_chunk ≥ 0")),
        Entry("service.chunk.bytes", chunk_bytes,
              "HBM bytes of chunk i_chunk: its layers plus the KV cache of earlier chunks",
              "bytes", f"{SARATHI}: each chunk's attention reads the KV cache of the chunks "
              "before it (KV cache as scaling-book 'All About Transformer Inference')",
              (llama, "one sequence", "fused attention: Q, O and the chunk's K, V once")),
        Entry("service.chunk.time", chunk_time(arch), "roofline time of chunk i_chunk", "s",
              ROOFLINE, (llama, "one sequence", "no overlap across operations")),
        Entry("service.chunk.total_time",
              Sum(chunk_time(arch), (i_chunk, 0, T / T_chunk - 1)),
              "roofline time of a whole chunked prefill", "s", ROOFLINE,
              (llama, "one sequence", "T_chunk divides T")),
        Entry("service.chunk.extra_bytes", chunk_bytes_extra(arch),
              "HBM bytes chunked prefill moves beyond one-shot prefill", "bytes", ROOFLINE,
              (llama, "one sequence", "T_chunk divides T", "same byte model for both")),
        Entry("service.chunk.min_compute_bound", min_compute_bound_chunk(arch),
              "smallest chunk whose projections are compute-bound (the projection crossover)",
              "tokens", f"{ROOFLINE}; projection intensity (scaling-book)",
              (llama, "exists when the layer's projections can reach the ridge", solve_note)),
    ]
