"""The building blocks of a decoder's operations, which the transformer
(:mod:`roofline.derive.transformer`) assembles and each model family (latent attention,
:mod:`roofline.derive.mla`; experts, :mod:`roofline.derive.moe`) uses for its own parts: an
:class:`Operation` with its FLOPs and bytes; projections, norms and element-wise work; one
layer's MLP; the dense and sliding-window attention of a prefill and of a decode step; the
parameters of a decoder given its attention's and its MLPs'. Sources and conventions as in
:mod:`roofline.derive.transformer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from sympy import Expr, Integer, Max, Min

from ..symbols import B, D, F, H, L, T, T_ctx, T_pos, V, b_a, b_kv, b_w, n_a, n_e, n_kv, n_q
from . import attention, chunked, levels, projection, shapes, window
from .architecture import KINDS, Architecture

__all__ = ["Operation", "NORM_FLOPS", "ACT_FLOPS", "ROPE_FLOPS", "projection_op",
           "elementwise_op", "norm_op", "qk_norm_op", "qk_l2_op", "layer_mlp", "fused", "attention_op",
           "attention_operations", "attention_step", "total_flops", "total_bytes",
           "mlp_parameters", "attention_parameters", "model_parameters", "embedding_parameters",
           "put_in"]

NORM_FLOPS = {"rms": 4, "layer": 7}
ACT_FLOPS = {"silu": 4, "gelu": 8, "relu": 1}
ROPE_FLOPS = 3  # per rotated element: two products and a sum


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
    # the fraction of the peak its kernel's whole tiles and waves let it use (tile and wave
    # quantization, roofline.derive.shapes): the estimate's, never the bound's; 1 where not
    # derived
    shape: Expr = Integer(1)

    def xreplace(self, sub: Mapping[Expr, Expr]) -> Operation:
        """The operation with ``sub`` substituted in its FLOPs, bytes, levels and shape (a
        library's choice of tiles stays a choice of as many: SymPy's comparison of them, a tenth
        of a second each, never drops one while a shape is symbolic)."""
        if isinstance(self.shape, Max):
            tiles = [tile.xreplace(sub) for tile in self.shape.args]
            shape = Max(*tiles, evaluate=all(tile.is_number for tile in tiles))
        else:
            shape = self.shape.xreplace(sub)
        return replace(self, flops=self.flops.xreplace(sub), bytes=self.bytes.xreplace(sub),
                       levels=tuple((level, q.xreplace(sub)) for level, q in self.levels),
                       shape=shape)

    def level_bytes(self, level: str) -> Expr:
        """Bytes at ``level`` ("hbm", or one of ``levels.LEVELS``): an operation whose traffic
        there is not derived moves its HBM bytes through it (every HBM byte passes the caches
        and is staged in SRAM on its way)."""
        return dict(self.levels).get(level, self.bytes) if level != "hbm" else self.bytes


def projection_op(name: str, rows: Expr, n_in: Expr, n_out: Expr, bias: bool) -> Operation:
    return Operation(name, "projection", projection.flops(rows, n_in, n_out, bias),
                     projection.hbm_bytes(rows, n_in, n_out, bias),
                     shape=shapes.library_efficiency(rows, n_out))


def elementwise_op(name: str, flops_per: int, elements: Expr, read: Expr, written: Expr,
                 weights: Expr = Integer(0)) -> Operation:
    return Operation(name, "elementwise", flops_per * elements,
                     b_a * (read + written) + b_w * weights)


def norm_op(arch: Architecture, name: str, rows: Expr) -> Operation:
    gains = D if arch.norm == "rms" else 2 * D
    return elementwise_op(name, NORM_FLOPS[arch.norm], rows * D, rows * D, rows * D, gains)


def qk_norm_op(rows: Expr) -> Operation:
    """The QK-norm of Qwen3 and Gemma-3 (HF ``Qwen3Attention``, ``Gemma3Attention``: ``q_norm``,
    ``k_norm``, an RMSNorm over each head's H elements, before the rotary encoding): the
    rows·(n_q + n_kv)·H query and key elements read and written, RMSNorm's 4 FLOPs each, the
    2H gains read."""
    elements = rows * (n_q + n_kv) * H
    return elementwise_op("qk_norm", NORM_FLOPS["rms"], elements, elements, elements, 2 * H)


def qk_l2_op(rows: Expr) -> Operation:
    """Llama 4's L2 norm of each query and key head (HF ``Llama4TextL2Norm``: x·rsqrt(mean x²),
    no gains): the rows·(n_q + n_kv)·H elements read and written, 3 FLOPs each (square,
    accumulate, scale)."""
    elements = rows * (n_q + n_kv) * H
    return elementwise_op("qk_l2_norm", 3, elements, elements, elements)


def layer_mlp(arch: Architecture, rows: Expr) -> list[Operation]:
    """One layer's MLP over ``rows`` token rows: gated or plain, or a router and the routed
    experts (Mixtral: n_a of n_e per token, the weights of those that receive a token read)."""
    bias, act = arch.linear_bias, ACT_FLOPS[arch.activation]
    width = 2 * F if arch.gated_mlp else F  # the up (and gate) projection's output
    act_flops = act + 1 if arch.gated_mlp else act
    if not arch.moe:
        return [
            projection_op("mlp.up", rows, D, width, bias),
            elementwise_op("mlp.act", act_flops, rows * F, rows * width, rows * F),
            projection_op("mlp.down", rows, F, D, bias),
        ]
    routed = rows * n_a  # token–expert pairs
    experts = Min(n_e, routed)  # experts that receive a token: their weights are read
    return [
        projection_op("moe.router", rows, D, n_e, bias),
        Operation("moe.up", "projection", projection.flops(routed, D, width, bias),
                  projection.hbm_bytes(routed, D, width, bias, matrices=experts)),
        elementwise_op("moe.act", act_flops, routed * F, routed * width, routed * F),
        Operation("moe.down", "projection", projection.flops(routed, F, D, bias),
                  projection.hbm_bytes(routed, F, D, bias, matrices=experts)),
        elementwise_op("moe.combine", 2, routed * D, routed * D, rows * D),
    ]


def fused(arch: Architecture, ops: list[Operation]) -> list[Operation]:
    """With ``fusion="elementwise"`` every element-wise operation (norms, rotary encoding,
    residual adds, the activation product, the MoE combine, Gemma's embedding scale) is folded
    into the GEMM or attention kernel beside it, as TensorRT-LLM's fused kernels and compiled
    graphs (torch.compile, XLA) run them: its activations never make an HBM round trip (b_a → 0
    in its bytes), its FLOPs remain, and its weights (a norm's gains) are still read once."""
    if arch.fusion == "none":
        return ops
    return [replace(op, bytes=op.bytes.subs(b_a, 0)) if op.kind == "elementwise" else op
            for op in ops]


def attention_op(name: str, flops: Expr, mode: str, caches: Sequence[str], windowed: bool,
                  smooth: bool, count: Expr = Integer(1)) -> Operation:
    hbm, served = levels.level_bytes(mode, caches, windowed, smooth)
    return Operation(name, "attention", flops, hbm, count, tuple(served.items()),
                     shapes.attention_efficiency(T, n_q, B))


def attention_operations(arch: Architecture, mode: str, smooth: bool = False,
                         caches: Sequence[str] = ()) -> Operation | list[Operation]:
    """The prefill's attention in ``mode`` behind the cache levels ``caches``
    (:mod:`roofline.derive.levels`): one operation (every layer alike), or, with a sliding
    window or chunks, the global and the local layers apart, each with its count of layers
    (:mod:`roofline.derive.window`, :mod:`roofline.derive.chunked`). Multi-head latent attention substitutes its head
    dimension and head counts in these (:func:`roofline.derive.mla.attention_operations`)."""
    full = attention_op(f"attention.{mode}", attention.mode_flops(mode), mode, caches, False,
                         smooth)
    if arch.window == "none":
        return full
    glob, local = window.layer_split(arch)
    if arch.window_kind == "chunked":
        hbm, served = chunked.level_bytes(mode, caches, smooth)
        local_op = Operation(f"attention.{mode}.chunked", "attention",
                             chunked.flops(mode, smooth), hbm, local, tuple(served.items()))
    else:
        local_op = attention_op(f"attention.{mode}.window", window.flops(mode), mode, caches,
                                True, smooth, local)
    if glob == 0:
        return [local_op]
    return [replace(full, count=glob), local_op]


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


def attention_parameters(arch: Architecture = Architecture()) -> Expr:
    """Parameters of one layer's attention: W^Q, W^K, W^V (D → (n_q + 2·n_kv)·H) and W^O
    (n_q·H → D), with their biases where the architecture has them; the QK-norm's gains (H
    for the queries, H for the keys: Qwen3's and Gemma-3's ``q_norm``, ``k_norm``); gpt-oss's
    sinks (one per query head, ``GptOssAttention.sinks``); Qwen3-Next's output gate (the query
    projection's second n_q·H outputs).

    >>> attention_parameters()
    D*H*n_q + D*H*(2*n_kv + n_q)
    >>> attention_parameters(Architecture(qk_norm=True, sinks=True)) - attention_parameters()
    2*H + n_q
    """
    qkv, bias = (n_q + 2 * n_kv) * H, arch.linear_bias
    return (D * qkv + n_q * H * D + (qkv if arch.qkv_bias or bias else 0) + (D if bias else 0)
            + (2 * H if arch.qk_norm else 0) + (n_q if arch.sinks else 0)
            + (D * n_q * H if arch.attn_gate else 0))


def model_parameters(arch: Architecture, attention_params: Expr, layer_mlp_params: Expr = 0,
                     mlp_params: Expr = 0) -> Expr:
    """Parameters of the whole decoder: L layers of ``attention_params`` and
    ``layer_mlp_params`` (one layer's) and their norms; ``mlp_params`` (MLPs that differ
    between layers, all of them together); the final norm, the embeddings (and the head,
    unless tied) and learned positions.

    >>> model_parameters(Architecture(), attention_parameters(), mlp_parameters())
    2*D*V + D + L*(3*D*F + D*H*n_q + D*H*(2*n_kv + n_q) + 2*D)
    """
    norms = (2 * D if arch.norm == "rms" else 4 * D) * (2 if arch.post_norms else 1)
    final = D if arch.norm == "rms" else 2 * D
    layers = L * (attention_params + layer_mlp_params + norms) + mlp_params
    return layers + final + embedding_parameters(arch)


def embedding_parameters(arch: Architecture) -> Expr:
    """The embedding table, the LM head unless tied to it, and a table of learned positions:
    what a quantized checkpoint keeps unquantized (at b_e bytes, :mod:`.transformer`).

    >>> embedding_parameters(Architecture())
    2*D*V
    """
    embed = V * D * (1 if arch.tied_embeddings else 2)
    return embed + (T_pos * D if arch.position == "learned" else 0)


def put_in(expr: Expr, sub: Mapping[Expr, Expr]) -> Expr:
    """``expr.xreplace(sub)`` with its Max and Min rebuilt as they are written (as :func:`_max`
    keeps them): SymPy would compare their long arguments pairwise again to drop a dominated
    one (most of the time a latent attention's derivation took, where
    :mod:`roofline.derive.mla` puts its head widths in for H), and what is put in makes none
    dominate another for every shape."""
    if expr in sub:
        return sub[expr]
    if not expr.args:
        return expr
    args = tuple(put_in(a, sub) for a in expr.args)
    if args == expr.args:
        return expr
    if isinstance(expr, (Max, Min)):
        return expr.func(*args, evaluate=False)
    return expr.func(*args)
