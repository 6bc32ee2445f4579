"""The rules a model shape's counts and flags obey together (a window, latent attention,
experts, linear-attention layers), each broken rule a :class:`SpecError` naming the file and
key: :class:`roofline.specs.model.ModelShape` checks them as it is made."""

from __future__ import annotations

from typing import Any  # a ModelShape being made (its module imports this one)

from ..errors import SpecError
from .counts import LIMITS, check_count, check_zero_or_count

__all__ = ["check_window", "check_latent", "check_experts", "check_linear", "check_sparse"]


def check_window(m: Any, where: str) -> None:
    """A window of W tokens, or chunks of C_att (not both), on 0 to L layers; no local layers
    without either."""
    check_zero_or_count(m.attention_chunk_size, f"{where}: attention_chunk_size",
                        LIMITS["sliding_window"])
    if m.sliding_window is not None and m.attention_chunk_size:
        raise SpecError(f"{where}: attention_chunk_size", "not supported beside a sliding "
                        "window (no published model has both)", m.attention_chunk_size)
    if m.sliding_window is None and not m.attention_chunk_size:
        if m.window_layers != 0:
            raise SpecError(f"{where}: window_layers", "must be 0 without a sliding window "
                            "or chunked attention", m.window_layers)
        return
    if m.sliding_window is not None:
        check_count(m.sliding_window, f"{where}: sliding_window", LIMITS["sliding_window"])
    if isinstance(m.window_layers, bool) or not isinstance(m.window_layers, int) \
            or not 0 <= m.window_layers <= m.num_layers:
        raise SpecError(f"{where}: window_layers",
                        f"must be an integer from 0 to the {m.num_layers} layers",
                        m.window_layers)


def check_latent(m: Any, where: str) -> None:
    """Latent attention's ranks: d_c and H_r together, d_cq only with them; no window."""
    for key in ("kv_lora_rank", "q_lora_rank", "rope_head_dim", "mtp_layers"):
        check_zero_or_count(getattr(m, key), f"{where}: {key}", LIMITS[key])
    if not m.mla:
        for key in ("q_lora_rank", "rope_head_dim"):
            if getattr(m, key):
                raise SpecError(f"{where}: {key}", "needs kv_lora_rank (latent attention)",
                                getattr(m, key))
        return
    if m.rope_head_dim == 0:
        raise SpecError(f"{where}: rope_head_dim",
                        "must be a positive integer with latent attention", 0)
    if m.sliding_window is not None:
        raise SpecError(f"{where}: sliding_window", "not supported with multi-head latent "
                        "attention (no published model has both)", m.sliding_window)


def check_experts(m: Any, where: str) -> None:
    """Shared experts, their gate, and dense layers beside the MoE ones."""
    for key in ("shared_experts", "shared_expert_size", "moe_layers",
                "dense_intermediate_size"):
        check_zero_or_count(getattr(m, key), f"{where}: {key}", LIMITS[key])
    if not isinstance(m.shared_expert_gate, bool):
        raise SpecError(f"{where}: shared_expert_gate", "must be true or false",
                        m.shared_expert_gate)
    moe = m.num_experts > 1
    needs = [(key, getattr(m, key)) for key in ("shared_experts", "moe_layers")
             if getattr(m, key)]
    if needs and not moe:
        raise SpecError(f"{where}: {needs[0][0]}", "needs num_experts > 1 (a mixture of "
                        "experts)", needs[0][1])
    if (m.shared_experts > 0) != (m.shared_expert_size > 0):
        raise SpecError(f"{where}: shared_expert_size", "must be positive with shared "
                        "experts and 0 without", m.shared_expert_size)
    if m.shared_expert_gate and not m.shared_experts:
        raise SpecError(f"{where}: shared_expert_gate", "needs shared experts", True)
    if m.moe_layers >= m.num_layers:
        raise SpecError(f"{where}: moe_layers", f"must be below the {m.num_layers} "
                        "layers (0: every layer has experts)", m.moe_layers)
    if (m.moe_layers > 0) != (m.dense_intermediate_size > 0):
        raise SpecError(f"{where}: dense_intermediate_size", "must be positive where some "
                        "layers are dense (moe_layers > 0) and 0 otherwise",
                        m.dense_intermediate_size)


def check_linear(m: Any, where: str) -> None:
    """A hybrid's linear-attention layers: all five sizes with them, none without; value
    heads a multiple of key heads; no window or latent attention beside them."""
    keys = ("linear_key_heads", "linear_value_heads", "linear_key_head_dim",
            "linear_value_head_dim", "linear_conv_kernel")
    check_zero_or_count(m.linear_layers, f"{where}: linear_layers",
                        min(LIMITS["linear_layers"], m.num_layers))
    for key in keys:
        check_zero_or_count(getattr(m, key), f"{where}: {key}", LIMITS[key])
        if (getattr(m, key) > 0) != (m.linear_layers > 0):
            raise SpecError(f"{where}: {key}", "must be positive with linear-attention "
                            "layers (linear_layers > 0) and 0 without", getattr(m, key))
    if m.linear_layers and m.linear_value_heads % m.linear_key_heads:
        # a config.json's key (Qwen3NextConfig's name), a shape file's field
        key = "linear_num_value_heads" if str(m.path).endswith(".json") else \
            "linear_value_heads"
        raise SpecError(f"{where}: {key}", f"must be a multiple of the "
                        f"{m.linear_key_heads} linear key heads", m.linear_value_heads)
    if m.linear_layers and (m.mla or m.sliding_window is not None):
        raise SpecError(f"{where}: linear_layers", "not supported beside a sliding window "
                        "or latent attention (no published model has both)",
                        m.linear_layers)


def check_sparse(m: Any, where: str) -> None:
    """DeepSeek Sparse Attention: its three sizes together, on latent attention with a query
    latent (the indexer's queries come from it)."""
    keys = ("index_topk", "index_heads", "index_head_dim")
    for key in keys:
        check_zero_or_count(getattr(m, key), f"{where}: {key}", LIMITS[key])
        if (getattr(m, key) > 0) != (m.index_topk > 0):
            raise SpecError(f"{where}: {key}", "must be positive with sparse attention "
                            "(index_topk > 0) and 0 without", getattr(m, key))
    if m.index_topk and not m.mla:
        raise SpecError(f"{where}: index_topk", "needs latent attention (kv_lora_rank)",
                        m.index_topk)
    if m.index_topk and not m.q_lora_rank:
        raise SpecError(f"{where}: q_lora_rank", "must be a positive integer with sparse "
                        "attention (its indexer reads the query latent)", "none")
