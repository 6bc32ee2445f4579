"""The peak device memory of a prefill beyond its weights and KV cache: the live activations
and the attention kernel's workspace, and the longest prompt (or prefill chunk) that fits.

Inference keeps no activations for a backward pass: a layer's tensors are freed when the next
layer starts, so the peak is one layer's (every layer alike) or the LM head's after the last,
with the weights (:func:`roofline.derive.transformer.weight_bytes`) and the KV cache of every
layer (:func:`roofline.derive.decode.model_kv_cache_bytes`) resident. A layer runs in phases,
each with its own live set; the peak is their ``Max``. The live sets follow vLLM's decoder
layer (``model_executor/models/llama.py``): ``LlamaDecoderLayer`` keeps the residual stream
across the layer (the add and the norm fused, in place) and holds each sublayer's input while
the sublayer runs (``hidden_states = self.self_attn(...)``, ``= self.mlp(...)``);
``LlamaAttention.forward`` keeps ``qkv`` (and its views q, k, v) and the attention's output as
locals until its ``o_proj`` output is returned; ``LlamaMLP.forward`` keeps ``gate_up`` (one
tensor of 2F from ``MergedColumnParallelLinear``) while ``SiluAndMul`` writes a new one of F
and ``down_proj`` one of D. Per sequence of q query rows (q = T, or T_chunk in chunked prefill)
and k keys, in elements of b_a bytes unless said, x = B·q rows:

- ``attention`` (fused modes: tiled, tiled_fa2, kernel, ideal): residual x·D, normed input x·D,
  QKV x·(n_q + 2·n_kv)·H, the output x·n_q·H, and FlashAttention's per-row logsumexp B·n_q·q
  in fp32 (4 bytes; FlashAttention-2, arXiv 2307.08691, Algorithm 1 returns O and the logsumexp
  L; ``csrc/flash_attn/flash_api.cpp`` ``mha_fwd``: ``softmax_lse = torch::empty({batch_size,
  num_heads, seqlen_q}, at::kFloat)``);
- ``attention.softmax`` and ``attention.pv`` (naive): the softmax is not in place: it writes the
  probabilities P beside the scores S (FlashAttention Algorithm 0: S written, read, P written;
  HF transformers' eager attention ``attn_weights = nn.functional.softmax(attn_weights, dim=-1,
  dtype=torch.float32).to(query.dtype)``, a new tensor while the old one is still bound), so two
  score matrices of B·n_q·q·k at the softmax, then P with the output at PV. HF's transient fp32
  copy of P (4 bytes a score beside the two at b_a) is an engine's extra, not counted: the mode
  is Algorithm 0 at b_a. A model's largest score matrix is
  :func:`roofline.derive.local.largest_scores` (a global layer's T × T, else the band's);
- ``o_proj``: the attention phase's tensors less its workspace, plus the output projection's
  x·D;
- ``mlp``: residual, the MLP's input, gate and up x·2F, the activation product x·F and the down
  projection's x·D (gated); a plain MLP (vLLM ``x = self.act(x)`` rebinds the up projection's
  output) peaks at the activation (x·2F) or at the down projection (x·(F + D));
- ``moe.routed``: residual, input, the router's logits x·n_e, the top-k weights (fp32) and ids
  (int32) x·n_a·(4 + 4) bytes, vLLM ``fused_experts``'s caches for the x·n_a routed rows
  (``intermediate_cache1`` of the gate-up width, ``intermediate_cache2`` of F,
  ``intermediate_cache3`` of D) and the combined output x·D; with shared experts their output
  x·D is held (computed first), and ``moe.shared`` is their own MLP of width n_sh·F_sh; the
  dense layers of a partly-MoE model have ``mlp`` at F_dense. vLLM runs the experts over at
  most ``VLLM_FUSED_MOE_CHUNK_SIZE`` tokens at a time: not modelled (every row counted at once);
- ``lm_head``: the final hidden states x·D, the R rows the head reads (gathered: vLLM
  ``LogitsProcessor._prune_hidden_states``, ``index_select``) R·D, the logits R·V at b_a and
  their fp32 copy R·V·4 (vLLM's sampler ``logits.to(torch.float32)``, prompt logprobs
  ``log_softmax(dim=-1, dtype=torch.float32)``); R = B for the last position only (vLLM
  computes logits at the sampled positions; HF ``logits_to_keep``), R = x for every position
  (prompt log-probabilities).

Multi-head latent attention materialises per-head queries and keys of H + H_r and values of H
beside the latent d_c + H_r they come from (DeepSeek-V2, arXiv 2405.04434, §2.1): its QKV.
Left out as small beside these: the embedding lookup's x·D (no larger than a layer's),
norms' and rotary encodings' transients, the sampler's further B·V tensors.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Max, Min, Symbol, ceiling, expand, floor

from ..symbols import (B, D, F, F_dense, F_sh, H, H_r, T, T_chunk, V, W, C_mem, b_a, d_c, n_a,
                       n_e, n_kv, n_q, n_sh)
from . import attention, local, moe
from .architecture import Architecture
from .branches import quadratic_root
from .decode import model_kv_cache_bytes
from .entry import Entry
from .transformer import weight_bytes

__all__ = ["SOURCE", "LOGITS", "phases", "activation_bytes", "peak_bytes", "longest_prompt",
           "chunk_phases", "chunk_peak_bytes", "largest_chunk", "entries"]

LOGITS = ("last", "all")
FP32 = 4  # bytes of the logsumexp, the top-k weights and ids, the upcast logits
SOURCE = ("vLLM model_executor/models/llama.py (LlamaDecoderLayer, LlamaAttention.forward, "
          "LlamaMLP.forward: MergedColumnParallelLinear gate_up, SiluAndMul); FlashAttention-2 "
          "(arXiv 2307.08691) Algorithm 1 and flash_api.cpp mha_fwd (softmax_lse, fp32, "
          "batch × heads × rows); FlashAttention (arXiv 2205.14135) Algorithm 0 and HF "
          "transformers eager attention (softmax into a new tensor: S and P live); vLLM "
          "fused_moe fused_experts (intermediate_cache1-3) and fused_topk; vLLM "
          "LogitsProcessor._prune_hidden_states and the sampler's fp32 logits")


def supported(arch: Architecture) -> bool:
    """Whether the workspace is derived for ``arch`` in closed form: softmax attention (dense,
    windowed or latent; not chunked local attention, whose chunk count is a floor) on one
    device."""
    return not (arch.linear_attention or arch.sparse_attention or arch.parallel
                or (arch.window != "none" and arch.window_kind == "chunked"))


def _check(arch: Architecture, mode: str, logits: str) -> None:
    if mode not in attention.MODES:
        raise ValueError(f"unknown attention mode {mode!r}; valid: {', '.join(attention.MODES)}")
    if logits not in LOGITS:
        raise ValueError(f"unknown logits {logits!r}; valid: {', '.join(LOGITS)}")
    if arch.linear_attention or arch.sparse_attention or arch.parallel:
        raise ValueError("the workspace is derived for softmax attention (dense, windowed or "
                         "latent) on one device; linear attention, sparse attention and a "
                         "device's parallel share are not modelled")


def _widths(arch: Architecture) -> tuple[Expr, Expr]:
    """Elements per row of the attention's inputs (QKV) and of its output: (n_q + 2·n_kv)·H
    (Qwen3-Next's output gate: n_q·H more from the query projection) and n_q·H; latent
    attention's per-head queries and keys of H + H_r, values of H, and the latent with the
    rotary key, d_c + H_r."""
    if arch.mla:
        return n_q * (2 * (H + H_r) + H) + d_c + H_r, n_q * H
    return (n_q * (2 if arch.attn_gate else 1) + 2 * n_kv) * H, n_q * H


def _scores(arch: Architecture, queries: Expr, keys: Expr) -> Expr:
    """Bytes of one layer's largest score matrix for ``queries`` rows against ``keys`` keys per
    sequence: :func:`roofline.derive.local.largest_scores` for the whole prompt; a chunk's
    queries against the keys of every global layer, or of the window."""
    if queries == T and keys == T:
        return local.largest_scores(arch)
    if arch.window == "all" and arch.window_kind == "chunked":
        raise ValueError("a chunk's scores under chunked local attention are not modelled")
    if arch.window == "all":
        return attention.score_bytes(queries, Min(keys, W))
    return attention.score_bytes(queries, keys)


def _mlp(arch: Architecture, x: Expr, width: Expr, name: str = "mlp") -> dict[str, Expr]:
    """The MLP phase(s) of ``x`` rows and width ``width``: residual and input held (2·x·D)."""
    if arch.gated_mlp:  # gate_up (2·width) kept through down_proj, the product (width), out (D)
        return {name: b_a * x * (2 * D + 3 * width + D)}
    return {f"{name}.act": b_a * x * (2 * D + 2 * width),  # up's output and the activation's
            f"{name}.down": b_a * x * (2 * D + width + D)}  # the activation's and down's


def _mlp_phases(arch: Architecture, x: Expr) -> dict[str, Expr]:
    if not arch.moe:
        return _mlp(arch, x, F)
    dense = replace(arch, moe=False)
    up = 2 * F if arch.gated_mlp else F  # fused_experts' gate-up cache width
    pairs, held = x * n_a, 2 * x * D + (x * D if arch.shared_experts else 0)
    out = {"moe.routed": b_a * (held + x * n_e + pairs * (up + F + D) + x * D)
           + 2 * FP32 * pairs}
    if arch.shared_experts:
        out.update(_mlp(dense, x, n_sh * F_sh, "moe.shared"))
    if moe.layer_split(arch)[0] != 0:  # dense layers beside the MoE ones
        out.update(_mlp(dense, x, F_dense, "mlp.dense"))
    return out


def _phases(arch: Architecture, mode: str, logits: str, queries: Expr,
            keys: Expr) -> dict[str, Expr]:
    """Each phase's live bytes for ``queries`` rows per sequence against ``keys`` keys."""
    x = B * queries
    qkv, out = _widths(arch)
    base = b_a * x * (2 * D + qkv)  # residual, normed input, QKV
    if mode == "naive":
        scores = _scores(arch, queries, keys)
        found = {"attention.softmax": base + 2 * scores,
                 "attention.pv": base + scores + b_a * x * out}
    else:
        found = {"attention": base + b_a * x * out + FP32 * B * n_q * queries}
    found["o_proj"] = base + b_a * x * (out + D)
    found.update(_mlp_phases(arch, x))
    rows = B if logits == "last" else x
    found["lm_head"] = b_a * (x * D + rows * D + rows * V) + FP32 * rows * V
    return found


def phases(arch: Architecture = Architecture(), mode: str = "kernel",
           logits: str = "last") -> dict[str, Expr]:
    """The live bytes of each phase of a prefill of B sequences of T tokens (module docstring).

    >>> phases(Architecture(), "kernel")["mlp"]
    B*T*b_a*(3*D + 3*F)
    >>> phases(Architecture(), "naive")["attention.softmax"]
    2*B*T**2*b_a*n_q + B*T*b_a*(2*D + H*(2*n_kv + n_q))
    """
    _check(arch, mode, logits)
    return _phases(arch, mode, logits, T, T)


def activation_bytes(arch: Architecture = Architecture(), mode: str = "kernel",
                     logits: str = "last") -> Expr:
    """The peak live activations and workspace of one prefill: the ``Max`` of its phases.

    >>> from roofline.symbols import by_name
    >>> llama = by_name({"B": 1, "T": 8192, "D": 4096, "F": 14336, "n_q": 32, "n_kv": 8,
    ...                  "H": 128, "V": 128256, "b_a": 2})
    >>> activation_bytes(Architecture(), "kernel").xreplace(llama)  # the MLP's: 2·8192·55296
    905969664
    """
    # unevaluated: SymPy's pairwise comparisons of the phases never drop one (none bounds
    # another for every shape) and cost a tenth of a second each
    return Max(*phases(arch, mode, logits).values(), evaluate=False)


def peak_bytes(arch: Architecture = Architecture(), mode: str = "kernel",
               logits: str = "last") -> Expr:
    """Weights, the KV cache of T tokens in every layer (b_kv), and :func:`activation_bytes`."""
    return weight_bytes(arch) + model_kv_cache_bytes(arch) + activation_bytes(arch, mode, logits)


def _long(expr: Expr, x: Symbol) -> Expr:
    """``expr`` on the branch of prompts longer than the sliding window, min(T, W) → W
    (:func:`roofline.derive.branches.main_choice`); refused where ``x`` is still inside a
    piecewise term (chunked local attention's chunk count, a floor)."""
    expr = expr.xreplace({Min(T, W): W}) if x == T else expr
    if any(a.has(x) for a in expr.atoms(Min, Max, ceiling, floor)):
        raise ValueError(f"no closed form in {x}: the footprint is piecewise in it (chunked "
                         "local attention's chunks)")
    return expr


def _fit(held: Expr, live: dict[str, Expr], x: Symbol) -> Expr:
    """The largest x (real) with held + every phase ≤ C_mem: each phase grows with x, so the
    answer is the least of the phases' roots of held + phase = C_mem (each of degree ≤ 2,
    solved by SymPy: :func:`roofline.derive.branches.quadratic_root`)."""
    return Min(*(quadratic_root(expand(_long(held + p, x) - C_mem), x) for p in live.values()))


def longest_prompt(arch: Architecture = Architecture(), mode: str = "kernel",
                   logits: str = "last") -> Expr:
    """The longest prompt whose :func:`peak_bytes` fits in C_mem, as a real root: the least over
    the phases of the root of weights + KV cache(T) + phase(T) = C_mem (the root of a quadratic
    where naive's scores grow as T², of a linear equation otherwise). Every phase grows with T,
    so peak_bytes(T) ≤ C_mem exactly when T is at most that least root: the longest prompt in
    tokens is its floor. A windowed model's on the branch T ≥ W (every window full). Real where
    the weights and the bytes that do not grow with T fit in C_mem; else no prompt fits (a
    linear root is then negative, a quadratic's complex, and their ``Min`` is refused).

    >>> from roofline.symbols import by_name
    >>> tiny = by_name({"B": 1, "D": 1, "F": 1, "n_q": 1, "n_kv": 1, "H": 1, "L": 1, "V": 1,
    ...                 "b_a": 1, "b_w": 1, "b_kv": 1, "C_mem": 100})
    >>> longest_prompt(Architecture(), "kernel").xreplace(tiny)  # attention's (100 − 12)/(2 + 10)
    22/3
    """
    _check(arch, mode, logits)
    held = weight_bytes(arch) + model_kv_cache_bytes(arch)
    return _fit(held, _phases(arch, mode, logits, T, T), T)


def chunk_phases(arch: Architecture = Architecture(), mode: str = "kernel") -> dict[str, Expr]:
    """The phases of one chunked-prefill step: T_chunk query rows per sequence attending to up
    to T keys (naive: T_chunk × T scores per head, or T_chunk × min(T, W) in a window), the
    step's last position sampled."""
    _check(arch, mode, "last")
    return _phases(arch, mode, "last", T_chunk, T)


def chunk_peak_bytes(arch: Architecture = Architecture(), mode: str = "kernel") -> Expr:
    """Weights, the KV cache of the T tokens, and the peak of a step of T_chunk rows."""
    return (weight_bytes(arch) + model_kv_cache_bytes(arch)
            + Max(*chunk_phases(arch, mode).values()))


def largest_chunk(arch: Architecture = Architecture(), mode: str = "kernel") -> Expr:
    """The largest chunk T_chunk (real root) whose step fits beside the weights and the KV
    cache of T tokens: the least over the phases of the root of weights + KV(T) +
    phase(T_chunk) = C_mem, every phase linear in T_chunk; the chunk in tokens is its floor
    (a root of T or more: the prompt's remainder fits whole).

    >>> from roofline.symbols import by_name
    >>> tiny = by_name({"B": 1, "D": 1, "F": 1, "n_q": 1, "n_kv": 1, "H": 1, "L": 1, "V": 1,
    ...                 "b_a": 1, "b_w": 1, "b_kv": 1, "C_mem": 100, "T": 4})
    >>> largest_chunk(Architecture(), "naive").xreplace(tiny)  # softmax: (100 − 12 − 8)/(5 + 8)
    80/13
    """
    held = weight_bytes(arch) + model_kv_cache_bytes(arch)
    return _fit(held, chunk_phases(arch, mode), T_chunk)


def entries() -> list[Entry]:
    arch = Architecture()
    default = ("Llama-style dense model as transformer.params: gated SiLU MLP, grouped-query "
               "attention", "B sequences of T tokens; one layer's activations live at a time "
               "(inference: no autograd); weights and every layer's KV cache resident")
    out = []
    for mode in ("naive", "kernel"):
        note = (*default, f"attention: {mode}" + (
            " (S and P both live at the softmax)" if mode == "naive" else
            " (output and fp32 logsumexp; no score matrix)"))
        steps = tuple((f"phase {k}", v) for k, v in phases(arch, mode).items())
        out += [
            Entry(f"workspace.activation_bytes.{mode}", activation_bytes(arch, mode),
                  f"peak live activations and workspace of a prefill ({mode} attention)",
                  "bytes", SOURCE, (*note, "logits of the last position only"),
                  topic="workspace", steps=steps),
            Entry(f"workspace.peak_bytes.{mode}", peak_bytes(arch, mode),
                  f"peak device memory of a prefill ({mode} attention)", "bytes",
                  f"{SOURCE}; scaling-book 'All About Transformer Inference' (KV cache)",
                  (*note, "logits of the last position only"), topic="workspace"),
            Entry(f"workspace.longest_prompt.{mode}", longest_prompt(arch, mode),
                  f"longest prompt whose prefill fits in device memory ({mode} attention; "
                  "the floor of this root)", "tokens", SOURCE,
                  (*note, "the least root over the phases: each grows with T"),
                  topic="workspace"),
            Entry(f"workspace.largest_chunk.{mode}", largest_chunk(arch, mode),
                  f"largest chunk of a chunked prefill that fits beside the KV cache of T "
                  f"tokens ({mode} attention; the floor of this root)", "tokens", SOURCE,
                  (*note, "T_chunk query rows against T keys; the step's last position "
                   "sampled"), topic="workspace"),
        ]
    out.append(Entry(
        "workspace.activation_bytes.kernel.all_logits", activation_bytes(arch, "kernel", "all"),
        "peak live activations of a prefill that returns every position's logits (prompt "
        "log-probabilities)", "bytes", SOURCE,
        (*default, "attention: kernel", "logits of all T positions, at b_a and in fp32"),
        topic="workspace"))
    return out
