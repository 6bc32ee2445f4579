"""Crossovers: each value satisfies its defining equality; published statements hold."""

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Symbol, simplify, sqrt

from roofline.derive import attention, crossovers as cx, projection
from roofline.derive.branches import quadratic_root
from roofline.derive.transformer import Architecture
from roofline.symbols import (B, C_mem, D, F, H, L, M_sram, P_peak, T, V, b_a, b_kv, b_w,
                              beta_hbm, n_kv, n_q)

LLAMA3_8B = {D: 4096, L: 32, n_q: 32, n_kv: 8, H: 128, F: 14336, V: 128256}


def test_quadratic_root_is_the_first_crossing():
    x = Symbol("x", positive=True)
    assert quadratic_root(x**2 + x - 1, x) == (sqrt(5) - 1) / 2
    # a₂ < 0: the smaller of the two positive roots (1 and 2)
    assert quadratic_root(-(x - 1) * (x - 2), x) == 1
    # a root at 0 is divided out
    assert quadratic_root(x**2 - 3 * x, x) == 3
    assert quadratic_root(2 * x - 6, x) == 3


def test_projection_crossover_by_hand_and_its_wide_layer_form():
    c = cx.crossovers()["projection_compute_bound_tokens"]
    w = 4096 * (32 + 16) * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336  # weights of one layer
    a = 4096 + (32 + 16) * 128 + 32 * 128 + 4096 + 4096 + 2 * 14336 + 14336 + 4096  # Σ(d_in+d_out)
    v = {**LLAMA3_8B, B: 1, b_w: 2, b_a: 2, P_peak: 989.4e12, beta_hbm: 3.35e12}
    i = 989.4e12 / 3.35e12
    hand = i * 2 * w / (2 * w - i * 2 * a)  # 2·T·w = I·(b_w·w + b_a·T·a)
    assert float(c.closed_form().subs(v)) == pytest.approx(hand, rel=1e-12)
    # scaling-book: ≈ I_ridge·b_w/2 for wide layers (B = 1): 295 on H100 in bf16
    assert simplify(c.simplified() - P_peak * b_w / (2 * beta_hbm * B)) == 0
    assert float(c.simplified().subs(v)) == pytest.approx(295.34, abs=0.01)


def test_attention_equals_qkvo_at_two_d_for_mha():
    # scaling-book: non-causal MHA attention FLOPs equal the QKVO projections' at T = 2D
    qkvo = projection.flops(T, D, 3 * D) + projection.flops(T, D, D)
    mha = attention.flops(causal=False).subs({B: 1, n_q: D / H})
    assert simplify(quadratic_root(mha - qkvo, T) - 2 * D) == 0


def test_attention_equals_projection_flops_in_the_catalogue():
    c = cx.crossovers()["attention_equals_projection_flops_tokens"]
    w = 4096 * (32 + 16) * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336
    # causal: 2·H·n_q·T(T+1) = 2·T·w  →  T = w/(H·n_q) − 1
    assert c.closed_form().subs(LLAMA3_8B) == w // (128 * 32) - 1


def test_naive_attention_intensity_cap_makes_it_never_compute_bound():
    c = cx.crossovers()["attention_compute_bound_tokens.naive"]
    # T·H/(H+T)/b_a = I  →  T = I·b_a·H/(H − I·b_a): exists only if H/b_a > I_ridge
    i = P_peak / beta_hbm
    assert simplify(c.closed_form() - i * b_a * H / (H - i * b_a)) == 0


def test_memory_crossovers_by_hand():
    cs = cx.crossovers()
    v = {**LLAMA3_8B, B: 1, b_w: 2, b_a: 2, b_kv: 2, C_mem: 80e9}
    weights = 2 * 8_030_261_248
    assert float(cs["kv_cache_exceeds_memory_tokens"].closed_form().subs(v)) == pytest.approx(
        (80e9 - weights) / (2 * 32 * 8 * 128 * 2))
    # 32 heads' T² scores of 2 bytes beside the weights and 131,072 bytes of KV cache a token:
    # 64·T² + 131,072·T = 80e9 − weights
    kv = 2 * 32 * 8 * 128 * 2
    assert float(cs["naive_scores_exceed_memory_tokens"].closed_form().subs(v)) == pytest.approx(
        (-kv + (kv**2 + 4 * 64 * (80e9 - weights)) ** 0.5) / (2 * 64))


def test_decode_critical_batch_is_the_projection_crossover_in_rows():
    cs = cx.crossovers()
    rows = cs["projection_compute_bound_tokens"].closed_form() * B
    assert simplify(rows - cs["decode_critical_batch"].closed_form()) == 0


def test_moe_main_branch_reads_every_expert():
    c = cx.crossovers(Architecture(moe=True))["projection_compute_bound_tokens"]
    assert any(arg == Symbol("n_e", positive=True, integer=True) for _, arg in c.main_branch.choices)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e13, 5e15), st.floats(2e11, 1e13), st.floats(2**14, 2**20),
       st.sampled_from([1, 2, 4]), st.integers(1, 64), st.sampled_from(sorted(cx.crossovers())))
def test_every_closed_form_satisfies_its_equality(closed_form_holds, peak, bw, sram, nbytes,
                                                 batch, name):
    # parallelism across devices (issue 13): tensor, expert and context degrees
    from roofline.symbols import (B_d, N_cp, N_ep, N_pp, N_tp, S, T_pre, alpha_link, beta_link,
                                  n_kern, t_host, t_launch, tau_tpot)

    v = {**LLAMA3_8B, P_peak: peak, beta_hbm: bw, M_sram: sram, b_w: nbytes, b_a: nbytes,
         b_kv: nbytes, C_mem: 1e12, N_tp: 4, N_ep: 2, N_cp: 4, N_pp: 2, beta_link: 4.5e11,
         alpha_link: 5e-7, t_launch: 4e-6, t_host: 2e-3, n_kern: 355,
         B_d: 32, S: 2048, T_pre: 1024, tau_tpot: 0.05}  # the TPOT budget's step and objective
    closed_form_holds(cx.crossovers()[name], v, batch)
