"""One device's share under tensor, pipeline, expert and context parallelism together: every
degree 1 is the single device exactly; the devices' FLOPs add up to the single device's (EP: of
the N·B sequences the N ranks run; CP: of the one prompt they split); the balanced causal split
and the K/V passes checked against enumerations by hand; the expert-parallel weights by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Rational, expand, simplify

from roofline.derive import context_parallel as cp
from roofline.derive import expert_parallel as ep
from roofline.derive import parallel
from roofline.derive.architecture import Architecture
from roofline.derive.transformer import prefill_operations, total_flops, weight_bytes
from roofline.symbols import (B, D, F, G_node, H, L, N_cp, N_ep, N_pp, N_tp, P_peak, T, V,
                              alpha_link, b_a, b_kv, b_w, beta_link, n_a, n_e, n_kv, n_q)

ONE = {N_tp: 1, N_pp: 1, N_ep: 1, N_cp: 1, G_node: 1}
ARCHS = {
    "llama": Architecture(),
    "mixtral": Architecture(moe=True),
    "deepseek": Architecture(moe=True, shared_experts=True, moe_layers="some", mla=True),
    "gemma2": Architecture(window="some", post_norms=True, embed_scale=True),
}
EDGE = ("final_norm", "lm_head")  # on the device that holds the last positions only


def _same(a, b) -> bool:
    d = a - b
    return d == 0 or simplify(d) == 0


@pytest.mark.parametrize("name", ARCHS)
@pytest.mark.parametrize("mode", ["kernel", "naive", "tiled"])
def test_degree_one_is_the_single_device(name, mode):
    arch = ARCHS[name]
    device = parallel.device_prefill_operations(arch, mode, caches=("l2",))
    single = prefill_operations(arch, mode, caches=("l2",))
    compute = [op for op in device if op.kind != "communication"]
    assert [op.name for op in compute] == [op.name for op in single]
    for a, b in zip(compute, single):
        assert _same(a.flops.subs(ONE), b.flops) and _same(a.bytes.subs(ONE), b.bytes)
        assert _same(a.count.subs(ONE), b.count)
        for (la, qa), (lb, qb) in zip(a.levels, b.levels):
            assert la == lb and _same(qa.subs(ONE), qb)
    for op in device:  # every collective takes no time on one device (or does not happen)
        if op.kind == "communication":
            assert op.count.subs(ONE) == 0 or simplify(op.levels[0][1].subs(ONE)) == 0


@pytest.mark.parametrize("name", ARCHS)
def test_weights_and_cache_at_degree_one(name):
    arch = ARCHS[name]
    assert _same(parallel.device_weight_bytes(arch).subs(ONE), weight_bytes(arch))


@pytest.mark.parametrize("name", ["mixtral", "deepseek"])
def test_expert_parallel_flops_add_up(name):
    """N_ep ranks, each with its own B sequences: their FLOPs are one device's over N_ep·B."""
    arch = ARCHS[name]
    device = [op for op in parallel.device_prefill_operations(arch, "tiled")
              if op.kind != "communication"]
    single = prefill_operations(arch, "tiled")
    others = {N_tp: 1, N_pp: 1, N_cp: 1}
    for n in (2, 4, 8):
        per = total_flops(device).subs({**others, N_ep: n})
        assert expand(n * per - total_flops(single).subs(B, n * B)) == 0


@pytest.mark.parametrize("name", ARCHS)
def test_context_parallel_flops_add_up(name):
    """N_cp devices split one prompt: their FLOPs add up to the single device's (the final norm
    and the LM head, of the last positions, run once, on the last device)."""
    arch = ARCHS[name]
    device = [op for op in parallel.device_prefill_operations(arch, "kernel")
              if op.kind != "communication"]
    single = prefill_operations(arch, "kernel")
    others = {N_tp: 1, N_pp: 1, N_ep: 1}
    edge = total_flops([op for op in single if op.name in EDGE])
    for n in (2, 4, 8):
        per = total_flops([op for op in device if op.name not in EDGE]).subs({**others, N_cp: n})
        assert _same(n * per + edge, total_flops(single))


@pytest.mark.parametrize("t, n", [(8, 2), (16, 2), (24, 3), (32, 4), (64, 8)])
def test_balanced_split_by_enumeration(t, n):
    """The prompt cut into 2n chunks, rank i holding chunks i and 2n − 1 − i (Llama 3 §3.3.2):
    counting the causal pairs (query q, key k ≤ q) of each rank's queries gives T(T+1)/(2n) for
    every rank."""
    size = t // (2 * n)
    for rank in range(n):
        chunks = (rank, 2 * n - 1 - rank)
        queries = [q for c in chunks for q in range(c * size, (c + 1) * size)]
        pairs = sum(q + 1 for q in queries)
        assert pairs == cp.device_pairs().subs({T: t, N_cp: n}) == Rational(t * (t + 1), 2 * n)


def test_kv_passes_by_hand():
    """Llama-3-8B-like (8 KV heads of 128), T = 32768 over 4 devices on NVLink (450 GB/s,
    0.47 us): each layer passes 3 blocks of 8192 tokens · 2·8·128 values · 2 bytes."""
    t = cp.layer_pass_time().subs({N_cp: 4, B: 1, T: 32768, n_kv: 8, H: 128, b_a: 2,
                                   alpha_link: Rational(47, 10**8), beta_link: 450 * 10**9})
    block = 8192 * 2 * 8 * 128 * 2
    assert float(t) == pytest.approx(3 * (0.47e-6 + block / 450e9), rel=1e-12)
    # a latent-attention model passes its latent, d_c + H_r values a token
    mla = cp.kv_elements(Architecture(mla=True))
    assert str(mla) == "H_r + d_c"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 16), alpha=st.integers(1, 100), beta=st.integers(10, 2000),
       peak=st.integers(100, 5000))
def test_layer_hidden_root_satisfies_its_equality(n, alpha, beta, peak):
    vals = {N_cp: n, B: 1, H: 128, n_q: 32, n_kv: 8, b_a: 2, alpha_link: Rational(alpha, 10**7),
            beta_link: beta * 10**9, P_peak: peak * 10**12}
    root = cp.layer_hidden_tokens().subs(vals)
    assert root.is_positive
    compute = 4 * B * n_q * H * cp.device_pairs() / P_peak
    gap = (compute - cp.layer_pass_time()).subs(vals)
    scale = float(cp.layer_pass_time().subs(vals).subs(T, root))
    assert abs(float(gap.subs(T, root))) <= 1e-9 * scale
    assert float(gap.subs(T, 2 * root)) > 0 > float(gap.subs(T, root / 2))


def test_expert_parallel_weights_mixtral_by_hand():
    """Mixtral-8x7B over 8 devices: each holds 1 of the 8 experts of every layer (3·D·F
    parameters each) and everything else whole: 46.70 B − 32·7·3·4096·14336 parameters."""
    vals = {D: 4096, F: 14336, n_q: 32, n_kv: 8, H: 128, L: 32, V: 32000, n_e: 8, n_a: 2,
            b_w: 2, N_tp: 1, N_ep: 8}
    total = weight_bytes(Architecture(moe=True)).subs(vals)
    assert total == 2 * 46_702_792_704  # Mixtral-8x7B's published parameter count
    held = parallel.device_weight_bytes(Architecture(moe=True)).subs(vals)
    assert held == 2 * (46_702_792_704 - 32 * 7 * 3 * 4096 * 14336)


def test_expert_bytes_read_by_hand():
    """The routed GEMMs of one device read the weights of min(n_e/N_ep, B·T·n_a) experts:
    Mixtral on 8 devices, one token: 1 expert's of each GEMM (not 2)."""
    up = next(op for op in prefill_operations(Architecture(moe=True)) if op.name == "moe.up")
    vals = {D: 4096, F: 14336, n_e: 8, n_a: 2, B: 1, T: 1, b_w: 2, b_a: 2, N_ep: 8}
    shard = ep.shard(up).bytes.subs(vals)
    assert shard == 2 * 4096 * 2 * 14336 + 2 * 2 * (4096 + 2 * 14336)  # 1 expert, 2 pairs
    assert up.bytes.subs(vals) == 2 * 2 * 4096 * 2 * 14336 + 2 * 2 * (4096 + 2 * 14336)


def test_the_operations_in_order():
    names = [op.name for op in parallel.device_prefill_operations(Architecture(moe=True))]
    assert names.index("ep.dispatch") == names.index("moe.up") - 1
    assert names.index("ep.combine") == names.index("moe.down") + 1
    assert names.index("cp.kv_pass") == names.index("attention.tiled") + 1
    assert "ep.dispatch" not in [op.name for op in parallel.device_prefill_operations()]


def test_per_device_kv_cache():
    """Llama-3-8B-like over 2 tensor- and 4 context-parallel devices, T = 32768: each holds 4
    of the 8 KV heads of its 8192 positions."""
    kv = parallel.device_kv_cache_bytes(Architecture())
    vals = {B: 1, L: 32, n_kv: 8, H: 128, T: 32768, N_tp: 2, N_cp: 4, b_kv: 2}
    assert kv.subs(vals) == 2 * 32 * 4 * 128 * 8192 * 2
