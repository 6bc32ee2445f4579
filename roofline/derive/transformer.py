"""A transformer's prefill as a list of operations, each with FLOPs and HBM bytes.

Per layer (× L): norm; QKV projection D → (n_q + 2·n_kv)·H; rotary position encoding; attention;
output projection n_q·H → D; residual add; norm; MLP (gated: gate and up D → 2F, SiLU·up, down
F → D; plain: D → F, activation, F → D; MoE: a router D → n_e and n_a of n_e experts per token);
residual add. Then the final norm and the LM head (D → V) on the last position of each sequence
only: prefill needs just the next token's logits. The embedding lookup reads B·T rows of the
table. Sources: the pre-normalisation decoder layer of Llama (Touvron et al. 2023, arXiv
2302.13971, §2.2: RMSNorm, SwiGLU, rotary embeddings) in the operation order of Hugging Face
transformers' ``models/llama/modeling_llama.py`` (``LlamaDecoderLayer``); grouped-query attention
(Ainslie et al. 2023, arXiv 2305.13245); the MoE router and top-n_a experts of Mixtral (Jiang et
al. 2024, arXiv 2401.04088, §2.1); FLOPs and parameters per operation from the scaling-book, "All
the Transformer Math You Need to Know"; a prefill keeps only the last position's logits
(scaling-book, "All About Transformer Inference"). LayerNorm, learned positions and biases
follow OPT (Zhang et al. 2022, arXiv 2205.01068) and GPT-3 (Brown et al. 2020, arXiv 2005.14165,
§2.1). Sliding-window layers (Mistral, Gemma-2's local layers) take their attention from
:mod:`roofline.derive.window`, with their own count of layers; Gemma multiplies the embeddings
by sqrt(D) and Gemma-2 also norms each sublayer's output before the residual add (Gemma 2,
arXiv 2408.00118, §2; HF ``modeling_gemma2.py``). Multi-head latent attention (DeepSeek-V2)
takes its projections, attention and parameters from :mod:`roofline.derive.mla`; shared
experts and dense layers beside MoE ones (DeepSeekMoE, Qwen2-MoE) their MLP operations, each
with its own count of layers, from :mod:`roofline.derive.moe`. Qwen3 and Gemma-3 norm each
query and key head after the QKV projection (QK-norm: :func:`roofline.derive.layers.qk_norm_op`;
Gemma 3, arXiv 2503.19786, §2.1; HF ``modeling_qwen3.py``); gpt-oss adds a learned sink logit per
query head to every softmax's denominator (HF ``modeling_gpt_oss.py``, ``sinks``): its n_q
parameters a layer are counted; its work joins the softmax's, which is not counted
(FlashAttention-2's convention, :mod:`roofline.derive.attention`).

Element-wise FLOP counts are conventions (they never move a crossover: these operations are
memory-bound): RMSNorm 4 per element (square, accumulate, scale, gain), LayerNorm 7 (mean,
subtract, square, accumulate, scale, gain, shift), rotary encoding 3 (two products and a sum),
SiLU 4, GELU 8 (tanh form), ReLU 1, residual add 1, a gated product 1, the embedding scale 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache

from sympy import Expr, Integer

from ..symbols import B, D, H, L, L_lin, T, V, b_a, b_e, b_w, n_kv, n_q
from . import (attention, layers, linear_attention, mla, moe, projection, shapes,
               sparse_attention, window)
from .architecture import DEFAULT_ATTENTION, Architecture
from .entry import Entry
from .layers import (ROPE_FLOPS, Operation, elementwise_op, fused, layer_mlp, mlp_parameters,
                     norm_op, projection_op, qk_l2_op, qk_norm_op, total_bytes, total_flops)

__all__ = ["Architecture", "Operation", "layer_operations", "edge_operations",
           "attention_operations", "prefill_operations", "mlp_parameters", "parameter_count",
           "active_parameter_count", "edge_element", "weight_bytes", "total_flops", "total_bytes",
           "entries"]

SOURCE = ("Llama (arXiv 2302.13971) §2.2 and HF transformers modeling_llama.py (the operations "
          "of a decoder layer, in order); scaling-book 'All the Transformer Math You Need to "
          "Know' (FLOPs, parameters) and 'All About Transformer Inference' (prefill keeps the "
          "last position's logits)")
# The cache levels of the default entries (an H100's: an L2 behind the SMs), as the tool
# evaluates a device that gives them (roofline.evaluate.setting.device_caches)
DEFAULT_CACHES = ("l2",)
MIXTRAL = "Mixtral (Jiang et al. 2024, arXiv 2401.04088) §2.1 (router, n_a of n_e experts)"
QUANTIZED = ("GPTQ (Frantar et al. 2023, arXiv 2210.17323) and AWQ (Lin et al. 2024, arXiv "
             "2306.00978): the decoder layers' linear weights quantized, the embeddings and LM "
             "head kept in 16 bits; HF transformers quantization configs (modules_to_not_convert)")
_SIGMOID_FLOPS = 4  # per element, as SiLU's (the conventions above)
FUSION = ("Data Movement Is All You Need (Ivanov et al. 2021, arXiv 2007.00072) §4: the "
          "element-wise operators fused into their neighbours move no activations through HBM")


def layer_operations(arch: Architecture, rows: Expr,
                     attention_op: Operation | Sequence[Operation],
                     recurrence: Operation | None = None) -> list[Operation]:
    """One layer's operations over ``rows`` token rows, with the given attention operation (or
    operations, each carrying its own count of layers: global and sliding-window layers).
    An operation that already carries a count of layers other than 1 keeps it (the MLP of
    a model with dense and MoE layers, :mod:`roofline.derive.moe`); the others count L. In a
    hybrid (``arch.linear_attention``) the attention's operations count the L − L_lin
    full-attention layers, and the L_lin linear-attention layers run their own projections
    around ``recurrence`` (:func:`roofline.derive.linear_attention.layer_operations`)."""
    split = not isinstance(attention_op, Operation)
    attention_ops = list(attention_op) if split else [attention_op]
    mixer = _attention_block(arch, rows, attention_ops)
    if arch.linear_attention:
        assert recurrence is not None, "a hybrid's layers need the linear recurrence"
        mixer = [replace(op, count=L - L_lin) for op in mixer]
        mixer += [replace(op, count=L_lin) for op in linear_attention.layer_operations(
            rows, recurrence)]
    mlp = moe.mlp_operations(arch, rows) if moe.layered(arch) else layer_mlp(arch, rows)
    post = arch.post_norms  # Gemma-2: the sublayer's output is normed before the residual add
    ops = [norm_op(arch, "attn_norm", rows),
           *mixer,
           *([norm_op(arch, "post_attn_norm", rows)] if post else []),
           elementwise_op("residual_add.attn", 1, rows * D, 2 * rows * D, rows * D),
           norm_op(arch, "mlp_norm", rows),
           *mlp,
           *([norm_op(arch, "post_mlp_norm", rows)] if post else []),
           elementwise_op("residual_add.mlp", 1, rows * D, 2 * rows * D, rows * D)]
    ops = [op if (split and op.kind == "attention") or op.count != 1 else replace(op, count=L)
           for op in ops]
    return fused(arch, ops)


def _attention_block(arch: Architecture, rows: Expr,
                     attention_ops: list[Operation]) -> list[Operation]:
    """The attention sublayer from its projections to the output projection: latent
    attention's projections (:func:`roofline.derive.mla.projections`), or the QKV projection
    (with Qwen3-Next's output gate: n_q·H more outputs), the QK-norm, the rotary encoding; the
    attention; the output gate's sigmoid and product (4 + 1 FLOPs an element, the attention's
    output and the gate read); the output projection."""
    ops: list[Operation] = []
    if arch.mla:  # latent projections and the rotary part of the heads
        ops += mla.projections(arch, rows)
        if arch.sparse_attention:  # the indexer's
            ops += sparse_attention.indexer_operations(rows)
    else:
        qkv = (n_q * (2 if arch.attn_gate else 1) + 2 * n_kv) * H
        ops.append(projection_op("qkv_proj", rows, D, qkv, arch.qkv_bias or arch.linear_bias))
        if arch.qk_norm:
            ops.append(qk_norm_op(rows))
        # Llama 4: the rotary encoding and the L2 norm on its local layers only
        rotary = window.layer_split(arch)[1] if arch.local_rope else Integer(1)
        if arch.qk_l2_norm:
            ops.append(replace(qk_l2_op(rows), count=rotary))
        if arch.position == "rope":
            rotated = rows * (n_q + n_kv) * H
            ops.append(replace(elementwise_op("rope", ROPE_FLOPS, rotated, rotated, rotated),
                               count=rotary))
    ops += attention_ops
    if arch.attn_gate:
        gated = rows * n_q * H
        ops.append(elementwise_op("attn_gate", _SIGMOID_FLOPS + 1, gated, 2 * gated, gated))
    return [*ops, projection_op("o_proj", rows, n_q * H, D, arch.linear_bias)]


def edge_operations(arch: Architecture, rows: Expr, positions: Expr) -> list[Operation]:
    """The embedding lookup (and learned positions) before the layers; final norm and LM head on
    the last position of each of the B sequences after them."""
    table = positions * D if arch.position == "learned" else Integer(0)
    added = rows * D if arch.position == "learned" else Integer(0)
    element = edge_element(arch)
    embed = Operation("embedding", "embedding", added,
                      element * (rows * D + table) + b_a * (rows * D + 2 * added))
    head = projection.flops(B, D, V), projection.hbm_bytes(B, D, V).xreplace({b_w: element})
    # Gemma: the embeddings are multiplied by sqrt(D), one product per element
    scale = [elementwise_op("embed_scale", 1, rows * D, rows * D, rows * D)] \
        if arch.embed_scale else []
    return fused(arch, [embed, *scale, norm_op(arch, "final_norm", B),
                         Operation("lm_head", "lm_head", *head,
                                   shape=shapes.library_efficiency(B, V))])


def attention_operations(arch: Architecture, mode: str, smooth: bool = False,
                         caches: Sequence[str] = ()) -> Operation | list[Operation]:
    """The prefill's attention in ``mode`` behind the cache levels ``caches``: one operation
    (every layer alike) or, with a sliding window, the global and the windowed layers apart
    (:func:`roofline.derive.layers.attention_operations`); multi-head latent attention's
    (:func:`roofline.derive.mla.attention_operations`)."""
    if arch.sparse_attention:
        return sparse_attention.attention_operations(arch, mode, smooth, caches)
    if arch.mla:
        return mla.attention_operations(arch, mode, smooth, caches)
    return layers.attention_operations(arch, mode, smooth, caches)


def prefill_operations(arch: Architecture = Architecture(), mode: str = "tiled",
                       smooth: bool = False, caches: Sequence[str] = ()) -> list[Operation]:
    """Every operation of a prefill of B sequences of T tokens (attention in ``mode``, behind
    the cache levels ``caches``). Derived once per argument set (the crossovers ask for each
    mode several times); a new list each call."""
    return list(_prefill_operations(arch, mode, smooth, tuple(caches)))


@cache
def _prefill_operations(arch: Architecture, mode: str, smooth: bool,
                        caches: tuple[str, ...]) -> tuple[Operation, ...]:
    attn = attention_operations(arch, mode, smooth, caches)
    recurrence = linear_attention.recurrence(mode, smooth) if arch.linear_attention else None
    return (*layer_operations(arch, B * T, attn, recurrence), *edge_operations(arch, B * T, T))


def parameter_count(arch: Architecture = Architecture()) -> Expr:
    """Parameters of the model: weights and biases of every layer, norms, embeddings, head
    (:func:`roofline.derive.layers.model_parameters`). Latent attention's are
    :func:`roofline.derive.mla.attention_parameters`; a mixture of experts' MLPs
    :func:`roofline.derive.moe.mlp_parameters`."""
    attn = mla.attention_parameters(arch) if arch.mla else layers.attention_parameters(arch)
    if arch.sparse_attention:
        attn += sparse_attention.indexer_parameters()
    # a hybrid's L_lin linear-attention layers hold their own in place of the attention's
    linear = L_lin * (linear_attention.layer_parameters() - attn) if arch.linear_attention \
        else 0
    if moe.layered(arch):
        return layers.model_parameters(arch, attn, mlp_params=moe.mlp_parameters(arch)) + linear
    mlp = moe.routed_parameters(arch) if arch.moe else mlp_parameters(arch)
    return layers.model_parameters(arch, attn, mlp) + linear


def active_parameter_count(arch: Architecture = Architecture(moe=True)) -> Expr:
    """Parameters a token uses: :func:`parameter_count` less the routed experts it does not
    reach (:func:`roofline.derive.moe.unused_parameters`). A dense model's are all.

    >>> active_parameter_count(Architecture())
    2*D*V + D + L*(3*D*F + D*H*n_q + D*H*(2*n_kv + n_q) + 2*D)
    """
    total = parameter_count(arch)
    return total - moe.unused_parameters(arch) if arch.moe else total


def edge_element(arch: Architecture) -> Expr:
    """Bytes of one element of the embedding table and the LM head: b_e in a quantized
    checkpoint (its method leaves them at the checkpoint's 16-bit width: GPTQ, AWQ and
    bitsandbytes skip ``lm_head``, compressed-tensors lists it in ``ignore``, DeepSeek-V3's
    fp8 keeps ``embed_tokens`` and ``lm_head`` in bf16), else b_w like every weight."""
    return b_e if arch.quantized else b_w


def weight_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of all weights at b_w bytes each; a quantized checkpoint's embedding table and LM
    head at b_e (:func:`edge_element`).

    >>> from sympy import expand
    >>> expand(weight_bytes(Architecture(quantized=True)) - weight_bytes(Architecture()))
    2*D*V*b_e - 2*D*V*b_w
    """
    if not arch.quantized:
        return b_w * parameter_count(arch)
    edges = layers.embedding_parameters(arch)
    return b_w * (parameter_count(arch) - edges) + b_e * edges


def entries() -> list[Entry]:
    arch = Architecture()
    default = ("Llama-style: gated SiLU MLP, RMSNorm, rotary positions, no biases, untied head",
               "B sequences of T tokens; LM head on the last position only")
    out = [Entry("transformer.params", parameter_count(arch), "parameters of a dense model",
                 "1", SOURCE, default[:1]),
           Entry("transformer.params.moe", parameter_count(Architecture(moe=True)),
                 "parameters of a mixture-of-experts model (n_e experts of width F)", "1",
                 f"{SOURCE}; {MIXTRAL}",
                 ("as the dense model, with n_e gated experts and a router",)),
           Entry("transformer.weight_bytes", weight_bytes(arch), "bytes of all weights",
                 "bytes", SOURCE, default[:1]),
           Entry("transformer.weight_bytes.quantized", weight_bytes(Architecture(quantized=True)),
                 "bytes of all weights of a quantized checkpoint", "bytes",
                 f"{SOURCE}; {QUANTIZED}",
                 (*default[:1], "layers at b_w (with their scales), the embedding table and "
                  "the LM head left unquantized at b_e"))]
    for mode in attention.MODES:
        # the default mode as the tool evaluates it on a GPU with an L2 (the bytes at HBM, the
        # re-reads the L2 serves left out); the papers' schedules by their own names, every
        # re-read counted at HBM as the papers count them
        own = mode == DEFAULT_ATTENTION
        ops = prefill_operations(arch, mode, caches=DEFAULT_CACHES if own else ())
        fl, by = total_flops(ops), total_bytes(ops)
        suffix = "" if own else f".{mode}"
        note = (*default, f"attention: {mode}, behind an L2 (the default)" if own
                else f"attention: {mode}, every re-read at HBM (no cache)")
        out += [
            Entry(f"prefill.flops{suffix}", fl, f"FLOPs of a whole prefill ({mode} attention)",
                  "FLOP", SOURCE, note),
            Entry(f"prefill.bytes{suffix}", by,
                  f"HBM bytes of a whole prefill ({mode} attention)", "bytes", SOURCE, note),
            Entry(f"prefill.intensity{suffix}", fl / by,
                  f"arithmetic intensity of a whole prefill ({mode} attention)", "FLOP/byte",
                  SOURCE, note),
        ]
    # the element-wise work folded into the kernels beside it (--fusion elementwise): the same
    # FLOPs, fewer bytes
    ops = prefill_operations(replace(arch, fusion="elementwise"), DEFAULT_ATTENTION,
                             caches=DEFAULT_CACHES)
    fl, by = total_flops(ops), total_bytes(ops)
    note = (*default, f"attention: {DEFAULT_ATTENTION}, behind an L2 (the default)",
            "element-wise work folded into the neighbouring kernels (--fusion elementwise): "
            "its activations make no HBM round trip; FLOPs as prefill.flops")
    return out + [
        Entry("prefill.bytes.fused", by, "HBM bytes of a whole prefill, element-wise work "
              "fused", "bytes", f"{SOURCE}; {FUSION}", note),
        Entry("prefill.intensity.fused", fl / by, "arithmetic intensity of a whole prefill, "
              "element-wise work fused", "FLOP/byte", f"{SOURCE}; {FUSION}", note)]
