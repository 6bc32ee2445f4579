"""DeepSeek Sparse Attention in a decode step (:mod:`roofline.derive.sparse_attention` for
prefill): the indexer's scores of the new token over the cache, the top-k, latent attention's
absorbed form over the selected keys (FlashMLA's sparse decoding kernel), and the indexer's key
cache that prefill hands over beside the latent one. Sources as that module's."""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Integer, Min

from ..symbols import B, H_idx, L, T, T_ctx, k_top
from . import mla
from .layers import Operation
from .sparse_attention import FP8, FP32, INDEX, indexer_bytes, indexer_flops, \
    indexer_operations, topk_bytes

__all__ = ["decode_attention", "decode_operations", "cache_bytes"]


def decode_attention(keys: Expr = T_ctx + 1) -> list[Operation]:
    """One decode step's attention of every layer (the attention kind counting L), B sequences
    at context T_ctx: the indexer's scores over ``keys`` = T_ctx + 1 (the cache and itself;
    DeepGEMM's paged ``fp8_paged_mqa_logits``), the top-k over them, and mla.decode_step's
    absorbed form over the min(T_ctx + 1, k_top) selected entries (FlashMLA's sparse decoding
    kernel), named ``dsa.*`` and with the k_top indices read."""
    selected = Min(keys, k_top)
    q_absorb, latent, out_absorb = mla.decode_step("absorbed", keys=selected)
    return [Operation("dsa.indexer.scores.decode", "attention", indexer_flops(keys),
                      indexer_bytes(queries=Integer(1), keys=keys, pairs=keys), L),
            Operation("dsa.indexer.topk.decode", "attention", Integer(0),
                      topk_bytes(Integer(1), keys), L),
            Operation("dsa.q_absorb", q_absorb.kind, q_absorb.flops, q_absorb.bytes),
            Operation("dsa.attention.decode", "attention", latent.flops,
                      latent.bytes + B * INDEX * k_top, L),
            Operation("dsa.out_absorb", out_absorb.kind, out_absorb.flops, out_absorb.bytes)]


def decode_operations(keys: Expr = T_ctx + 1) -> list[Operation]:
    """One layer's decode step beyond MLA's projections: the indexer's projections of the new
    token and :func:`decode_attention`."""
    return [*indexer_operations(B), *(replace(op, count=Integer(1))
                                      for op in decode_attention(keys))]


def cache_bytes(tokens: Expr = T, layers: Expr = L) -> Expr:
    """The indexer's key cache beside the latent one: per token and layer H_idx keys in FP8
    (one byte each, whatever the latent cache's type) and one FP32 scale
    (``Indexer.k_cache``, ``k_scale_cache``), B sequences."""
    return B * layers * tokens * (H_idx * FP8 + FP32)
