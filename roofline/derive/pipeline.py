"""Pipeline parallelism over N_pp stages: the layers split into consecutive stages, one device
each, the activations sent from stage to stage.

- Each of the N_pp − 1 stage boundaries passes the B·T·D·b_a bytes of the hidden states on, one
  point-to-point send: α + B·T·D·b_a/β (:func:`roofline.derive.comm.p2p_time`). (GPipe, Huang et
  al. 2019, arXiv 1811.06965, §2: "communication ... only at partition boundaries"; Megatron-LM
  2, Narayanan et al. 2021, arXiv 2104.04473, §2.2.)
- One prompt through the pipeline: each stage waits for the one before, so the stage times add
  up to the single device's and the sends come on top: pipeline parallelism does not shorten a
  single prefill, it only lets a model that one device cannot hold run at all
  (DistServe, arXiv 2401.09670, §3.1: inter-op parallelism keeps a request's execution time,
  D_s ≈ D, and raises the rate the instance can take).
- A prompt in c chunks (chunked prefill) fills the pipeline: with each stage taking t/N_pp per
  chunk for a prefill of time t split into c equal chunks of t/c each, the last chunk leaves the
  last stage after (c + N_pp − 1)·t/(c·N_pp); the stages are idle for the bubble fraction
  (N_pp − 1)/(c + N_pp − 1) of that span (GPipe §2.2: bubble overhead O((K−1)/(M+K−1)) for K
  stages and M micro-batches). Chunk attention's extra traffic (each chunk re-reads the cache of
  the chunks before it) is :mod:`roofline.derive.service`'s, and left out here.
- Two schedules of one prompt through the stages (``Architecture.pipeline``):
  ``whole`` runs the prompt whole through each stage in turn (DistServe's inter-op instance):
  the stages' times and the sends add up. ``chunked`` pipelines the prompt's chunks across the
  stages, as engines do for long prompts (token-level pipelining of one sequence: TeraPipe, Li
  et al. 2021, arXiv 2102.07988; SGLang's chunked pipeline parallelism, LMSYS blog
  "Pipeline Parallelism in SGLang", 2026-01-15): a stage works on one chunk while the next
  stage works on the chunk before, so the prompt takes at least its busiest stage's time, which is at
  least a stage's mean share t/N_pp of the work: the limit of :func:`chunked_time` as c → ∞,
  the bound for every number of chunks (:func:`stage_share`). Each send moves a chunk's
  hidden states while both stages work on other chunks, so the bound leaves the sends out;
  each boundary's whole T·D·b_a bytes take far less than a stage (``pp.boundary_bytes``).
  ``chunked`` is the default: a bound that the chunked pipelines of published engines do
  not beat, where ``whole`` is beaten by them (SGLang's DeepSeek-V3.1 at 128K tokens over 4
  stages of 8 GPUs runs in about 0.7 of the stages' sum).
- Serving through the pipeline (DistServe §3.1, inter-op): a new prompt enters the first stage
  as soon as the one before has left it, so the queue's service time is the slowest stage's,
  s = max_k t_k (its layers, the edge it holds, the send it makes), and a prompt's execution,
  the time it spends once it is served, the stages' sum e = Σ_k t_k. The M/G/1 queue
  (Pollaczek–Khinchine) then gives the mean TTFT e + R·E[s²]/(2(1 − R·E[s]))
  (:func:`interop_ttft`); two equal stages of t/2 without sends give DistServe's Eq. 2,
  t + R·t²/(4(2 − R·t)) (tested). The layers are split as vLLM splits them
  (``vllm/distributed/utils.py``, ``get_pp_indices``: L // N_pp each, the remainder r one each to
  the r stages just before the last, which holds the final norm and the LM head;
  :func:`stage_layer_counts`); the embedding is the first stage's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sympy import Expr, Max, ceiling, floor

from ..symbols import B, D, L, N_pp, R, T, b_a, c_chunk, t_mean, t_pre, t_sq
from . import comm
from .entry import Entry
from .layers import Operation

__all__ = ["SOURCE", "stage_layers", "stage_layer_counts", "busiest_stage_bytes",
           "boundary_bytes", "send_time", "single_prompt_time", "bubble_fraction",
           "chunked_time", "chunked_speedup",
           "chunked_bound", "stage_share", "interop_ttft", "entries"]

SOURCE = ("GPipe (Huang et al. 2019, arXiv 1811.06965) §2 (partition boundaries, bubble "
          "(K−1)/(M+K−1)); TeraPipe (Li et al. 2021, arXiv 2102.07988: one sequence's tokens "
          "pipelined); Megatron-LM 2 (Narayanan et al. 2021, arXiv 2104.04473) §2.2; "
          "DistServe (arXiv 2401.09670) §3.1 (inter-op parallelism keeps a request's time)")


def stage_layers() -> Expr:
    """Layers per stage: L/N_pp (the layers split evenly)."""
    return L / N_pp


def stage_layer_counts(layers: int, stages: int) -> list[int]:
    """The layers of each stage, first to last, as vLLM splits them (``get_pp_indices``):
    layers // stages each, the remainder r one each to the r stages just before the last.

    >>> stage_layer_counts(80, 2), stage_layer_counts(61, 4), stage_layer_counts(5, 2)
    ([40, 40], [15, 15, 16, 15], [3, 2])
    """
    counts = [layers // stages] * stages
    for i in range(2, layers % stages + 2):
        counts[-i] += 1
    return counts


def busiest_stage_bytes(layered: Expr, first: Expr, last: Expr) -> Expr:
    """The bytes the fullest of N_pp ≥ 2 stages holds, split as :func:`stage_layer_counts`
    splits L layers (vLLM's ``get_pp_indices``), where the L layers together hold ``layered``
    bytes (each stage its layers' share: every layer the mean layer, as :func:`stage_layers`
    shares their time), the first stage also ``first`` (the embedding) and the last ``last``
    (the final norm and the LM head). With L = q·N_pp + r (0 ≤ r < N_pp) the first stage has
    q + 1 layers only where r = N_pp − 1, that is ⌊(L + 1)/N_pp⌋; the last q = ⌊L/N_pp⌋; the
    fullest of the others ⌈L/N_pp⌉ (an inner stage where r ≥ 1 and N_pp ≥ 3; where there is
    none the term is dominated by the first's). The largest of the three:

    >>> from sympy import Integer, Symbol
    >>> x, e, h = Symbol("x"), Symbol("e"), Symbol("h")
    >>> [busiest_stage_bytes(x, e, h).subs({L: 61, N_pp: 4, x: 61, e: 0, h: 0}),
    ...  stage_layer_counts(61, 4)]
    [16, [15, 15, 16, 15]]
    """
    def share(layers: Expr) -> Expr:
        return layers * layered / L

    return Max(share(ceiling(L / N_pp)), share(floor((L + 1) / N_pp)) + first,
               share(floor(L / N_pp)) + last, evaluate=False)


def boundary_bytes() -> Expr:
    """Bytes each stage boundary passes on: the hidden states of B·T tokens, B·T·D·b_a."""
    return B * T * D * b_a


def send_time() -> Expr:
    """One stage boundary's send: α + B·T·D·b_a/β."""
    return comm.p2p_time(boundary_bytes())


def single_prompt_time(single: Expr = t_pre) -> Expr:
    """One prompt through N_pp stages: the single device's time ``single`` (the stage times add
    up to it) plus the N_pp − 1 sends.

    >>> single_prompt_time().subs(N_pp, 1)
    t_pre
    """
    return single + (N_pp - 1) * send_time()


def bubble_fraction(chunks: Expr = c_chunk, stages: Expr = N_pp) -> Expr:
    """The share of the pipeline's span in which a stage is idle: (N−1)/(c+N−1).

    >>> from sympy import Integer
    >>> bubble_fraction(Integer(4), Integer(4))
    3/7
    """
    return (stages - 1) / (chunks + stages - 1)


def chunked_time(single: Expr = t_pre, chunks: Expr = c_chunk) -> Expr:
    """A prompt in c equal chunks through N_pp stages, sends neglected: (c + N − 1)·t/(c·N),
    each chunk taking t/(c·N) on each stage."""
    return (chunks + N_pp - 1) * single / (chunks * N_pp)


def chunked_speedup(chunks: Expr = c_chunk) -> Expr:
    """The single device's time over the chunked pipeline's: c·N/(c + N − 1), which tends to
    N as c → ∞ and is 1 for one chunk.

    >>> from sympy import Integer
    >>> chunked_speedup(Integer(1))
    1
    """
    return chunks * N_pp / (chunks + N_pp - 1)


def chunked_bound(single: Expr = t_pre) -> Expr:
    """A prompt whose chunks fill the pipeline takes at least a stage's mean share of the
    single device's time: t/N_pp, the limit of :func:`chunked_time` as c → ∞ (sends left out).

    >>> from sympy import limit, oo
    >>> limit(chunked_time(), c_chunk, oo) == chunked_bound()
    True
    """
    return single / N_pp


def stage_share(ops: Sequence[Operation]) -> list[Operation]:
    """One device's share of a prefill under the chunked schedule (:func:`chunked_bound`): a
    stage's mean share 1/N_pp of every operation of ``ops`` (the whole prompt's, each count
    divided by N_pp), the sends between stages left out as the other chunks' work hides them.
    The busiest stage takes at least this mean, so its time is a bound for any split of the
    layers and any number of chunks."""
    return [replace(op, count=op.count / N_pp) for op in ops if not op.name.startswith("pp.")]


def interop_ttft(execution: Expr = t_pre, stage_mean: Expr = t_mean,
                 stage_second: Expr = t_sq, rate: Expr = R) -> Expr:
    """Mean TTFT of prompts served through the pipeline: the execution (the stages' sum) plus
    the M/G/1 wait of a queue whose service is the slowest stage:
    e + R·E[s²]/(2(1 − R·E[s])).

    >>> from sympy import simplify, symbols
    >>> from roofline.derive.service import inter_op
    >>> simplify(interop_ttft(t_pre, t_pre / 2, t_pre**2 / 4) - sum(inter_op()))
    0
    """
    from .service import mg1_queueing

    return execution + mg1_queueing(rate, stage_mean, stage_second)


def entries() -> list[Entry]:
    note = ("N_pp stages of L/N_pp layers each", "point-to-point sends of B·T·D·b_a bytes")
    return [
        Entry("pp.boundary_bytes", boundary_bytes(), "bytes each stage boundary sends", "bytes",
              SOURCE, note[1:]),
        Entry("pp.single_prompt_time", single_prompt_time(),
              "prefill time of one prompt through the pipeline", "s",
              f"{SOURCE}; {comm.SOURCE}", (*note, "t_pre: the single device's prefill time")),
        Entry("pp.bubble_fraction", bubble_fraction(),
              "share of the span a stage is idle, a prompt in c_chunk chunks", "1", SOURCE,
              ("equal chunks", "sends neglected")),
        Entry("pp.chunked_time", chunked_time(),
              "prefill time of a prompt in c_chunk chunks through the pipeline", "s", SOURCE,
              ("equal chunks", "sends neglected", "chunks' extra attention traffic neglected")),
        Entry("pp.interop_ttft", interop_ttft(),
              "mean TTFT through the pipeline: the stages' sum t_pre, then the wait of a queue "
              "served at the slowest stage's time (moments t_mean, t_sq)", "s",
              f"{SOURCE}; DistServe (arXiv 2401.09670) §3.1 Eq. 1–2, Pollaczek–Khinchine",
              ("Poisson arrivals at rate R, FCFS", "service: the slowest stage",
               "R·t_mean < 1")),
        Entry("pp.chunked_bound", chunked_bound(),
              "prefill time of a prompt whose chunks fill the pipeline, at least (the "
              "default bound under pipeline parallelism)", "s",
              f"{SOURCE}; LMSYS blog \"Pipeline Parallelism in SGLang\" (January 2026: "
              "chunked pipeline parallelism, the schedule it bounds)",
              ("chunks without number (the limit c_chunk → ∞ of pp.chunked_time)",
               "sends hidden under the other chunks' work",
               "t_pre: the single device's prefill time")),
        Entry("pp.chunked_speedup", chunked_speedup(),
              "the single device's time over the chunked pipeline's", "1", SOURCE,
              ("equal chunks", "sends neglected")),
    ]

