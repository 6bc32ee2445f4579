"""The structure of a decoder-only transformer and the names the derivations share, in plain
Python (no SymPy): what a model file is read into and what the evaluation core keys its derived
expressions by. The sizes (D, F, n_q, ...) stay symbols in :mod:`roofline.derive.transformer`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Architecture", "ATTENTION_MODES", "DEFAULT_ATTENTION", "FUSIONS", "KINDS", "WINDOWS",
           "WINDOW_KINDS",
           "KV_CACHES", "MLA_DECODES", "MOE_LAYERS", "PIPELINES", "NAIVE_KERNELS", "kernels"]

# Attention modes of :mod:`roofline.derive.attention`; ``kernel`` is the default.
ATTENTION_MODES = ("naive", "tiled", "tiled_fa2", "kernel", "ideal")
DEFAULT_ATTENTION = "kernel"
# Element-wise work: separate kernels through HBM, or folded into the neighbouring GEMM or
# attention kernel (:mod:`roofline.derive.transformer`).
FUSIONS = ("none", "elementwise")
# Kinds of operation in a prefill, in the order of the tables and figures.
KINDS = ("projection", "attention", "elementwise", "embedding", "lm_head")
# Which layers attend within a sliding window of W tokens (:mod:`roofline.derive.window`):
# none, every layer (Mistral-7B-v0.1), or L_w of the L layers (Gemma-2, Qwen2's top layers).
WINDOWS = ("none", "all", "some")
# What a local layer attends to (:mod:`roofline.derive.window`, :mod:`roofline.derive.chunked`):
# the last W keys, or its own chunk of C_att tokens up to itself (Llama 4)
WINDOW_KINDS = ("sliding", "chunked")
# What a windowed layer's KV cache keeps: the last W tokens (a rolling buffer) or all T.
KV_CACHES = ("window", "full")
# How a decode step of multi-head latent attention runs (:mod:`roofline.derive.mla`): attention
# over the latent with W^UK, W^UV absorbed (DeepSeek-V2 §2.1.2), or per-head keys and values
# re-expanded from the latent cache at every step.
MLA_DECODES = ("absorbed", "naive")
# Which layers of a mixture-of-experts model have experts (:mod:`roofline.derive.moe`): every
# layer (Mixtral, Qwen1.5-MoE), or L_moe of the L layers, the others dense (DeepSeek's first
# layers).
MOE_LAYERS = ("all", "some")
# How one prompt crosses N_pp pipeline stages (:mod:`roofline.derive.pipeline`): in chunks that
# fill the pipeline (the bound: at least a stage's mean share of the work), or whole through
# each stage in turn (DistServe's inter-op instance: the stages' sum and the sends).
PIPELINES = ("chunked", "whole")


@dataclass(frozen=True)
class Architecture:
    """The structure of a decoder-only transformer; sizes stay symbols (D, F, n_q, ...)."""

    gated_mlp: bool = True
    moe: bool = False
    norm: str = "rms"  # "rms" | "layer"
    activation: str = "silu"  # "silu" | "gelu" | "relu"
    position: str = "rope"  # "rope" | "learned"
    qkv_bias: bool = False
    linear_bias: bool = False  # every linear layer has a bias (OPT, GPT-2)
    tied_embeddings: bool = False
    window: str = "none"  # one of WINDOWS
    kv_cache: str = "window"  # one of KV_CACHES (meaningful only with a window)
    post_norms: bool = False  # a norm after attention and after the MLP too (Gemma-2)
    embed_scale: bool = False  # embeddings multiplied by sqrt(D), element-wise (Gemma)
    fusion: str = "none"  # one of FUSIONS: how the element-wise operations are run
    # --- issue 12: latent attention, shared experts, dense layers (appended) ---
    mla: bool = False  # multi-head latent attention (DeepSeek-V2): a latent KV of d_c + H_r
    q_lora: bool = False  # MLA queries through a latent of rank d_cq (False: W^Q directly)
    mla_decode: str = "absorbed"  # one of MLA_DECODES (meaningful only with mla)
    moe_layers: str = "all"  # one of MOE_LAYERS (meaningful only with moe)
    shared_experts: bool = False  # n_sh shared experts of width F_sh in every MoE layer
    shared_gate: bool = False  # a sigmoid gate D → 1 on the shared experts' output (Qwen2-MoE)
    # How it runs, for the crossovers (:mod:`roofline.derive.crossovers`): on one device, or
    # one device's share under parallelism (the degrees N_tp, N_pp, N_ep, N_cp as symbols)
    parallel: bool = False
    # A quantized checkpoint: its layers' weights at b_w, its embedding table and LM head (left
    # unquantized by every method :mod:`roofline.specs.quantization` reads) at b_e
    quantized: bool = False
    # How a prompt crosses the pipeline's stages, one of PIPELINES (meaningful only with
    # parallel: one device's share is a stage's mean share under "chunked")
    pipeline: str = "chunked"
    # --- issue 31: this year's families (appended) ---
    # a per-head RMSNorm on the queries and keys after their projection, before the rotary
    # encoding (Qwen3, Gemma-3: q_norm, k_norm of H gains each)
    qk_norm: bool = False
    # a learned sink logit per query head in every softmax's denominator (gpt-oss: n_q
    # parameters a layer; element-wise work inside the attention kernel)
    sinks: bool = False
    # L_lin of the L layers are Gated DeltaNet linear attention, the others full attention
    # (Qwen3-Next, :mod:`roofline.derive.linear_attention`)
    linear_attention: bool = False
    # a sigmoid gate on the attention's output, its n_q·H values from the query projection
    # (Qwen3-Next's attn_output_gate)
    attn_gate: bool = False
    # DeepSeek Sparse Attention on latent attention: a lightning indexer picks each query's
    # k_top keys (DeepSeek-V3.2, :mod:`roofline.derive.sparse_attention`)
    sparse_attention: bool = False
    # the local layers' kind, one of WINDOW_KINDS (meaningful only with a window)
    window_kind: str = "sliding"
    # Llama 4: the rotary encoding on the local (chunked) layers only, the global layers
    # without a positional encoding (NoPE), and there a weightless L2 norm of each query and
    # key head (use_qk_norm)
    local_rope: bool = False
    qk_l2_norm: bool = False
    # --- issue 26: the memory of a pipeline's busiest stage (appended) ---
    # with parallel: the layers split over N_pp ≥ 2 stages, so that one device holds the
    # weights and KV cache of its stage's layers and the edge (embedding, or norm and LM head)
    # of its stage (:func:`roofline.derive.pipeline.busiest_stage_bytes`); False: N_pp = 1
    staged: bool = False


# --- the kernels an operation launches (the estimate's launch overhead) ---------------------
NAIVE_KERNELS = 4  # QKᵀ matmul, mask add, softmax, matmul with V (HF eager attention)


def kernels(name: str, kind: str, fusion: str) -> int:
    """Kernels one instance of an operation (``name``, ``kind``) launches under ``fusion``:
    none for an element-wise one folded into its neighbour, four for naive attention (HF
    transformers' eager_attention_forward: matmul, mask add, softmax, matmul), one otherwise
    (:mod:`roofline.derive.overhead`).

    >>> kernels("attn_norm", "elementwise", "none"), kernels("attn_norm", "elementwise",
    ...                                                      "elementwise")
    (1, 0)
    """
    if kind == "elementwise" and fusion == "elementwise":
        return 0
    if kind == "attention" and name.startswith("attention.naive"):
        return NAIVE_KERNELS
    return 1

