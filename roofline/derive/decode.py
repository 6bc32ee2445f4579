"""Decode, for the contrast with prefill: one step of B sequences at context T_ctx, and the
KV cache that prefill hands over.

One decode step runs every layer over B rows (one new token per sequence): the projections read
their weights once for B rows, and attention reads each sequence's KV cache of T_ctx positions
and appends this step's key and value. Source: scaling-book "All About Transformer Inference"
(KV cache 2·bytes·H·K·L·T per sequence; a generation step is bound by the weights and the KV
caches it reads; critical batch B_crit ≈ I_ridge·b_w/2: 240 in bf16 on TPU v5e, 120 with int8
weights).
"""

from __future__ import annotations

from sympy import Expr

from ..symbols import B, H, L, L_lin, T, b_kv, n_kv
from . import linear_attention, mla, sparse_decode, window
from .local import cached_tokens as local_tokens
from .local import decode_keys as local_keys
from .entry import Entry
from .layers import attention_step
from .transformer import (Architecture, Operation, edge_operations, layer_operations,
                          total_bytes, total_flops)

__all__ = ["kv_cache_bytes", "model_kv_cache_bytes", "attention_step", "decode_operations",
           "entries"]

SOURCE = "scaling-book 'All About Transformer Inference'"


def kv_cache_bytes(tokens: Expr = T, layers: Expr = L) -> Expr:
    """KV cache of B sequences of ``tokens`` positions in ``layers`` layers: 2·B·L·n_kv·H·T·b_kv.

    >>> kv_cache_bytes()
    2*B*H*L*T*b_kv*n_kv
    """
    return 2 * B * layers * n_kv * H * tokens * b_kv


def model_kv_cache_bytes(arch: Architecture = Architecture()) -> Expr:
    """The KV cache of ``arch`` after T tokens: every global layer keeps T positions, every
    windowed layer :func:`roofline.derive.window.cached_tokens` (min(T, W) in a rolling
    buffer, Mistral 7B arXiv 2310.06825 §2). Multi-head latent attention keeps its latent,
    d_c + H_r elements per token and layer (:func:`roofline.derive.mla.kv_cache_bytes`). A
    hybrid's L_lin linear-attention layers keep a state that does not grow with T
    (:func:`roofline.derive.linear_attention.state_elements`, at b_kv)."""
    if arch.sparse_attention:  # the latent and the indexer's keys
        return mla.kv_cache_bytes() + sparse_decode.cache_bytes()
    if arch.mla:
        return mla.kv_cache_bytes()
    if arch.linear_attention:  # the full layers' cache, the linear layers' fixed state
        state = L_lin * B * linear_attention.state_elements() * b_kv
        return kv_cache_bytes(T, L - L_lin) + state
    glob, local = window.layer_split(arch)
    out = kv_cache_bytes(T, glob) if glob != 0 else 0
    return out + (kv_cache_bytes(local_tokens(arch), local) if local != 0 else 0)


def decode_operations(arch: Architecture = Architecture()) -> list[Operation]:
    """Every operation of one decode step of B sequences at context T_ctx. Multi-head latent
    attention in the architecture's form (``arch.mla_decode``,
    :func:`roofline.derive.mla.decode_step`) in the attention's place, less the per-head
    key/value up-projection of the new token (``mla.kv_up``): the naive form expands the new
    latent with the cached ones, the absorbed form never expands it."""
    if arch.mla:
        step = sparse_decode.decode_attention() if arch.sparse_attention else \
            mla.decode_step(arch.mla_decode, layers=L)
        ops = layer_operations(arch, B, step)
        return [*(op for op in ops if op.name != "mla.kv_up"), *edge_operations(arch, B, B)]
    recurrence = linear_attention.decode_step() if arch.linear_attention else None
    step: Operation | list[Operation] = attention_step()
    if arch.window != "none":
        glob, local = window.layer_split(arch)
        name = "attention.decode." + ("chunked" if arch.window_kind == "chunked" else "window")
        step = [attention_step(local_keys(arch), name, local)]
        if glob != 0:
            step.insert(0, attention_step(layers=glob))
    return [*layer_operations(arch, B, step, recurrence), *edge_operations(arch, B, B)]


def entries() -> list[Entry]:
    ops = decode_operations()
    fl, by = total_flops(ops), total_bytes(ops)
    step = ("one step; B sequences, one new token each, T_ctx cached positions",
            "Llama-style dense model as transformer.params")
    return [
        Entry("kv_cache.bytes", kv_cache_bytes(), "KV cache that a prefill of T tokens leaves",
              "bytes", SOURCE + " (KV cache 2·bytes·H·K·L·T per sequence)",
              ("B sequences of T tokens",)),
        Entry("decode.flops", fl, "FLOPs of one decode step", "FLOP", SOURCE, step),
        Entry("decode.bytes", by, "HBM bytes of one decode step", "bytes", SOURCE, step),
        Entry("decode.intensity", fl / by, "arithmetic intensity of one decode step",
              "FLOP/byte", SOURCE, step),
    ]
