"""Hugging Face ``config.json`` → shape fields for this year's families (the older ones are
:mod:`roofline.specs.hf_config`'s, which dispatches here). HF transformers' configuration
classes and modelling code are the source of every default and mapping:

    family       attention                                  MLP
    qwen3        GQA (head_dim, default 128), QK-norm;       gated SiLU of intermediate_size
                 no biases
    qwen3_moe    as qwen3                                   num_experts of moe_intermediate_size,
                                                            num_experts_per_tok, no shared
                                                            expert; dense layers of
                                                            intermediate_size as
                                                            decoder_sparse_step and
                                                            mlp_only_layers decide
    gemma3_text  as gemma2 (head_dim, four norms a layer,   GeGLU (tanh GELU)
                 embeddings scaled by sqrt(D)), QK-norm;
                 local window on 5 of every 6 layers
    gemma3       its ``text_config`` (a gemma3_text config; the vision tower and projector are
                 not part of the text decoder's prefill and are not counted)
    qwen3_next   full layers as qwen3 with a sigmoid       as qwen3_moe, with a shared expert
                 output gate; Gated DeltaNet layers        of shared_expert_intermediate_size
                 between them (layer_types, else every     behind a sigmoid gate
                 full_attention_interval-th layer full)
    llama4_text  GQA, chunked attention on the rotary      num_local_experts of
                 layers (every 4th layer global, no        intermediate_size, top
                 positions), an L2 norm of q and k there   num_experts_per_tok, one shared
                                                           expert; dense layers of
                                                           intermediate_size_mlp
    llama4       its ``text_config`` (a llama4_text config; the vision tower is not counted)
    gpt_oss      GQA with biases on Q, K, V and O and a      num_local_experts of
                 learned sink per query head; a window on    intermediate_size, the top
                 alternate layers, the first windowed        num_experts_per_tok; biases on
                                                             the experts and the router

Qwen3 (``Qwen3Attention``) and Gemma-3 (``Gemma3Attention``) apply an RMSNorm of ``head_dim``
gains to every query and key head before the rotary encoding (``q_norm``, ``k_norm``). Qwen3's
window switches as Qwen2's (``use_sliding_window``, layers from ``max_window_layers`` on; a
``layer_types`` list decides instead). Gemma-3's local layers attend within ``sliding_window``
(default 4096) and every ``sliding_window_pattern``-th layer (default 6) is global (Gemma 3,
arXiv 2503.19786, §2.1: "5 local layers for every global layer"), unless ``layer_types``
says; it has no logit soft-capping. gpt-oss (``GptOssAttention``: ``sinks``, one per head;
``bias=config.attention_bias`` on the four projections; ``GptOssTopKRouter`` with a bias;
``GptOssExperts``: ``gate_up_proj_bias``, ``down_proj_bias``) attends within
``sliding_window`` (default 128) on the layers ``layer_types`` marks (default: even layers,
``GptOssConfig``); its clamped SwiGLU is counted as the gated SiLU; its MXFP4 experts come
from ``quantization_config`` (:mod:`roofline.specs.quantization`). Qwen3-Next's linear layers
(``Qwen3NextGatedDeltaNet``: ``linear_num_key_heads``, ``linear_num_value_heads``,
``linear_key_head_dim``, ``linear_value_head_dim``, ``linear_conv_kernel_dim``) are
:mod:`roofline.derive.linear_attention`'s; its ``partial_rotary_factor`` rotates part of each
head, and the rotary encoding is counted over whole heads (a memory-bound element-wise
operation under a thousandth of the prefill's bytes).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .counts import LIMITS, check_count
from .hf_keys import ConfigKeys
from .hf_layers import (dense_layers, head_dim_of, layer_kinds, layer_list, layer_types,
                        qwen_experts, short)

__all__ = ["RECENT_FAMILIES"]


def _windows(c: ConfigKeys, layers: int, size: int | None, local: int,
             pattern: str) -> dict[str, Any]:
    """The window's fields: ``sliding_window`` (the config's, else ``size``; null: none) on
    ``local`` layers (a ``layer_types`` list decides instead), described by ``pattern``."""
    key = "sliding_window"
    size = c.config[key] if key in c.config else size
    if size is None:
        return {}
    size = check_count(size, f"{c.where}: {key}", LIMITS["sliding_window"])
    if c.config.get("layer_types") is not None:
        local, pattern = layer_types(c, layers), "as the config's layer_types"
    if local == 0:
        return {}
    return dict(sliding_window=size, window_layers=local, layer_pattern=pattern)


def _qwen3(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Qwen3: Llama's layer with QK-norm and no biases (``Qwen3Config``: ``head_dim`` 128)."""
    D_, heads, layers = c.int("hidden_size"), c.int("num_attention_heads"), \
        c.int("num_hidden_layers")
    c.reject("attention_bias", True, "biases on the q, k, v and o projections")
    out = dict(hidden_size=D_, num_layers=layers, num_heads=heads,
               num_kv_heads=c.int("num_key_value_heads", heads), head_dim=c.int("head_dim", 128),
               intermediate_size=c.int("intermediate_size"), vocab_size=c.int("vocab_size"),
               max_position=c.int("max_position_embeddings"),
               activation=c.activation("hidden_act", "silu"),
               tied_embeddings=c.bool("tie_word_embeddings", False), qk_norm=True)
    if c.bool("use_sliding_window", False):
        first = c.int("max_window_layers", 28)
        out.update(_windows(c, layers, 4096, max(0, layers - first),
                            f"layers {first} to {layers - 1} (max_window_layers {first})"))
    return out


def _qwen3_moe(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Qwen3-MoE: Qwen3's attention; routed experts without a shared one
    (``Qwen3MoeSparseMoeBlock``), dense layers as Qwen2-MoE's."""
    out = _qwen3(c, model_type)
    return {**out, **qwen_experts(c, out["intermediate_size"], out["num_layers"], shared=False)}


def _gemma3(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Gemma-3's text decoder (``Gemma3TextConfig``'s defaults where a key is absent): Gemma-2's
    layer with QK-norm, five local layers to one global."""
    c = _text_config(c, model_type, "gemma3")
    D_, layers = c.int("hidden_size", 2304), c.int("num_hidden_layers", 26)
    heads = c.int("num_attention_heads", 8)
    c.reject("attention_bias", True, "biases on the q, k, v and o projections")
    act_key = "hidden_activation" if c.config.get("hidden_activation") is not None \
        else "hidden_act"
    pattern = c.int("sliding_window_pattern", 6)
    return dict(hidden_size=D_, num_layers=layers, num_heads=heads,
                num_kv_heads=c.int("num_key_value_heads", 4), head_dim=c.int("head_dim", 256),
                intermediate_size=c.int("intermediate_size", 9216),
                vocab_size=c.int("vocab_size", 262208),
                max_position=c.int("max_position_embeddings", 131072),
                activation=c.activation(act_key, "gelu_pytorch_tanh"),
                tied_embeddings=c.bool("tie_word_embeddings", True), embed_scale=True,
                post_norms=True, qk_norm=True,
                **_windows(c, layers, 4096, layers - layers // pattern,
                           f"every {pattern}th layer global, sliding_window_pattern "
                           f"{pattern}"))


def _gpt_oss(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """gpt-oss (``GptOssConfig``'s defaults where a key is absent)."""
    D_, layers = c.int("hidden_size", 2880), c.int("num_hidden_layers", 36)
    heads = c.int("num_attention_heads", 64)
    c.reject("attention_bias", False, "gpt-oss attention without biases")
    top = "num_experts_per_tok" if "num_experts_per_tok" in c.config else "experts_per_token"
    return dict(hidden_size=D_, num_layers=layers, num_heads=heads,
                num_kv_heads=c.int("num_key_value_heads", 8),
                head_dim=head_dim_of(c, D_, heads) if "head_dim" in c.config else 64,
                intermediate_size=c.int("intermediate_size", 2880),
                vocab_size=c.int("vocab_size", 201088),
                max_position=c.int("max_position_embeddings", 131072),
                activation=c.activation("hidden_act", "silu"),
                tied_embeddings=c.bool("tie_word_embeddings", False), linear_bias=True,
                attention_sinks=True, num_experts=c.int("num_local_experts", 128),
                experts_per_token=c.int(top, 4),
                **_windows(c, layers, 128, (layers + 1) // 2,
                           "local and full alternate, the first local"))


def _qwen3_next(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Qwen3-Next: Gated DeltaNet layers beside full-attention ones (``layer_types``, else every
    ``full_attention_interval``-th layer full, ``Qwen3NextConfig``); the full layers' attention
    as Qwen3's with a sigmoid output gate (``Qwen3NextAttention``: ``q_proj`` of 2·n_q·H); MoE
    layers as Qwen2-MoE's (routed experts and a gated shared expert)."""
    out = _qwen3(c, model_type)
    layers = out["num_layers"]
    if c.config.get("layer_types") is not None:
        kinds = layer_kinds(c, layers, ("linear_attention", "full_attention"))
        linear = kinds.count("linear_attention")
    else:
        interval = c.int("full_attention_interval", 4)
        linear = layers - layers // interval
    out.update(attn_output_gate=True)
    if linear:
        key_heads = c.int("linear_num_key_heads", 16)
        out.update(linear_layers=linear, linear_key_heads=key_heads,
                   linear_value_heads=c.int("linear_num_value_heads", 32),
                   linear_key_head_dim=c.int("linear_key_head_dim", 128),
                   linear_value_head_dim=c.int("linear_value_head_dim", 128),
                   linear_conv_kernel=c.int("linear_conv_kernel_dim", 4))
    out.update(qwen_experts(c, out["intermediate_size"], layers, shared=True))
    return out


def _text_config(c: ConfigKeys, model_type: str, multimodal: str) -> ConfigKeys:
    """A multimodal config's text decoder (its ``text_config``) where ``model_type`` is the
    multimodal family, else the config itself."""
    if model_type != multimodal:
        return c
    text = c.config.get("text_config")
    if not isinstance(text, Mapping):
        raise SpecError(f"{c.where}: text_config", "must be a JSON object (the text "
                        "decoder's config)", short(text))
    return ConfigKeys(text, Path(f"{c.where}: text_config"))


def _llama4(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Llama 4's text decoder (``Llama4TextConfig``'s defaults where a key is absent): MoE
    layers every ``interleave_moe_layer_step``-th (or as ``moe_layers`` lists them), each of
    ``num_local_experts`` routed experts of ``intermediate_size`` and one shared expert of the
    same width (``Llama4TextMoe``), the others dense of ``intermediate_size_mlp``; the layers
    ``no_rope_layers`` marks 1 (every layer but each ``no_rope_layer_interval``-th) rotary,
    with chunked attention of ``attention_chunk_size`` and, with ``use_qk_norm``, an L2 norm of
    q and k; the others global, without positions (NoPE)."""
    c = _text_config(c, model_type, "llama4")
    D_, layers = c.int("hidden_size", 5120), c.int("num_hidden_layers", 48)
    heads = c.int("num_attention_heads", 40)
    c.reject("attention_bias", True, "biases on the q, k, v and o projections")
    out: dict[str, Any] = dict(
        hidden_size=D_, num_layers=layers, num_heads=heads,
        num_kv_heads=c.int("num_key_value_heads", 8), head_dim=c.int("head_dim", 128),
        intermediate_size=c.int("intermediate_size", 8192),
        vocab_size=c.int("vocab_size", 202048),
        max_position=c.int("max_position_embeddings", 131072),
        activation=c.activation("hidden_act", "silu"),
        tied_embeddings=c.bool("tie_word_embeddings", False), local_rope=True)
    if c.config.get("moe_layers") is not None:
        moe = sorted(layer_list(c, "moe_layers", layers))
        words = f"{len(moe)} of {layers} layers (moe_layers)"
    else:
        step = c.int("interleave_moe_layer_step", 1)
        moe = list(range(step - 1, layers, step))
        words = f"{len(moe)} of {layers} layers (interleave_moe_layer_step {step})"
    if moe:
        width = out["intermediate_size"]
        out.update(num_experts=c.int("num_local_experts", 16),
                   experts_per_token=c.int("num_experts_per_tok", 1), shared_experts=1,
                   shared_expert_size=width, moe_pattern=words,
                   **dense_layers(c.int("intermediate_size_mlp", 16384), moe, layers))
    rotary, pattern = _rope_layers(c, layers)
    chunk = c.config.get("attention_chunk_size", 8192)
    if chunk is not None and rotary:
        out.update(attention_chunk_size=check_count(chunk, f"{c.where}: attention_chunk_size",
                                                    LIMITS["attention_chunk_size"]),
                   window_layers=rotary, layer_pattern=pattern,
                   qk_l2_norm=c.bool("use_qk_norm", True))
    return out


def _rope_layers(c: ConfigKeys, layers: int) -> tuple[int, str]:
    """Layers with the rotary encoding, and which in words: ``no_rope_layers`` (1: rotary, 0:
    none), else all but every ``no_rope_layer_interval``-th (``Llama4TextConfig``'s default,
    4)."""
    flags = c.config.get("no_rope_layers")
    if flags is None:
        interval = c.int("no_rope_layer_interval", 4)
        return (sum(1 for i in range(layers) if (i + 1) % interval),
                f"every {interval}th layer global, no_rope_layer_interval {interval}")
    if not isinstance(flags, list) or len(flags) != layers or any(
            f not in (0, 1) or isinstance(f, bool) for f in flags):
        got = f"a list of {len(flags)}" if isinstance(flags, list) and len(flags) != layers \
            else short(flags)
        raise SpecError(f"{c.where}: no_rope_layers", f"must be a list of {layers} entries, "
                        "each 0 or 1", got)
    return sum(flags), "the rotary layers of no_rope_layers"


RECENT_FAMILIES = {"qwen3": _qwen3, "qwen3_moe": _qwen3_moe, "gemma3": _gemma3,
                   "gemma3_text": _gemma3, "gpt_oss": _gpt_oss, "qwen3_next": _qwen3_next,
                   "llama4": _llama4, "llama4_text": _llama4}
