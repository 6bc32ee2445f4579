"""Prefill beside decode: one engine step that holds a prefill chunk and decodes (a hybrid
batch), the largest chunk whose step meets a TPOT objective, and one request end to end.

**The hybrid step.** Sarathi-Serve (Agrawal et al. 2024, arXiv 2403.02310, §4.2–4.3) runs each
engine iteration over a chunk of C prompt tokens and B_d decodes, one new token each, at a
context of S cached tokens. The projections and element-wise operations run once over all
C + B_d rows, so the weights are read once for both; attention is each part's own: the chunk's
C queries over the T_pre tokens of its prompt done in earlier steps and its own
(:func:`roofline.derive.batching.chunk_attention` at offset T_pre, read from the KV cache), and
each decode's query over its S cached keys and its own
(:func:`roofline.derive.layers.attention_step`). The final norm and LM head run on the B_d
decodes' positions (a chunk's last position is sampled only when it ends its prompt; chunked
prefill leaves that out, as :func:`roofline.derive.batching.chunk_operations` does). A part of
zero size does not run: the chunk's attention is min(C, 1) times its form at max(C, 1) tokens,
the LM head min(B_d, 1) times its form. Every decode of the step waits for the whole step, so
its TPOT (time between its tokens) is the step's time.

**The token budget.** The largest chunk whose step meets the TPOT objective τ_TPOT is the root
of t_step(C) = τ_TPOT, a crossover like the others (:mod:`roofline.derive.crossovers`: the
roofline time of every operation summed, the tiled block counts relaxed): Sarathi-Serve's token
budget less the B_d decodes' tokens (§4.3: the budget is chosen from the TBT objective).

**A request end to end.** A request of T prompt tokens and T_out output tokens is a prefill of T
tokens, which gives the first output token, then T_out − 1 decode steps at contexts T, T + 1,
..., T + T_out − 2, each reading the whole cache so far (scaling-book "All About Transformer
Inference": a generation step reads the weights and every KV cache it attends to). Its decode
part's FLOPs and bytes are the decode step's summed over those contexts, in closed form (they
are linear in the context).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sympy import Expr, Integer, Max, Min, Symbol, ceiling, floor, summation

from ..symbols import B, B_d, C, L, S, T, T_ctx, T_out, T_pre
from .architecture import Architecture
from .batching import chunk_attention
from .bounds import total_time
from .decode import decode_operations
from .entry import Entry
from .layers import Operation, attention_step, total_bytes, total_flops
from .transformer import edge_operations, layer_operations

__all__ = ["SOURCE", "REQUEST", "unsupported", "hybrid_operations", "tp_hybrid_operations",
           "step_time", "decode_sum", "request_decode_flops", "request_decode_bytes", "entries"]

SOURCE = ("Sarathi-Serve (Agrawal et al. 2024, arXiv 2403.02310) §4.2–4.3: hybrid batches of "
          "one prefill chunk and decodes, the token budget from the TBT objective")
REQUEST = ("scaling-book 'All About Transformer Inference': prefill, then one generation step "
           "per output token, each reading the weights and the KV cache so far")
_STEP = ("one engine step: a chunk of C prompt tokens after T_pre done, B_d decodes at "
         "context S", "projections over the C + B_d rows: the weights read once",
         "the LM head on the B_d decodes' positions")


def unsupported(arch: Architecture) -> str | None:
    """Why the hybrid step is not derived for ``arch`` (None where it is): the chunk's attention
    over the cache is derived for full attention with a KV cache, as chunked prefill is."""
    if arch.mla or arch.sparse_attention:
        return "multi-head latent attention (the chunk's attention over the latent cache)"
    if arch.window != "none":
        return "local attention, a window or chunks (the chunk's attention would be charged " \
               "as global)"
    if arch.linear_attention:
        return "linear attention layers (the chunk's recurrence over its state)"
    return None


def _relaxed(op: Operation) -> Operation:
    """``op`` with every ceiling and floor replaced by its argument (the tiled block counts
    relaxed, as the crossovers relax them)."""
    def smooth(expr: Expr) -> Expr:
        return expr.replace(ceiling, lambda x: x).replace(floor, lambda x: x)
    return replace(op, flops=smooth(op.flops), bytes=smooth(op.bytes),
                   levels=tuple((level, smooth(q)) for level, q in op.levels))


def hybrid_operations(arch: Architecture = Architecture(), mode: str = "ideal",
                      caches: Sequence[str] = (), smooth: bool = False) -> list[Operation]:
    """Every operation of one hybrid step (a chunk of C tokens after T_pre, B_d decodes at
    context S) in the attention ``mode`` behind the cache levels ``caches``; ``smooth``: for
    the budget's crossover, the tiled block counts relaxed and both parts present (C ≥ 1,
    B_d ≥ 1: no min(·, 1) factors)."""
    reason = unsupported(arch)
    if reason is not None:
        raise ValueError(f"the hybrid step is not derived for {reason}")
    if smooth:  # a chunk of C ≥ 1 tokens, its block counts relaxed
        chunk = replace(_relaxed(chunk_attention(mode, size=C, caches=caches, offset=T_pre)),
                        count=L)
    else:  # min(C, 1)·f(max(C, 1)): none where the step holds no chunk (a form divides by C)
        chunk = _times(chunk_attention(mode, size=Max(C, 1), caches=caches, offset=T_pre),
                       Min(C, 1))
    decodes = replace(attention_step().xreplace({B: B_d, T_ctx: S}), count=L)
    layers = layer_operations(arch, C + B_d, [replace(chunk, count=L), decodes])
    edges = [op.xreplace({B: B_d}) for op in edge_operations(arch, C + B_d, C + B_d)]
    if not smooth:  # the budget's crossover has decodes to meet its objective: B_d ≥ 1
        edges = [_times(op, Min(B_d, 1)) if op.name in ("final_norm", "lm_head") else op
                 for op in edges]
    return [edges[0], *layers, *edges[1:]]


def tp_hybrid_operations(arch: Architecture = Architecture(), mode: str = "ideal",
                         caches: Sequence[str] = (), smooth: bool = False) -> list[Operation]:
    """One device's hybrid step under N_tp-way tensor parallelism (Megatron-LM §3, as
    :func:`roofline.derive.tensor_parallel.tp_decode_operations` splits a decode step): each
    operation's share (its heads, its columns and rows, its max(1, n_kv/N_tp) heads of the KV
    cache) and the collectives of the step's C + B_d rows: two all-reduces a layer and the
    embedding's of (C + B_d)·D·b_a bytes each, the gather of the B_d decodes' logits (none
    where the step holds no decodes)."""
    from .tensor_parallel import COMMUNICATION, shard, with_communication

    out = []
    for op in with_communication([shard(op) for op in hybrid_operations(arch, mode, caches,
                                                                         smooth)], C + B_d):
        if op.kind == COMMUNICATION:  # B·tokens rows: here the step's C + B_d, B_d sampled
            sampled = op.name == "tp.all_gather.logits"
            op = op.xreplace({B: B_d if sampled else 1})
            op = _times(op, Min(B_d, 1)) if sampled and not smooth else op
        out.append(op)
    return out


def _times(op: Operation, factor: Expr) -> Operation:
    """``op`` with its FLOPs and bytes (at every level) multiplied by ``factor`` (0 or 1: an
    operation that a step runs or not)."""
    return replace(op, flops=factor * op.flops, bytes=factor * op.bytes,
                   levels=tuple((level, factor * q) for level, q in op.levels))


def step_time(arch: Architecture = Architecture(), mode: str = "ideal",
              caches: Sequence[str] = (), smooth: bool = False) -> Expr:
    """The roofline time of one hybrid step: Σ count·max(F/P, Q/β, ...), every operation at its
    own roof (:func:`roofline.derive.bounds.total_time`); the decodes' TPOT. Under
    parallelism (``arch.parallel``) one device's under tensor parallelism, its collectives at
    the link (the hybrid step is derived under tensor parallelism alone)."""
    from .tensor_parallel import COMMUNICATION, beta_link

    ops = (tp_hybrid_operations if arch.parallel else hybrid_operations)(
        replace(arch, parallel=False), mode, caches, smooth)
    links = sum((op.count * op.levels[0][1] for op in ops if op.kind == COMMUNICATION),
                Integer(0)) / beta_link  # a collective's time, carried as bytes at the link
    return total_time([op for op in ops if op.kind != COMMUNICATION]) + links


def decode_sum(expr: Expr) -> Expr:
    """``expr`` (a decode step's form in the context T_ctx) summed over a request's T_out − 1
    decode steps, at contexts T, T + 1, ..., T + T_out − 2: SymPy's closed form.

    >>> decode_sum(T_ctx)
    (T_out - 1)*(2*T + T_out - 2)/2
    """
    j = Symbol("j", integer=True, nonnegative=True)
    return summation(expr.xreplace({T_ctx: T + j}), (j, 0, T_out - 2)).factor()


def request_decode_flops(arch: Architecture = Architecture()) -> Expr:
    """FLOPs of a request's decode part (B sequences, T_out − 1 steps)."""
    return decode_sum(total_flops(decode_operations(arch)))


def request_decode_bytes(arch: Architecture = Architecture()) -> Expr:
    """HBM bytes of a request's decode part: each step's weights and the KV cache so far."""
    return decode_sum(total_bytes(decode_operations(arch)))


def entries() -> list[Entry]:
    ops = hybrid_operations()
    return [
        Entry("hybrid.flops", total_flops(ops), "FLOPs of one hybrid step (a prefill chunk "
              "beside decodes)", "FLOP", SOURCE, (*_STEP, "ideal attention"), topic="hybrid"),
        Entry("hybrid.bytes", total_bytes(ops), "HBM bytes of one hybrid step", "bytes",
              SOURCE, (*_STEP, "ideal attention: the chunk reads the T_pre cached tokens once"),
              topic="hybrid"),
        Entry("hybrid.tpot", step_time(), "TPOT of the decodes in a hybrid step: the step's "
              "roofline time", "s", f"{SOURCE}; scaling-book 'All About Rooflines'",
              (*_STEP, "ideal attention", "each operation at its own roof, run one after "
               "another"), topic="hybrid"),
        Entry("request.decode_flops", request_decode_flops(), "FLOPs of a request's T_out − 1 "
              "decode steps", "FLOP", REQUEST, ("B sequences of T prompt tokens each",
                                                 "decode steps at contexts T … T + T_out − 2"),
              topic="hybrid"),
        Entry("request.decode_bytes", request_decode_bytes(), "HBM bytes of a request's "
              "T_out − 1 decode steps", "bytes", REQUEST,
              ("B sequences of T prompt tokens each",
               "decode steps at contexts T … T + T_out − 2",
               "each step reads the weights and the KV cache so far"), topic="hybrid"),
    ]

