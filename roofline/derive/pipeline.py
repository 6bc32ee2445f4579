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
"""

from __future__ import annotations

from sympy import Expr

from ..symbols import B, D, L, N_pp, T, b_a, c_chunk, t_pre
from . import comm
from .entry import Entry

__all__ = ["SOURCE", "stage_layers", "boundary_bytes", "send_time", "single_prompt_time",
           "bubble_fraction", "chunked_time", "chunked_speedup", "entries"]

SOURCE = ("GPipe (Huang et al. 2019, arXiv 1811.06965) §2 (partition boundaries, bubble "
          "(K−1)/(M+K−1)); Megatron-LM 2 (Narayanan et al. 2021, arXiv 2104.04473) §2.2; "
          "DistServe (arXiv 2401.09670) §3.1 (inter-op parallelism keeps a request's time)")


def stage_layers() -> Expr:
    """Layers per stage: L/N_pp (the layers split evenly)."""
    return L / N_pp


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

    >>> chunked_speedup(Integer(1))
    1
    """
    return chunks * N_pp / (chunks + N_pp - 1)


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
        Entry("pp.chunked_speedup", chunked_speedup(),
              "the single device's time over the chunked pipeline's", "1", SOURCE,
              ("equal chunks", "sends neglected")),
    ]

