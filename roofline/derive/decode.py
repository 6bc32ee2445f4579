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

from ..symbols import B, H, L, T, T_ctx, b_a, b_kv, n_kv, n_q
from . import attention, window
from .entry import Entry
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
    d_c + H_r elements per token and layer (:func:`roofline.derive.mla.kv_cache_bytes`)."""
    if arch.mla:
        from . import mla

        return mla.kv_cache_bytes()
    glob, local = window.layer_split(arch)
    out = kv_cache_bytes(T, glob) if glob != 0 else 0
    return out + (kv_cache_bytes(window.cached_tokens(arch), local) if local != 0 else 0)


def attention_step(keys: Expr = T_ctx + 1, name: str = "attention.decode",
                   layers: Expr = 1) -> Operation:
    """One layer's decode attention: each of the B new queries attends to the T_ctx cached keys
    and its own: FLOPs 4·B·n_q·H·(T_ctx + 1); bytes: Q read and O written (b_a), the cache read
    and the new K, V written (b_kv): 2·B·n_kv·H·(T_ctx + 1)·b_kv. A windowed layer attends to
    ``keys`` = min(T_ctx + 1, W) of them.
    """
    flops = attention.flops(queries=1, keys=keys, causal=False)
    cache = 2 * B * n_kv * H * keys * b_kv
    return Operation(name, "attention", flops, 2 * B * n_q * H * b_a + cache, layers)


def decode_operations(arch: Architecture = Architecture()) -> list[Operation]:
    """Every operation of one decode step of B sequences at context T_ctx (multi-head latent
    attention: :func:`roofline.derive.mla.decode_operations`, in the architecture's form)."""
    if arch.mla:
        from . import mla

        return mla.decode_operations(arch)
    step: Operation | list[Operation] = attention_step()
    if arch.window != "none":
        glob, local = window.layer_split(arch)
        step = [attention_step(window.decode_keys(), "attention.decode.window", local)]
        if glob != 0:
            step.insert(0, attention_step(layers=glob))
    return [*layer_operations(arch, B, step), *edge_operations(arch, B, B)]


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
