"""Tensor parallelism (roofline.derive.tensor_parallel): N_tp = 1 is the single device exactly,
per-device shares add up to the whole, the communication counted by hand."""

from __future__ import annotations

import pytest
from sympy import Rational, expand

from roofline.derive import tensor_parallel as tp
from roofline.derive.architecture import Architecture
from roofline.derive.decode import model_kv_cache_bytes
from roofline.derive.transformer import prefill_operations, weight_bytes
from roofline.symbols import (B, D, F, H, L, N_pp, N_tp, T, V, alpha_link, b_a, b_w,
                              beta_link, n_kv, n_q)

ARCHS = {"llama": Architecture(), "moe": Architecture(moe=True),
         "window": Architecture(window="all"), "opt": Architecture(norm="layer",
                                                                  activation="relu",
                                                                  gated_mlp=False,
                                                                  linear_bias=True,
                                                                  position="learned")}


def _single(arch, mode, caches):
    return prefill_operations(arch, mode, caches=caches)


@pytest.mark.parametrize("name", ARCHS)
@pytest.mark.parametrize("mode, caches", [("kernel", ("l2",)), ("tiled", ()), ("naive", ()),
                                          ("tiled_fa2", ("l2", "l3"))])
def test_one_device_is_the_single_device_prefill(name, mode, caches):
    arch = ARCHS[name]
    one = [op for op in tp.tp_prefill_operations(arch, mode, caches=caches)]
    compute = [op for op in one if op.kind != tp.COMMUNICATION]
    single = _single(arch, mode, caches)
    assert [op.name for op in compute] == [op.name for op in single]
    for a, b in zip(compute, single):
        assert a.count == b.count
        assert expand(a.flops.subs(N_tp, 1) - b.flops) == 0, a.name
        assert expand(a.bytes.subs(N_tp, 1) - b.bytes) == 0, a.name
        assert [lv for lv, _ in a.levels] == [lv for lv, _ in b.levels]
        for (_, qa), (_, qb) in zip(a.levels, b.levels):
            assert expand(qa.subs(N_tp, 1) - qb) == 0, a.name
    for op in one:
        if op.kind == tp.COMMUNICATION:  # no link traffic on one device (and one stage)
            assert expand((op.count * op.levels[0][1]).subs({N_tp: 1, N_pp: 1})) == 0
    assert expand(tp.device_weight_bytes(arch).subs(N_tp, 1) - weight_bytes(arch)) == 0
    assert expand(tp.device_kv_cache_bytes(arch).subs(N_tp, 1)
                  - model_kv_cache_bytes(arch)) == 0


@pytest.mark.parametrize("n", [2, 4, 8])
def test_shares_add_up_to_the_whole(n):
    """Per-device FLOPs of the split operations × N equal the single device's (n_kv ≥ N)."""
    arch = Architecture()
    split = ("qkv_proj", "attention.kernel", "o_proj", "mlp.up", "mlp.act", "mlp.down",
             "lm_head", "rope")
    per = {op.name: op for op in tp.tp_prefill_operations(arch, "kernel", caches=("l2",))}
    whole = {op.name: op for op in _single(arch, "kernel", ("l2",))}
    vals = {N_tp: n, n_kv: 8}  # n_kv divisible by N
    for name in split:
        assert expand(n * per[name].flops.subs(vals) - whole[name].flops.subs(n_kv, 8)) == 0
    for name in ("attn_norm", "residual_add.mlp"):  # replicated
        assert per[name].flops == whole[name].flops


def test_kv_heads_replicated_beyond_n_kv():
    # Llama-2-70B: n_kv = 8; at N = 16 each device still holds one KV head (vLLM)
    kv = tp.device_kv_cache_bytes().subs({n_kv: 8, N_tp: 16})
    assert kv == model_kv_cache_bytes(Architecture()).subs(n_kv, 1)
    assert tp.substitution()[n_kv].subs({n_kv: 8, N_tp: 4}) == 2


def test_communication_by_hand():
    ops = {op.name: op for op in tp.tp_prefill_operations(Architecture(), "kernel")}
    ar = ops["tp.all_reduce.attn"]
    assert ar.count == L and ar.flops == 0 and ar.bytes == 0
    # 2(N−1)/N·B·T·D·b_a bytes + 2(N−1)·α·β as bytes of link time
    expected = 2 * (N_tp - 1) * B * T * D * b_a / N_tp + 2 * (N_tp - 1) * alpha_link * beta_link
    assert expand(ar.levels[0][1] - expected) == 0
    # Llama-2-70B at T = 2048, N = 8 on H100 NVLink (450 GB/s, 0.47 us): one all-reduce
    t = (ar.levels[0][1] / beta_link).subs({B: 1, T: 2048, D: 8192, b_a: 2, N_tp: 8,
                                           alpha_link: Rational(47, 10**8),
                                           beta_link: 450 * 10**9})
    # hand: 2·7/8·33,554,432 B / 450e9 B/s = 130.489 us, + 14·0.47 us = 6.58 us
    assert float(t) == pytest.approx(130.4894e-6 + 6.58e-6, rel=1e-5)
    assert expand(tp.layer_communication_time() * beta_link
                  - 2 * expected) == 0
    names = [op.name for op in tp.tp_prefill_operations(Architecture(), "kernel")]
    assert names.index("tp.all_reduce.attn") == names.index("o_proj") + 1
    assert names.index("tp.all_reduce.mlp") == names.index("residual_add.mlp") - 1


def test_weights_per_device_llama2_70b():
    """Llama-2-70B (D 8192, F 28672, 64 query and 8 KV heads of 128, 80 layers, V 32000) in
    bf16 on 2 devices: every projection and the vocabulary halved, the norms whole."""
    vals = {D: 8192, F: 28672, n_q: 64, n_kv: 8, H: 128, L: 80, V: 32000, b_w: 2}
    whole = weight_bytes(Architecture()).subs(vals)
    assert whole == 2 * 68_976_648_192  # 68.98 B parameters
    per = tp.device_weight_bytes().subs({**vals, N_tp: 2})
    norms = 2 * (80 * 2 * 8192 + 8192)
    assert per == (whole - norms) / 2 + norms
