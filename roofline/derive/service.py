"""Time to first token: queueing plus prefill execution, in closed form.

One prefill instance serves prompts in arrival order (FCFS); arrivals are Poisson at rate R.
With one execution time t_pre for every prompt this is an M/D/1 queue, DistServe's model
(Zhong et al. 2024, arXiv 2401.09670, §3.1, Eq. 1–3); with prompts of varied length it is an
M/G/1 queue, whose mean wait is the Pollaczek–Khinchine formula. TTFT is execution + queueing,
and the two are kept apart. Every derived form (highest rate for a target, crossover rates and
loads, chunk sizes) is solved by SymPy from its defining equality, not typed in.

Batching and chunked prefill are expressed through roofline operation times
(:mod:`roofline.derive.batching`); their catalogue entries are here, beside the queueing.
"""

from __future__ import annotations

from sympy import (Eq, Expr, Integer, Rational, Sum, Symbol, exp, factorial, floor, simplify,
                   solve)

from ..symbols import (K_intra, R, T, T_chunk, i_chunk, n_rep, t_mean, t_pre, t_slo, t_sq,
                       tau_ttft)
from .batching import (ROOFLINE, SARATHI, batch_stops_helping, batch_ttft_first,
                       batch_ttft_last, chunk_bytes_extra, chunk_operations, chunk_time,
                       min_compute_bound_chunk)
from .entry import Entry
from .transformer import Architecture

__all__ = [
    "md1_queueing", "md1", "md1_attainment", "inter_op", "intra_op", "replicas", "mg1_queueing", "mg1",
    "max_rate", "max_rate_for_slo", "load_queueing_equals_execution", "inter_beats_intra_rate",
    "entries",
]

DISTSERVE = "DistServe (Zhong et al. 2024, arXiv 2401.09670) §3.1"
ERLANG = ("Erlang's M/D/1 waiting-time distribution (A. K. Erlang 1909; Kleinrock, Queueing "
          "Systems Vol. I, 1975, §5)")
PK = ("Pollaczek–Khinchine mean-value formula of the M/G/1 queue (Kleinrock, Queueing Systems "
      "Vol. I, 1975, ch. 5)")
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


def md1_attainment(rate: Expr = R, service: Expr = t_pre, objective: Expr = tau_ttft) -> Expr:
    """P(t + W ≤ τ): the fraction of requests whose TTFT meets ``objective`` in an M/D/1 queue,
    W its wait, from Erlang's waiting-time distribution with x = τ − t:
    P(W ≤ x) = (1 − R·t)·Σ_{k=0}^{⌊x/t⌋} (R(k·t − x))^k/k!·e^{−R(k·t − x)}; needs R·t < 1 and
    τ ≥ t. Source: A. K. Erlang (1909), as in Kleinrock, Queueing Systems Vol. I (1975), §5.

    >>> float(md1_attainment().subs({R: 5, t_pre: Rational(1, 10), tau_ttft: Rational(1, 10)}))
    0.5
    """
    k = Symbol("k", integer=True, nonnegative=True)
    x = objective - service
    term = (rate * (k * service - x))**k / factorial(k) * exp(-rate * (k * service - x))
    return (1 - rate * service) * Sum(term, (k, 0, floor(x / service)))


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
        Entry("service.ttft.md1_attainment", md1_attainment(),
              "fraction of requests whose TTFT meets tau_ttft (M/D/1)", "1",
              f"{ERLANG}; the queue of {DISTSERVE}", (*_QUEUE, "R·t_pre < 1",
                                                      "tau_ttft ≥ t_pre")),
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
