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
with its own count of layers, from :mod:`roofline.derive.moe`.

Element-wise FLOP counts are conventions (they never move a crossover: these operations are
memory-bound): RMSNorm 4 per element (square, accumulate, scale, gain), LayerNorm 7 (mean,
subtract, square, accumulate, scale, gain, shift), rotary encoding 3 (two products and a sum),
SiLU 4, GELU 8 (tanh form), ReLU 1, residual add 1, a gated product 1, the embedding scale 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from collections.abc import Sequence

from sympy import Expr, Integer, Min

from ..symbols import B, D, F, H, L, T, T_pos, V, b_a, b_w, n_a, n_e, n_kv, n_q
from . import attention, levels, projection, window
from .architecture import KINDS, Architecture
from .entry import Entry

__all__ = ["Architecture", "Operation", "layer_operations", "attention_operations",
           "prefill_operations", "mlp_parameters", "parameter_count", "weight_bytes",
           "total_flops", "total_bytes", "entries"]

SOURCE = ("Llama (arXiv 2302.13971) §2.2 and HF transformers modeling_llama.py (the operations "
          "of a decoder layer, in order); scaling-book 'All the Transformer Math You Need to "
          "Know' (FLOPs, parameters) and 'All About Transformer Inference' (prefill keeps the "
          "last position's logits)")
MIXTRAL = "Mixtral (Jiang et al. 2024, arXiv 2401.04088) §2.1 (router, n_a of n_e experts)"
_NORM_FLOPS = {"rms": 4, "layer": 7}
_ACT_FLOPS = {"silu": 4, "gelu": 8, "relu": 1}
_ROPE_FLOPS = 3  # per rotated element: two products and a sum


@dataclass(frozen=True)
class Operation:
    """One operation: ``count`` × (``flops``, ``bytes``); ``count`` is L for per-layer ones.
    ``bytes`` are HBM bytes; ``levels`` the bytes each other memory level serves, where the
    operation's traffic there is derived (:mod:`roofline.derive.levels`: fused attention)."""

    name: str
    kind: str  # one of KINDS
    flops: Expr
    bytes: Expr
    count: Expr = Integer(1)
    levels: tuple[tuple[str, Expr], ...] = ()  # (level, bytes served), nearest the SMs first

    def level_bytes(self, level: str) -> Expr:
        """Bytes at ``level`` ("hbm", or one of ``levels.LEVELS``): an operation whose traffic
        there is not derived moves its HBM bytes through it (every HBM byte passes the caches
        and is staged in SRAM on its way)."""
        return dict(self.levels).get(level, self.bytes) if level != "hbm" else self.bytes


def _proj(name: str, rows: Expr, n_in: Expr, n_out: Expr, bias: bool) -> Operation:
    return Operation(name, "projection", projection.flops(rows, n_in, n_out, bias),
                     projection.hbm_bytes(rows, n_in, n_out, bias))


def _elementwise(name: str, flops_per: int, elements: Expr, read: Expr, written: Expr,
                 weights: Expr = Integer(0)) -> Operation:
    return Operation(name, "elementwise", flops_per * elements,
                     b_a * (read + written) + b_w * weights)


def _norm(arch: Architecture, name: str, rows: Expr) -> Operation:
    gains = D if arch.norm == "rms" else 2 * D
    return _elementwise(name, _NORM_FLOPS[arch.norm], rows * D, rows * D, rows * D, gains)


def _mlp(arch: Architecture, rows: Expr) -> list[Operation]:
    bias, act = arch.linear_bias, _ACT_FLOPS[arch.activation]
    width = 2 * F if arch.gated_mlp else F  # the up (and gate) projection's output
    act_flops = act + 1 if arch.gated_mlp else act
    if not arch.moe:
        return [
            _proj("mlp.up", rows, D, width, bias),
            _elementwise("mlp.act", act_flops, rows * F, rows * width, rows * F),
            _proj("mlp.down", rows, F, D, bias),
        ]
    routed = rows * n_a  # token–expert pairs
    experts = Min(n_e, routed)  # experts that receive a token: their weights are read
    return [
        _proj("moe.router", rows, D, n_e, False),
        Operation("moe.up", "projection", projection.flops(routed, D, width),
                  projection.hbm_bytes(routed, D, width, matrices=experts)),
        _elementwise("moe.act", act_flops, routed * F, routed * width, routed * F),
        Operation("moe.down", "projection", projection.flops(routed, F, D),
                  projection.hbm_bytes(routed, F, D, matrices=experts)),
        _elementwise("moe.combine", 2, routed * D, routed * D, rows * D),
    ]


def layer_operations(arch: Architecture, rows: Expr,
                     attention_op: Operation | Sequence[Operation]) -> list[Operation]:
    """One layer's operations over ``rows`` token rows, with the given attention operation (or
    operations, each carrying its own count of layers: global and sliding-window layers).
    An operation that already carries a count of layers other than 1 keeps it (the MLP of
    a model with dense and MoE layers, :mod:`roofline.derive.moe`); the others count L."""
    split = not isinstance(attention_op, Operation)
    attention_ops = list(attention_op) if split else [attention_op]
    ops = [_norm(arch, "attn_norm", rows)]
    if arch.mla:  # latent projections and the rotary part of the heads
        from . import mla

        ops += mla.projections(arch, rows)
    else:
        qkv = (n_q + 2 * n_kv) * H
        ops.append(_proj("qkv_proj", rows, D, qkv, arch.qkv_bias or arch.linear_bias))
        if arch.position == "rope":
            rotated = rows * (n_q + n_kv) * H
            ops.append(_elementwise("rope", _ROPE_FLOPS, rotated, rotated, rotated))
    mlp = _mlp(arch, rows)
    if _layered(arch):
        from . import moe

        mlp = moe.mlp_operations(arch, rows)
    post = arch.post_norms  # Gemma-2: the sublayer's output is normed before the residual add
    ops += [*attention_ops,
            _proj("o_proj", rows, n_q * H, D, arch.linear_bias),
            *([_norm(arch, "post_attn_norm", rows)] if post else []),
            _elementwise("residual_add.attn", 1, rows * D, 2 * rows * D, rows * D),
            _norm(arch, "mlp_norm", rows),
            *mlp,
            *([_norm(arch, "post_mlp_norm", rows)] if post else []),
            _elementwise("residual_add.mlp", 1, rows * D, 2 * rows * D, rows * D)]
    ops = [op if (split and op.kind == "attention") or op.count != 1 else
           Operation(op.name, op.kind, op.flops, op.bytes, L, op.levels) for op in ops]
    return _fused(arch, ops)


def _fused(arch: Architecture, ops: list[Operation]) -> list[Operation]:
    """With ``fusion="elementwise"`` every element-wise operation (norms, rotary encoding,
    residual adds, the activation product, the MoE combine, Gemma's embedding scale) is folded
    into the GEMM or attention kernel beside it, as TensorRT-LLM's fused kernels and compiled
    graphs (torch.compile, XLA) run them: its activations never make an HBM round trip (b_a → 0
    in its bytes), its FLOPs remain, and its weights (a norm's gains) are still read once."""
    if arch.fusion == "none":
        return ops
    return [Operation(op.name, op.kind, op.flops, op.bytes.subs(b_a, 0), op.count, op.levels)
            if op.kind == "elementwise" else op for op in ops]


def _layered(arch: Architecture) -> bool:
    """Whether the MLP is :mod:`roofline.derive.moe`'s: shared experts, or dense layers beside
    the MoE ones."""
    return arch.moe and (arch.shared_experts or arch.moe_layers != "all")


def edge_operations(arch: Architecture, rows: Expr, positions: Expr) -> list[Operation]:
    """The embedding lookup (and learned positions) before the layers; final norm and LM head on
    the last position of each of the B sequences after them."""
    table = positions * D if arch.position == "learned" else Integer(0)
    added = rows * D if arch.position == "learned" else Integer(0)
    embed = Operation("embedding", "embedding", added,
                      b_w * (rows * D + table) + b_a * (rows * D + 2 * added))
    head = projection.flops(B, D, V), projection.hbm_bytes(B, D, V)
    # Gemma: the embeddings are multiplied by sqrt(D), one product per element
    scale = [_elementwise("embed_scale", 1, rows * D, rows * D, rows * D)] \
        if arch.embed_scale else []
    return _fused(arch, [embed, *scale, _norm(arch, "final_norm", B),
                         Operation("lm_head", "lm_head", *head)])


def _attention_op(name: str, flops: Expr, mode: str, caches: Sequence[str], windowed: bool,
                  smooth: bool, count: Expr = Integer(1)) -> Operation:
    hbm, served = levels.level_bytes(mode, caches, windowed, smooth)
    return Operation(name, "attention", flops, hbm, count, tuple(served.items()))


def attention_operations(arch: Architecture, mode: str, smooth: bool = False,
                         caches: Sequence[str] = ()) -> Operation | list[Operation]:
    """The prefill's attention in ``mode`` behind the cache levels ``caches``
    (:mod:`roofline.derive.levels`): one operation (every layer alike), or, with a sliding
    window, the global and the windowed layers apart, each with its count of layers
    (:mod:`roofline.derive.window`). Multi-head latent attention: these operations with the
    head dimension and head counts substituted
    (:func:`roofline.derive.mla.attention_operations`)."""
    if arch.mla:
        from . import mla

        return mla.attention_operations(arch, mode, smooth, caches)
    full = _attention_op(f"attention.{mode}", attention.mode_flops(mode), mode, caches, False,
                         smooth)
    if arch.window == "none":
        return full
    glob, local = window.layer_split(arch)
    local_op = _attention_op(f"attention.{mode}.window", window.flops(mode), mode, caches, True,
                             smooth, local)
    if glob == 0:
        return [local_op]
    return [Operation(full.name, full.kind, full.flops, full.bytes, glob, full.levels), local_op]


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
    return (*layer_operations(arch, B * T, attn), *edge_operations(arch, B * T, T))


def total_flops(ops: list[Operation], kinds: tuple[str, ...] = KINDS) -> Expr:
    return sum((op.count * op.flops for op in ops if op.kind in kinds), Integer(0))


def total_bytes(ops: list[Operation], kinds: tuple[str, ...] = KINDS, level: str = "hbm") -> Expr:
    """Σ count·bytes at ``level`` (HBM by default; see :meth:`Operation.level_bytes`)."""
    return sum((op.count * op.level_bytes(level) for op in ops if op.kind in kinds), Integer(0))


def mlp_parameters(arch: Architecture = Architecture()) -> Expr:
    """Parameters of one MLP of width F (one expert, for MoE): D·2F + F·D gated, D·F + F·D
    plain, with their biases where the linear layers have them.

    >>> mlp_parameters()
    3*D*F
    """
    width = 2 * F if arch.gated_mlp else F
    return D * width + F * D + ((width + D) if arch.linear_bias else 0)


def parameter_count(arch: Architecture = Architecture()) -> Expr:
    """Parameters of the model: weights and biases of every layer, norms, embeddings, head.
    Latent attention's are :func:`roofline.derive.mla.attention_parameters`; the MLPs of a
    model with shared experts or dense layers :func:`roofline.derive.moe.mlp_parameters`."""
    qkv, bias = (n_q + 2 * n_kv) * H, arch.linear_bias
    attn = D * qkv + n_q * H * D + (qkv if arch.qkv_bias or bias else 0) + (D if bias else 0)
    if arch.mla:
        from . import mla

        attn = mla.attention_parameters(arch)
    mlp = mlp_parameters(arch)
    if arch.moe:
        mlp = n_e * mlp + D * n_e
    norms = (2 * D if arch.norm == "rms" else 4 * D) * (2 if arch.post_norms else 1)
    final = D if arch.norm == "rms" else 2 * D
    embed = V * D * (1 if arch.tied_embeddings else 2)
    positions = T_pos * D if arch.position == "learned" else 0
    layers = L * (attn + mlp + norms)
    if _layered(arch):
        from . import moe

        layers = L * (attn + norms) + moe.mlp_parameters(arch, mlp)
    return layers + final + embed + positions


def weight_bytes(arch: Architecture = Architecture()) -> Expr:
    """Bytes of all weights at b_w bytes each."""
    return b_w * parameter_count(arch)


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
                 "bytes", SOURCE, default[:1])]
    for mode in attention.MODES:
        ops = prefill_operations(arch, mode)
        fl, by = total_flops(ops), total_bytes(ops)
        suffix = "" if mode == "tiled" else f".{mode}"
        note = (*default, f"attention: {mode}")
        out += [
            Entry(f"prefill.flops{suffix}", fl, f"FLOPs of a whole prefill ({mode} attention)",
                  "FLOP", SOURCE, note),
            Entry(f"prefill.bytes{suffix}", by,
                  f"HBM bytes of a whole prefill ({mode} attention)", "bytes", SOURCE, note),
            Entry(f"prefill.intensity{suffix}", fl / by,
                  f"arithmetic intensity of a whole prefill ({mode} attention)", "FLOP/byte",
                  SOURCE, note),
        ]
    return out
