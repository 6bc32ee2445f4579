"""Mixture-of-experts layers with shared experts, and models whose MoE layers sit beside dense
ones: DeepSeekMoE (DeepSeek-V2, V3) and Qwen2-MoE (Qwen1.5-MoE).

An MoE layer's MLP (:func:`mlp_operations`):

- routed experts as Mixtral's (:mod:`roofline.derive.transformer`): a router D → n_e, and per
  token n_a of the n_e experts of width F, the weights of every expert that receives a token
  read;
- n_sh shared experts of width F_sh that every token passes through, their output added to the
  routed experts' (DeepSeek-V2, arXiv 2405.04434, §2.2.1: h′ = u + Σ_{i≤N_s} FFN_i^(s)(u) +
  Σ_{i≤N_r} g_i·FFN_i^(r)(u); DeepSeekMoE, Dai et al. 2024, arXiv 2401.06066, §3.2 "shared
  expert isolation"). HF's ``modeling_deepseek.py`` fuses them into one MLP of width n_sh·F_sh
  (``moe_intermediate_size × n_shared_experts``): the same products, so the same cost.
  Qwen2-MoE has one shared expert of ``shared_expert_intermediate_size`` and scales its output
  by a sigmoid gate, a projection D → 1 (HF ``modeling_qwen2_moe.py``,
  ``Qwen2MoeSparseMoeBlock``: ``shared_expert``, ``shared_expert_gate``).

The other L − L_moe layers are dense, with an MLP of width F_dense: DeepSeek's first
``first_k_dense_replace`` layers and those off ``moe_layer_freq`` (``intermediate_size``, HF
``DeepseekV2DecoderLayer``), Qwen2-MoE's ``mlp_only_layers`` and those off
``decoder_sparse_step`` (``Qwen2MoeDecoderLayer``). Each kind of layer's operations carry their
own count of layers, as :mod:`roofline.derive.window` splits global and windowed layers.

Active parameters: every parameter but the n_e − n_a routed experts a token does not use in each
MoE layer (the router, shared experts, attention, norms, the embedding table and the LM head all
count): Qwen1.5-MoE-A2.7B's 2.7B and DeepSeek-V3's 37B are counted so.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Integer

from ..symbols import B, D, F, F_dense, F_sh, L, L_moe, T, b_a, n_a, n_e, n_sh
from .architecture import Architecture
from .entry import Entry
from .layers import (Operation, attention_parameters, layer_mlp, model_parameters,
                     projection_op, total_flops)
from .layers import mlp_parameters as one_mlp

__all__ = ["SOURCE", "layer_split", "layered", "mlp_operations", "routed_parameters",
           "mlp_parameters", "unused_parameters", "entries"]

SOURCE = ("DeepSeek-V2 (arXiv 2405.04434) §2.2.1 (shared and routed experts); DeepSeekMoE "
          "(arXiv 2401.06066) §3.2 (shared expert isolation); HF transformers "
          "modeling_deepseek.py (DeepseekV2MoE, first_k_dense_replace, moe_layer_freq) and "
          "modeling_qwen2_moe.py (Qwen2MoeSparseMoeBlock: shared_expert, shared_expert_gate; "
          "decoder_sparse_step, mlp_only_layers)")
_SIGMOID_FLOPS = 4  # per gate value, as the SiLU convention of roofline.derive.transformer


def layer_split(arch: Architecture) -> tuple[Expr, Expr]:
    """(dense layers, MoE layers): (0, L) when every layer has experts, else (L − L_moe, L_moe).

    >>> layer_split(Architecture(moe=True, moe_layers="some"))
    (L - L_moe, L_moe)
    """
    if arch.moe_layers == "some":
        return L - L_moe, L_moe
    return Integer(0), L


def _dense(arch: Architecture) -> Architecture:
    return replace(arch, moe=False, shared_experts=False, shared_gate=False, moe_layers="all")


def _widened(ops: list, width: Expr, prefix: str | None, layers: Expr) -> list:
    """The dense MLP's operations with F → ``width``, renamed ``prefix``.* (if given), each
    counting ``layers`` layers."""
    sub = {F: width}
    return [replace(op.xreplace(sub), count=layers,
                    name=op.name if prefix is None else op.name.replace("mlp.", prefix, 1))
            for op in ops]


def mlp_operations(arch: Architecture, rows: Expr) -> list:
    """The MLP of every layer over ``rows`` token rows, each operation with its count of layers:
    in the MoE layers the router and routed experts (``moe.*``, Mixtral's), the shared experts
    as one MLP of width n_sh·F_sh (``moe.shared.*``), Qwen2-MoE's gate (``moe.shared_gate``,
    D → 1), and the sum of the shared output and the routed one (``moe.shared.add``: one
    addition per element, and with the gate its sigmoid and a product); in the dense layers
    an MLP of width F_dense (``mlp.*``)."""
    dense_layers, moe_layers = layer_split(arch)
    routed = [replace(op, count=moe_layers) for op in layer_mlp(arch, rows)]
    ops = list(routed)
    if arch.shared_experts:
        plain = layer_mlp(_dense(arch), rows)
        ops += _widened(plain, n_sh * F_sh, "moe.shared.", moe_layers)
        gate = arch.shared_gate
        if gate:
            gate_op = projection_op("moe.shared_gate", rows, D, 1, False)
            ops.append(replace(gate_op, count=moe_layers))
        flops = (2 * rows * D + _SIGMOID_FLOPS * rows) if gate else rows * D
        read = 2 * rows * D + (rows if gate else 0)
        ops.append(Operation("moe.shared.add", "elementwise", flops,
                             b_a * (read + rows * D), moe_layers))
    if dense_layers != 0:
        ops += _widened(layer_mlp(_dense(arch), rows), F_dense, None, dense_layers)
    return ops


def layered(arch: Architecture) -> bool:
    """Whether the MLPs differ between layers (this module's :func:`mlp_operations`): shared
    experts, or dense layers beside the MoE ones."""
    return arch.moe and (arch.shared_experts or arch.moe_layers != "all")


def routed_parameters(arch: Architecture) -> Expr:
    """Parameters of one MoE layer's router and n_e routed experts: n_e·expert + D·n_e, and
    the router's n_e biases where every linear layer has a bias (gpt-oss's
    ``GptOssTopKRouter``).

    >>> routed_parameters(Architecture(moe=True))
    3*D*F*n_e + D*n_e
    """
    return n_e * one_mlp(arch) + D * n_e + (n_e if arch.linear_bias else 0)


def mlp_parameters(arch: Architecture) -> Expr:
    """Parameters of every layer's MLP: in each MoE layer the router and n_e routed experts
    (n_e·expert + D·n_e), n_sh shared experts of width F_sh (and Qwen2-MoE's gate, D); in each
    dense layer an MLP of width F_dense.

    >>> mlp_parameters(Architecture(moe=True, shared_experts=True))
    L*(3*D*F*n_e + 3*D*F_sh*n_sh + D*n_e)
    """
    dense_layers, moe_layers = layer_split(arch)
    plain = one_mlp(_dense(arch))
    routed = routed_parameters(arch)
    shared = Integer(0)
    if arch.shared_experts:
        shared = n_sh * plain.xreplace({F: F_sh}) + (D if arch.shared_gate else 0)
    out = moe_layers * (routed + shared)
    if dense_layers != 0:
        out += dense_layers * plain.xreplace({F: F_dense})
    return out


def unused_parameters(arch: Architecture) -> Expr:
    """Parameters a token does not use: the n_e − n_a routed experts it does not reach in each
    MoE layer (``transformer.active_parameter_count`` subtracts them)."""
    return layer_split(arch)[1] * (n_e - n_a) * one_mlp(arch)


def _parameters(arch: Architecture) -> tuple[Expr, Expr]:
    """All parameters of a model of ``arch`` with Llama-style attention, and those a token uses
    (``transformer.parameter_count`` and ``active_parameter_count``, for this topic's
    entries)."""
    attention = attention_parameters(arch)
    total = (model_parameters(arch, attention, mlp_params=mlp_parameters(arch)) if layered(arch)
             else model_parameters(arch, attention, routed_parameters(arch)))
    return total, total - unused_parameters(arch)


def entries() -> list[Entry]:
    deepseek = Architecture(moe=True, shared_experts=True, moe_layers="some")
    qwen = Architecture(moe=True, shared_experts=True, shared_gate=True, qkv_bias=True)
    mixtral = Architecture(moe=True)
    layered = ("Llama-style attention", "L_moe MoE layers: router, n_a of n_e routed experts of "
               "width F, n_sh shared experts of width F_sh", "L − L_moe dense layers of width "
               "F_dense")
    gated = ("Llama-style attention with Q, K, V biases", "every layer MoE: n_a of n_e routed "
             "experts of width F, n_sh shared experts of width F_sh behind a sigmoid gate")
    return [
        Entry("moe.params", _parameters(deepseek)[0],
              "parameters of a model with shared experts and dense layers (DeepSeekMoE)", "1",
              SOURCE, layered),
        Entry("moe.params.active", _parameters(deepseek)[1],
              "parameters a token uses in that model", "1", SOURCE,
              (*layered, "n_a of the n_e routed experts per MoE layer")),
        Entry("moe.params.shared_gate", _parameters(qwen)[0],
              "parameters of a model whose shared expert has a gate (Qwen2-MoE)", "1", SOURCE,
              gated),
        Entry("moe.params.shared_gate.active", _parameters(qwen)[1],
              "parameters a token uses in that model", "1", SOURCE,
              (*gated, "n_a of the n_e routed experts per layer")),
        Entry("moe.params.routed.active", _parameters(mixtral)[1],
              "parameters a token uses in a model of routed experts only (Mixtral)", "1",
              f"{SOURCE}; Mixtral (arXiv 2401.04088) §2.1",
              ("as transformer.params.moe", "n_a of the n_e experts per layer")),
        Entry("moe.mlp.flops", total_flops(mlp_operations(deepseek, B * T)),
              "FLOPs of every layer's MLP in a prefill (DeepSeekMoE)", "FLOP", SOURCE,
              (*layered, "B sequences of T tokens")),
    ]
