"""Chunked local attention of one layer (Llama 4's RoPE layers): the prompt is cut into chunks
of C_att tokens and query i sees the keys of its own chunk up to itself, (i mod C_att) + 1 of
them. Hugging Face transformers' chunked causal mask (``masking_utils``: key j is seen when
j ≤ i and j // C_att = i // C_att; ``Llama4TextConfig.attention_chunk_size``, 8,192 in Llama 4
Scout and Maverick, on the layers ``no_rope_layers`` marks as rotary) and vLLM's
``ChunkedLocalAttention``, which runs each chunk as its own causal attention.

Each chunk is then an independent causal attention of its length: ⌊T/C_att⌋ whole chunks and
one of r = T − C_att·⌊T/C_att⌋ tokens. Every form of one causal layer — FLOPs, the schedule's
bytes in each attention mode, and their split over the memory hierarchy
(:mod:`roofline.derive.levels`) — is put in for each: f(C_att)·⌊T/C_att⌋ + f(r), the last
none where r = 0 (⌊x⌋ written ⌈x + 1/C_att⌉ − 1, exact for whole numbers; f(r) written
min(r, 1)·f(max(r, 1)), as a working set divides by the prompt's length). A tiled schedule whose row blocks divide C_att
(the kernels' 128 rows divide 8,192) skips the blocks outside a chunk exactly so; ``naive``
stores each chunk's C_att × C_att scores (a block-diagonal matrix). For the crossovers
(``smooth``) the last chunk is dropped: max(1, T/C_att) chunks of min(T, C_att) tokens, so that
the prompt length enters linearly beyond one chunk. At T ≤ C_att every form is the causal
layer's (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Max, Min, Rational, ceiling, floor

from ..symbols import B, C_att, H, T, T_ctx, b_a, n_q
from . import attention, levels
from .architecture import Architecture
from .entry import Entry

__all__ = ["SOURCE", "whole_chunks", "per_chunk", "pairs", "flops", "level_bytes",
           "score_bytes", "cached_tokens", "decode_keys", "entries"]

SOURCE = ("Llama 4 (Meta, HF transformers Llama4TextConfig.attention_chunk_size and the chunked "
          "causal mask of masking_utils); vLLM ChunkedLocalAttention")


def whole_chunks(tokens: Expr = T) -> Expr:
    """⌊tokens/C_att⌋, written with a ceiling: ⌈(tokens + 1)/C_att⌉ − 1.

    >>> [whole_chunks().subs({T: t, C_att: 4}) for t in (3, 4, 5, 8)]
    [0, 1, 1, 2]
    """
    return ceiling((tokens + 1) / C_att) - 1


def per_chunk(expr: Expr, smooth: bool = False) -> Expr:
    """``expr`` (a form in the prompt length T) summed over the chunks: its value at C_att for
    each whole chunk, at the remainder for the last; ``smooth``: max(1, T/C_att) chunks of
    min(T, C_att)."""
    if smooth:
        return Max(1, T / C_att) * expr.xreplace({T: Min(T, C_att)})
    q = whole_chunks()
    r = T - C_att * q  # 0 where C_att divides T: the last term is then none (forms that divide
    # by the prompt's length, a working set's, are put in at max(r, 1) and multiplied by 0)
    return q * expr.xreplace({T: C_att}) + Min(r, 1) * expr.xreplace({T: Max(r, 1)})


def pairs() -> Expr:
    """Query–key pairs: Σ_i ((i mod C_att) + 1), each chunk's causal triangle.

    >>> pairs().subs({T: 10, C_att: 4})
    23
    """
    return per_chunk(T * (T + 1) * Rational(1, 2))


def flops(mode: str = "tiled", smooth: bool = False) -> Expr:
    """Matmul FLOPs of one chunked layer: each chunk's causal attention (``naive``: its
    C_att × C_att scores whole)."""
    return per_chunk(attention.mode_flops(mode), smooth)


def level_bytes(mode: str, caches: Sequence[str], smooth: bool = False
                ) -> tuple[Expr, dict[str, Expr]]:
    """(HBM bytes, {level: bytes it serves}) of one chunked layer in ``mode`` behind
    ``caches``: :func:`roofline.derive.levels.level_bytes` of a causal layer, per chunk."""
    hbm, served = levels.level_bytes(mode, caches, False, smooth)
    return per_chunk(hbm, smooth), {k: per_chunk(v, smooth) for k, v in served.items()}


def score_bytes() -> Expr:
    """Footprint of one layer's materialised scores in ``naive``: every chunk's block,
    B·n_q·(⌊T/C_att⌋·C_att² + r²)·b_a."""
    return per_chunk(attention.score_bytes())


def cached_tokens(arch: Architecture) -> Expr:
    """Tokens a chunked layer keeps in its KV cache after T: those of the chunk the next token
    falls in, T − C_att·⌊T/C_att⌋, where the engine frees the others (vLLM's chunked local
    attention); T where it keeps all (``kv_cache="full"``)."""
    return T if arch.kv_cache == "full" else T - C_att * whole_chunks()


def decode_keys() -> Expr:
    """Keys a decode step of a chunked layer attends to: (T_ctx mod C_att) + 1."""
    return T_ctx - C_att * whole_chunks(T_ctx) + 1


def entries() -> list[Entry]:
    """The forms as people write them, with ⌊T/C_att⌋ (the code takes the ceiling form that
    :func:`per_chunk` builds, shown as a step)."""
    layer = "one chunked layer; B sequences of T tokens; n_q query heads of H"
    mask = "query i sees keys C_att·⌊i/C_att⌋ … i (its own chunk, itself included)"
    q = floor(T / C_att)
    r = T - C_att * q
    written = q * C_att * (C_att + 1) / 2 + r * (r + 1) / 2
    return [
        Entry("chunked.pairs", written, "query–key pairs of chunked local attention", "1",
              SOURCE, (mask,), steps=(("as the code sums them", pairs()),)),
        Entry("chunked.flops", 4 * B * n_q * H * written,
              "matmul FLOPs of one chunked layer (fused modes)", "FLOP",
              f"{SOURCE}; 4·H FLOPs per pair as attention.flops", (layer, mask),
              steps=(("as the code sums them", flops()),)),
        Entry("chunked.kernel.bytes", level_bytes("kernel", ())[0],
              "HBM bytes of one chunked layer in the kernel mode, each chunk a causal prompt",
              "bytes", f"{SOURCE}; {attention.FA2}", (layer, mask, "no cache")),
        Entry("chunked.naive.score_bytes", B * n_q * b_a * (q * C_att**2 + r**2),
              "footprint of one chunked layer's materialised scores, all heads and sequences",
              "bytes", SOURCE, (layer, "each chunk's scores a block of its own"),
              steps=(("as the code sums them", score_bytes()),)),
        Entry("chunked.decode_keys", T_ctx - C_att * floor(T_ctx / C_att) + 1,
              "keys one decode step of a chunked layer attends to", "tokens", SOURCE,
              ("T_ctx cached tokens before the step",),
              steps=(("as the code writes it", decode_keys()),)),
    ]
