"""Shared experts and dense layers beside MoE ones (roofline.derive.moe): each kind of layer's
operations with their own count, the shared experts' and the gate's work by hand, parameters
total and active, and a model without these features unchanged."""

from __future__ import annotations

from roofline.derive import moe
from roofline.derive.architecture import Architecture
from roofline.derive.decode import decode_operations
from roofline.derive.transformer import (active_parameter_count, parameter_count,
                                         prefill_operations, total_bytes, total_flops)
from roofline.symbols import (B, D, F, F_dense, F_sh, H, L, L_moe, T, V, b_a, b_w, n_a, n_e,
                              n_kv, n_q, n_sh)

DEEPSEEK = Architecture(moe=True, shared_experts=True, moe_layers="some")
QWEN = Architecture(moe=True, shared_experts=True, shared_gate=True, qkv_bias=True)
SMALL = {B: 1, T: 10, D: 8, F: 4, F_sh: 4, F_dense: 16, n_e: 6, n_a: 2, n_sh: 2, L: 5, L_moe: 4,
         n_q: 2, n_kv: 1, H: 4, V: 50, b_a: 2, b_w: 2}


def _by_name(ops):
    return {op.name: op for op in ops}


def test_each_kind_of_layer_has_its_count() -> None:
    ops = _by_name(prefill_operations(DEEPSEEK, "ideal"))
    for name in ("moe.router", "moe.up", "moe.down", "moe.shared.up", "moe.shared.down",
                 "moe.shared.add"):
        assert ops[name].count == L_moe, name
    for name in ("mlp.up", "mlp.act", "mlp.down"):
        assert ops[name].count == L - L_moe, name
    for name in ("attn_norm", "qkv_proj", "attention.ideal", "o_proj", "mlp_norm"):
        assert ops[name].count == L, name
    assert "moe.shared_gate" not in ops
    q = _by_name(prefill_operations(QWEN, "ideal"))
    assert q["moe.shared_gate"].count == L and q["moe.up"].count == L and "mlp.up" not in q


def test_mlp_work_by_hand() -> None:
    """T = 10 rows, D = 8: routed as Mixtral's (2 of 6 experts of F = 4), 2 shared experts of
    F_sh = 4 (one MLP of width 8), the dense layer's MLP of F_dense = 16."""
    ops = _by_name(prefill_operations(DEEPSEEK, "ideal"))
    v = SMALL
    assert ops["moe.shared.up"].flops.subs(v) == 2 * 10 * 8 * (2 * 8)  # D → 2·n_sh·F_sh
    assert ops["moe.shared.down"].flops.subs(v) == 2 * 10 * 8 * 8
    # weights once (b_w = 2), activations in and out (b_a = 2)
    assert ops["moe.shared.up"].bytes.subs(v) == 2 * 8 * 16 + 2 * 10 * (8 + 16)
    assert ops["moe.shared.add"].flops.subs(v) == 10 * 8
    assert ops["moe.shared.add"].bytes.subs(v) == 2 * 3 * 10 * 8
    assert ops["mlp.up"].flops.subs(v) == 2 * 10 * 8 * 32 and ops["mlp.up"].count.subs(v) == 1
    gate = _by_name(prefill_operations(QWEN, "ideal"))
    assert gate["moe.shared_gate"].flops.subs(v) == 2 * 10 * 8  # D → 1
    assert gate["moe.shared.add"].flops.subs(v) == 2 * 10 * 8 + 4 * 10  # g·s + r; sigmoids
    mlp = total_flops([op for op in prefill_operations(DEEPSEEK, "ideal")
                       if op.name.startswith(("moe.", "mlp."))]).subs(v)
    assert mlp == total_flops(moe.mlp_operations(DEEPSEEK, B * T)).subs(v)


def test_parameters_by_hand() -> None:
    """L = 5 layers, L_moe = 4 of them MoE: 6 experts of 3·D·F, a router D·n_e, 2 shared experts
    of 3·D·F_sh; one dense layer of 3·D·F_dense; Llama-style attention and norms."""
    v = SMALL
    attention = 8 * (2 + 2 * 1) * 4 + 2 * 4 * 8
    total = (5 * (attention + 2 * 8) + 4 * (6 * 3 * 8 * 4 + 8 * 6 + 2 * 3 * 8 * 4)
             + 1 * 3 * 8 * 16 + 8 + 2 * 50 * 8)
    assert parameter_count(DEEPSEEK).subs(v) == total
    assert active_parameter_count(DEEPSEEK).subs(v) == total - 4 * (6 - 2) * 3 * 8 * 4
    qwen = parameter_count(QWEN).subs(v)
    assert qwen == (5 * (attention + (2 + 2 * 1) * 4 + 2 * 8 + 6 * 3 * 8 * 4 + 8 * 6
                         + 2 * 3 * 8 * 4 + 8)
                    + 8 + 2 * 50 * 8)  # Q, K, V biases (n_q + 2·n_kv)·H; the gate D


def test_without_the_new_features_nothing_changes() -> None:
    """A MoE model of routed experts only on every layer (Mixtral) has the operations and the
    parameters it had before; active parameters: n_a of n_e experts."""
    mixtral = Architecture(moe=True)
    names = [op.name for op in prefill_operations(mixtral, "tiled")]
    assert [n for n in names if n.startswith("moe.")] == [
        "moe.router", "moe.up", "moe.act", "moe.down", "moe.combine"]
    assert all(op.count in (L, 1) for op in prefill_operations(mixtral, "tiled"))
    dense_total = parameter_count(Architecture()).subs(SMALL)
    assert active_parameter_count(Architecture()).subs(SMALL) == dense_total
    assert (parameter_count(mixtral) - active_parameter_count(mixtral)).subs(SMALL) \
        == 5 * (6 - 2) * 3 * 8 * 4


def test_decode_step_keeps_the_layer_counts() -> None:
    """A decode step of B rows: the MoE layers read min(n_e, B·n_a) experts, the dense ones
    their MLP; each with its count."""
    ops = _by_name(decode_operations(DEEPSEEK))
    assert ops["moe.up"].count == L_moe and ops["mlp.down"].count == L - L_moe
    v = {**SMALL, B: 1}
    up = ops["moe.up"].bytes.subs(v)
    assert up == 2 * 2 * 8 * 8 + 2 * 2 * (8 + 8)  # 2 experts read (B·n_a = 2 < n_e = 6)
    assert total_bytes(decode_operations(DEEPSEEK)).subs(v) > total_bytes(
        [o for o in decode_operations(DEEPSEEK) if o.kind == "projection"]).subs(v)


def test_entries() -> None:
    entries = {e.name: e for e in moe.entries()}
    assert entries["moe.params"].expr == parameter_count(DEEPSEEK)
    assert entries["moe.params.active"].expr == active_parameter_count(DEEPSEEK)
    assert set(entries) >= {"moe.params.shared_gate", "moe.params.routed.active", "moe.mlp.flops"}
