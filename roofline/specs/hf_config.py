"""Hugging Face ``config.json`` → the fields of a :class:`~roofline.specs.model.ModelShape`.

Supported ``model_type`` families and how their keys map (HF ``transformers`` configuration
classes and modelling code are the source of each default; this year's families, Qwen3,
Gemma-3, gpt-oss and the rest, are :mod:`roofline.specs.hf_recent`'s):

    family    width, layers, heads       MLP width          MLP    norm   position  tied*
    llama     hidden_size, num_hidden_   intermediate_size  gated  RMS    rotary    False
    mistral   layers, num_attention_     intermediate_size  gated  RMS    rotary    False
    mixtral   heads (num_key_value_      intermediate_size  gated  RMS    rotary    False
    qwen2     heads, head_dim optional)  intermediate_size  gated  RMS    rotary    False
    phi3      as llama                   intermediate_size  gated  RMS    rotary    False
    gemma     as llama (head_dim: 256)   intermediate_size  gated  RMS    rotary    True
    gemma2    as gemma                   intermediate_size  gated  RMS×2  rotary    True
    opt       as llama                   ffn_dim            plain  Layer  learned   True
    gpt2      n_embd, n_layer, n_head    n_inner or 4·D     plain  Layer  learned   True
    gpt_neox  as llama                   intermediate_size  plain  Layer  rotary    False

(* ``tie_word_embeddings`` when the config does not say.) Mixtral adds ``num_local_experts`` and
``num_experts_per_tok``. The activation comes from ``hidden_act`` / ``activation_function``
(relu, silu or swish, gelu*; Gemma's ``hidden_activation`` first). The context limit is
``max_position_embeddings`` (``n_positions``). Phi-3 fuses q, k, v into one ``qkv_proj`` and
gate and up into ``gate_up_proj``: the same products, so the same cost. Gemma multiplies the
embeddings by sqrt(D) (an element-wise operation); Gemma-2 also norms each sublayer's output
(``post_attention_layernorm``, ``post_feedforward_layernorm``: four RMSNorms per layer, Gemma 2,
arXiv 2408.00118, §2). ``rope_scaling`` (Llama-3.1's ``llama3``, Phi-3's ``longrope``) rescales
the rotary frequencies only: accepted, no change to cost. Gemma-2's logit soft-capping
(``attn_logit_softcapping``, ``final_logit_softcapping``: c·tanh(x/c)) is ignored: on the scores
it is element-wise work inside the fused attention kernel, not counted as the softmax's
exponentials are not (FlashAttention-2, arXiv 2307.08691, §4.1), with no HBM traffic of its own;
on the logits it is B·V elements, under a millionth of a prefill's work.

Sliding-window attention (:mod:`roofline.derive.window`), as each family's HF modelling code
decides it: ``mistral`` every layer, window ``sliding_window`` (absent: 4096, MistralConfig's
default; null: none); ``mixtral`` and ``phi3`` every layer when ``sliding_window`` is set;
``qwen2`` only with ``use_sliding_window: true``, on layers i ≥ ``max_window_layers`` (default
28; Qwen2Attention's condition); ``gemma2`` on every other layer, the first included
(``sliding_window``, default 4096). A ``layer_types`` list (``sliding_attention`` /
``full_attention`` per layer), where a config has one, decides instead. ``llama``, ``gemma``,
``deepseek_v2`` and ``deepseek_v3`` have no window (a stray key is ignored, as HF does);
``qwen2_moe`` switches it as ``qwen2``.

Biases: every linear layer of opt, gpt2 and gpt_neox has one; qwen2 has biases on the Q, K, V
projections only (Qwen2Attention: ``bias=True`` for q/k/v, ``bias=False`` for o_proj). A learned
position table has ``max_position_embeddings + 2`` rows in OPT (OPTLearnedPositionalEmbedding's
offset of 2) and ``n_positions`` rows in GPT-2. Keys a config has that the shape does not need are
ignored; a key the shape needs and lacks is a :class:`SpecError`, and so is a key of the wrong
JSON type (a string ``"false"`` where ``false`` is meant, a list where a flag is meant; ``true``
is not the integer 1) or a count outside its plausible range (:data:`LIMITS`).

Mixtures of experts with shared experts and dense layers, and multi-head latent attention
(:mod:`roofline.derive.moe`, :mod:`roofline.derive.mla`):

    family       attention                       experts, per MoE layer       dense layers
    qwen2_moe    as qwen2 (Q, K, V biases)       num_experts of               off
                                                 moe_intermediate_size,       decoder_sparse_step
                                                 num_experts_per_tok; one     and in
                                                 shared expert of             mlp_only_layers, of
                                                 shared_expert_intermediate_  intermediate_size
                                                 size behind a sigmoid gate
    deepseek_v2  MLA: kv_lora_rank (d_c),        n_routed_experts of          the first
    deepseek_v3  q_lora_rank (d_cq; null: none), moe_intermediate_size,       first_k_dense_replace
                 qk_rope_head_dim (H_r),         num_experts_per_tok;         and those off
                 qk_nope_head_dim = v_head_dim   n_shared_experts of the      moe_layer_freq, of
                 (H)                             same width                   intermediate_size

(``deepseek_v32`` as ``deepseek_v3``, with DeepSeek Sparse Attention's indexer: ``index_topk``,
``index_n_heads``, ``index_head_dim``), as HF's ``Qwen2MoeDecoderLayer`` (layer i has experts unless i is in ``mlp_only_layers`` or
(i + 1) is not a multiple of ``decoder_sparse_step``) and ``DeepseekV2DecoderLayer`` (layer i has
experts when ``n_routed_experts`` is set, i ≥ ``first_k_dense_replace`` and i is a multiple of
``moe_layer_freq``) decide. DeepSeek's ``num_key_value_heads`` plays no part in latent attention
(each head's keys and values come from the latent) and is ignored, as HF does; a
``v_head_dim`` other than ``qk_nope_head_dim`` is refused (no published model has one); routing
details (``topk_method``, ``scoring_func``, ``routed_scaling_factor``) are element-wise work on
B·T·n_e scores, not counted; ``n_group`` and ``topk_group`` (node-limited routing, DeepSeek-V3
§2.1.2: a token's experts among the top ``topk_group`` of ``n_group`` groups) limit the nodes an
expert-parallel all-to-all sends a token to (``expert_groups``, ``groups_per_token``). DeepSeek-V3's multi-token-prediction module
(``num_nextn_predict_layers``: one more layer, used in training and for speculative decoding)
is not part of the model that a prefill runs and is not counted (DeepSeek-V3 reports 671B
parameters without it, 685B with it); the shape keeps the number (``mtp_layers``). Its router's
``e_score_correction_bias`` (n_e numbers per MoE layer, adjusted by a rule during training,
DeepSeek-V3 §2.1.2, a buffer in HF's ``DeepseekV3TopkRouter``) is not counted either. YaRN's
``rope_scaling`` changes the rotary frequencies only: accepted, no change to cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError
from .counts import LIMITS, REQUIRED_SHAPE, check_count
from .hf_keys import ConfigKeys
from .hf_recent import RECENT_FAMILIES
from .hf_layers import dense_layers, head_dim_of, layer_types, qwen_experts, short

__all__ = ["SUPPORTED_MODEL_TYPES", "config_fields"]

_GATED = ("llama", "mistral", "mixtral", "qwen2", "phi3")
SUPPORTED_MODEL_TYPES = (*_GATED, "gemma", "gemma2", "opt", "gpt2", "gpt_neox", "qwen2_moe",
                         "deepseek_v2", "deepseek_v3", "deepseek_v32", *RECENT_FAMILIES)


def _gated(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", True, "biases on q, k, v and o projections")
    c.reject("mlp_bias", True, "biases on the MLP projections")
    out = dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
               num_kv_heads=c.int("num_key_value_heads", heads),
               head_dim=head_dim_of(c, D_, heads),
               intermediate_size=c.int("intermediate_size"), vocab_size=c.int("vocab_size"),
               max_position=c.int("max_position_embeddings"),
               activation=c.activation("hidden_act", "silu"),
               tied_embeddings=c.bool("tie_word_embeddings", False),
               qkv_bias=model_type in ("qwen2", "qwen2_moe"))
    if model_type == "mixtral":
        out.update(num_experts=c.int("num_local_experts"),
                   experts_per_token=c.int("num_experts_per_tok"))
    out.update(_window(c, model_type, out["num_layers"]))
    return out


def _gemma(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Gemma and Gemma-2: head_dim apart from D/n_q (GemmaConfig's default 256), GeGLU (the
    tanh GELU), tied embeddings, embeddings scaled by sqrt(D); Gemma-2 norms each sublayer's
    output too and alternates local and global attention (Gemma 2, arXiv 2408.00118, §2)."""
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", True, "biases on q, k, v and o projections")
    act_key = "hidden_activation" if c.config.get("hidden_activation") is not None \
        else "hidden_act"
    layers = c.int("num_hidden_layers")
    return dict(hidden_size=D_, num_layers=layers, num_heads=heads,
                num_kv_heads=c.int("num_key_value_heads", heads),
                head_dim=c.int("head_dim", 256), intermediate_size=c.int("intermediate_size"),
                vocab_size=c.int("vocab_size"), max_position=c.int("max_position_embeddings"),
                activation=c.activation(act_key, "gelu_pytorch_tanh"),
                tied_embeddings=c.bool("tie_word_embeddings", True), embed_scale=True,
                post_norms=model_type == "gemma2", **_window(c, model_type, layers))


# HF's default window of each family that has one (None: a window only where the config sets one)
_WINDOW_DEFAULT = {"mistral": 4096, "mixtral": None, "phi3": None, "qwen2": 4096, "gemma2": 4096,
                   "qwen2_moe": 4096}
_QWEN2 = ("qwen2", "qwen2_moe")  # use_sliding_window and max_window_layers


def _window(c: ConfigKeys, model_type: str, layers: int) -> dict[str, Any]:
    """The sliding window and the layers that have it, as the family's HF code decides."""
    if model_type not in _WINDOW_DEFAULT:
        return {}
    if model_type in _QWEN2 and not c.bool("use_sliding_window", False):
        return {}
    key = "sliding_window"
    size = c.config[key] if key in c.config else _WINDOW_DEFAULT[model_type]
    if size is None:
        return {}
    size = check_count(size, f"{c.where}: {key}", LIMITS["sliding_window"])
    if c.config.get("layer_types") is not None:
        local, pattern = layer_types(c, layers), "as the config's layer_types"
    elif model_type in _QWEN2:
        first = c.int("max_window_layers", 28)
        local = max(0, layers - first)
        pattern = f"layers {first} to {layers - 1} (max_window_layers {first})"
    elif model_type == "gemma2":
        local, pattern = (layers + 1) // 2, "local and global alternate, the first local"
    else:
        local, pattern = layers, "every layer"
    if local == 0:
        return {}
    return dict(sliding_window=size, window_layers=local, layer_pattern=pattern)


def _opt(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    D_, heads, positions = c.int("hidden_size"), c.int("num_attention_heads"), \
        c.int("max_position_embeddings")
    c.reject("do_layer_norm_before", False, "post-LayerNorm OPT (no final norm)")
    c.reject("_remove_final_layer_norm", True, "OPT without its final LayerNorm")
    if c.int("word_embed_proj_dim", D_) != D_:
        raise SpecError(f"{c.where}: word_embed_proj_dim",
                        f"not supported: must equal hidden_size {D_} (no project_in/out)",
                        c.config["word_embed_proj_dim"])
    return dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
                num_kv_heads=heads, head_dim=head_dim_of(c, D_, heads),
                intermediate_size=c.int("ffn_dim"), vocab_size=c.int("vocab_size"),
                max_position=positions, position_table_rows=positions + 2,
                activation=c.activation("activation_function", "relu"),
                tied_embeddings=c.bool("tie_word_embeddings", True), **_PLAIN_LEARNED)


def _gpt2(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    D_, heads, positions = c.int("n_embd"), c.int("n_head"), c.int("n_positions")
    return dict(hidden_size=D_, num_layers=c.int("n_layer"), num_heads=heads,
                num_kv_heads=heads, head_dim=head_dim_of(c, D_, heads),
                intermediate_size=c.int("n_inner", 4 * D_), vocab_size=c.int("vocab_size"),
                max_position=positions, position_table_rows=positions,
                activation=c.activation("activation_function", "gelu_new"),
                tied_embeddings=c.bool("tie_word_embeddings", True), **_PLAIN_LEARNED)


def _gpt_neox(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    D_, heads = c.int("hidden_size"), c.int("num_attention_heads")
    c.reject("attention_bias", False, "GPT-NeoX attention without biases")
    return dict(hidden_size=D_, num_layers=c.int("num_hidden_layers"), num_heads=heads,
                num_kv_heads=heads, head_dim=head_dim_of(c, D_, heads),
                intermediate_size=c.int("intermediate_size"), vocab_size=c.int("vocab_size"),
                max_position=c.int("max_position_embeddings"),
                activation=c.activation("hidden_act", "gelu"),
                tied_embeddings=c.bool("tie_word_embeddings", False),
                gated_mlp=False, norm="layer", linear_bias=True)


def _qwen2_moe(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """Qwen2-MoE: Qwen2's attention (Q, K, V biases, its window switches); in each MoE layer
    ``num_experts`` routed experts of ``moe_intermediate_size`` and one shared expert of
    ``shared_expert_intermediate_size`` behind a sigmoid gate (HF ``Qwen2MoeSparseMoeBlock``);
    the other layers dense, of ``intermediate_size`` (``Qwen2MoeDecoderLayer``)."""
    out = _gated(c, model_type)
    return {**out, **qwen_experts(c, out["intermediate_size"], out["num_layers"], shared=True)}


def _deepseek(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """DeepSeek-V2 and V3: multi-head latent attention (``kv_lora_rank``, ``q_lora_rank`` or
    null, ``qk_rope_head_dim``, ``qk_nope_head_dim`` = ``v_head_dim``), no biases; MoE layers
    of ``n_routed_experts`` and ``n_shared_experts`` of ``moe_intermediate_size`` each from layer
    ``first_k_dense_replace`` on, every ``moe_layer_freq``-th; dense layers of
    ``intermediate_size`` (HF ``modeling_deepseek.py``)."""
    D_, heads, layers = c.int("hidden_size"), c.int("num_attention_heads"), \
        c.int("num_hidden_layers")
    c.reject("attention_bias", True, "biases on the latent attention's projections")
    nope, value = c.int("qk_nope_head_dim"), c.int("v_head_dim")
    if value != nope:
        raise SpecError(f"{c.where}: v_head_dim", f"not supported: must equal qk_nope_head_dim "
                        f"{nope} (one head dimension H)", value)
    q_rank = 0 if c.config.get("q_lora_rank") is None else c.int("q_lora_rank")
    width = c.int("intermediate_size")
    out = dict(hidden_size=D_, num_layers=layers, num_heads=heads, num_kv_heads=heads,
               head_dim=nope, intermediate_size=width, vocab_size=c.int("vocab_size"),
               max_position=c.int("max_position_embeddings"),
               activation=c.activation("hidden_act", "silu"),
               tied_embeddings=c.bool("tie_word_embeddings", False),
               kv_lora_rank=c.int("kv_lora_rank"), q_lora_rank=q_rank,
               rope_head_dim=c.int("qk_rope_head_dim"),
               mtp_layers=c.count("num_nextn_predict_layers"))
    if c.config.get("n_routed_experts") is None:
        return out  # DeepSeek's code: no routed experts, every layer dense
    experts = c.int("n_routed_experts")
    first, freq = c.count("first_k_dense_replace"), c.int("moe_layer_freq", 1)
    moe = [i for i in range(layers) if i >= first and i % freq == 0]
    if not moe:
        return out
    shared = c.count("n_shared_experts")
    expert = c.int("moe_intermediate_size")
    words = "every layer" if len(moe) == layers else (
        f"{len(moe)} of {layers} layers (first_k_dense_replace {first}, moe_layer_freq {freq})")
    out.update(num_experts=experts, experts_per_token=c.int("num_experts_per_tok"),
               intermediate_size=expert, shared_experts=shared,
               shared_expert_size=expert if shared else 0, moe_pattern=words,
               expert_groups=c.int("n_group", 1), groups_per_token=c.int("topk_group", 1),
               **dense_layers(width, moe, layers))
    return out


def _deepseek_v32(c: ConfigKeys, model_type: str) -> dict[str, Any]:
    """DeepSeek-V3.2: DeepSeek-V3's layers with DeepSeek Sparse Attention's indexer
    (``index_topk``, ``index_n_heads``, ``index_head_dim``; DeepSeek-V3.2-Exp's
    ``inference/model.py``, class ``Indexer``; :mod:`roofline.derive.sparse_attention`)."""
    return dict(_deepseek(c, model_type), index_topk=c.int("index_topk"),
                index_heads=c.int("index_n_heads"), index_head_dim=c.int("index_head_dim"))


_PLAIN_LEARNED = dict(gated_mlp=False, norm="layer", position="learned", linear_bias=True)
_FAMILIES: dict[str, Callable[[ConfigKeys, str], dict[str, Any]]] = {
    **{t: _gated for t in _GATED}, "gemma": _gemma, "gemma2": _gemma, "opt": _opt,
    "gpt2": _gpt2, "gpt_neox": _gpt_neox, "qwen2_moe": _qwen2_moe, "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek, "deepseek_v32": _deepseek_v32, **RECENT_FAMILIES}


def config_fields(config: Mapping[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
    """The family of a parsed ``config.json`` (its ``model_type``) and the fields of its shape;
    a missing, mistyped or unsupported key is a :class:`SpecError` naming the file and key."""
    model_type = config.get("model_type")
    if model_type is None:
        raise SpecError(f"{path}: model_type", "missing required key")
    if not isinstance(model_type, str):
        raise SpecError(f"{path}: model_type",
                        f"must be a string, one of: {', '.join(SUPPORTED_MODEL_TYPES)}",
                        short(model_type))
    if model_type not in _FAMILIES:
        raise SpecError(f"{path}: model_type",
                        f"unsupported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}; describe "
                        f"the model in a shape file (.toml, models/README.md) with "
                        f"{', '.join(REQUIRED_SHAPE)} and a source", model_type)
    return model_type, _FAMILIES[model_type](ConfigKeys(config, path), model_type)
