"""Attention: FLOP counts, and the HBM traffic of each mode against loops that count it."""

import math

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Symbol, limit, oo, simplify, solve

from roofline.derive import attention
from roofline.symbols import B, H, M_sram, T, b_a, n_kv, n_q


def _v(**kw):
    names = {"B": B, "H": H, "M_sram": M_sram, "T": T, "b_a": b_a, "n_kv": n_kv, "n_q": n_q}
    return {names[k]: v for k, v in kw.items()}


def test_flashattention2_flop_count():
    # FA-2 §4.1: 4 · seqlen² · head dimension · number of heads; causal: about half
    v = _v(B=1, T=1024, H=64, n_q=16)
    assert attention.flops(causal=False).subs(v) == 4 * 1024**2 * 64 * 16
    causal = attention.flops().subs(v)
    assert causal == 4 * 64 * 16 * sum(i + 1 for i in range(1024))  # pairs j ≤ i, counted
    assert abs(causal / (2 * 1024**2 * 64 * 16) - 1) < 1e-3


def test_naive_bytes_follow_algorithm_0_step_by_step():
    t, h = 4, 2  # per head: read Q, K; write S; read S; write P; read P, V; write O
    steps = (t * h + t * h) + t * t + t * t + t * t + (t * t + t * h) + t * h
    assert attention.naive_bytes().subs(_v(B=1, n_q=1, T=t, H=h, b_a=1)) == steps


def _fa1_loops(t, h, m_el, causal):
    """FlashAttention Algorithm 1, counted element by element (one head)."""
    bc = math.ceil(m_el / (4 * h))
    moved = t * h + 2 * t  # line 2: O, ℓ, m initialised in HBM
    for j in range(math.ceil(t / bc)):
        lo, hi = j * bc, min(t, (j + 1) * bc)
        moved += 2 * (hi - lo) * h  # line 6: load K_j, V_j
        for row in range(t):
            if causal and row < lo:
                continue  # every key of the block is masked for this row
            moved += h + h + 2  # line 8: Q_i, O_i, ℓ_i, m_i
            moved += h + 2  # lines 12-13: write O_i, ℓ_i, m_i
    return moved


def _fa2_loops(t, h, m_el, causal):
    """FlashAttention-2's loop order: Q blocks outer, K, V blocks inner (one head)."""
    br = min(math.ceil(m_el / (4 * h)), h)
    moved = 0
    for i in range(math.ceil(t / br)):
        lo, hi = i * br, min(t, (i + 1) * br)
        moved += (hi - lo) * h  # Q_i
        keys = min(t, hi) if causal else t
        moved += 2 * keys * h  # every K_j, V_j needed by this row block
        moved += (hi - lo) * h + (hi - lo)  # O_i and the logsumexp
    return moved


@pytest.mark.parametrize("t,h,m_el", [(1, 4, 64), (7, 4, 64), (64, 8, 256), (100, 8, 200),
                                      (33, 16, 1000), (256, 4, 4096)])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_bytes_equal_the_counted_loops(t, h, m_el, causal):
    v = _v(B=1, n_q=1, T=t, H=h, b_a=2, M_sram=2 * m_el)
    assert attention.tiled_bytes(causal).subs(v) == 2 * _fa1_loops(t, h, m_el, causal)
    assert attention.tiled_fa2_bytes(causal).subs(v) == 2 * _fa2_loops(t, h, m_el, causal)


def test_theorem_2_orders_as_limits():
    # naive: Θ(T·H + T²); tiled: Θ(T²·H²/M) — finite, non-zero ratios in the limits
    naive = attention.naive_bytes().subs({B: 1, n_q: 1})
    assert limit(naive / (T * H + T**2), T, oo) == 4 * b_a
    m = Symbol("m", positive=True)  # SRAM in elements
    tiled = attention.long_prompts(attention.tiled_bytes(causal=False, smooth=True))
    tiled = tiled.subs({B: 1, n_q: 1, M_sram: m * b_a})
    per_t = limit(tiled / (T**2 * H**2 / m), T, oo)
    assert per_t.is_finite and per_t.is_positive
    assert limit(per_t, H, oo) == 12 * b_a  # 3H re-read elements × 4H/M blocks


def test_ideal_intensity_is_the_scaling_book_formula():
    s = Symbol("S_keys", positive=True)
    mha = {n_kv: n_q, b_a: 2}
    ratio = attention.flops(T, s, causal=False) / attention.ideal_bytes(T, s)
    assert simplify(ratio.subs(mha) - s * T / (s + T)) == 0  # S·T/(S+T)
    assert simplify((attention.flops(causal=False) / attention.ideal_bytes()).subs(mha) - T / 2) == 0
    g = Symbol("G", positive=True)  # GQA: T·G/(G+1)
    gqa = (attention.flops(causal=False) / attention.ideal_bytes()).subs({n_q: g * n_kv, b_a: 2})
    assert simplify(gqa - T * g / (g + 1)) == 0


def test_a100_setting_tiled_is_well_below_naive():
    # FlashAttention Fig. 2 setting: T = 1024, H = 64, 16 heads, 192 KB of SRAM
    v = _v(B=1, n_q=16, n_kv=16, T=1024, H=64, b_a=2, M_sram=192_000)
    naive, tiled = attention.naive_bytes().subs(v), attention.tiled_bytes(False).subs(v)
    assert tiled < naive / 4
    assert attention.ideal_bytes().subs(v) < tiled


def test_tiny_sram_makes_tiling_worse_and_where_they_cross():
    v = _v(B=1, n_q=1, n_kv=1, T=1024, H=64, b_a=2)
    tiny = {**v, M_sram: 4 * 64 * 2}  # B_c = 1: Q and O re-read once per key
    assert attention.tiled_bytes(False).subs(tiny) > attention.naive_bytes().subs(tiny)
    # the smooth form crosses the naive traffic at one SRAM size, solved by SymPy
    gap = attention.long_prompts(attention.tiled_bytes(False, smooth=True)
                                 - attention.naive_bytes()).subs(v)
    (m_star,) = solve(gap, M_sram)
    # the exact (ceiling) form changes sign across it
    below = {**v, M_sram: float(m_star) * 0.8}
    above = {**v, M_sram: float(m_star) * 1.25}
    assert attention.tiled_bytes(False).subs(below) > attention.naive_bytes().subs(below)
    assert attention.tiled_bytes(False).subs(above) < attention.naive_bytes().subs(above)
    # ≈ 3·H² elements: 12·T²H²/M = 4T² → M = 3H² (elements) × b_a
    assert abs(float(m_star) / (3 * 64**2 * 2) - 1) < 0.1


def test_fa2_traffic_stops_falling_once_b_r_reaches_h():
    v = _v(B=1, n_q=1, T=4096, H=128, b_a=2)
    cap = 4 * 128**2 * 2  # M_sram ≥ 4·H²·b_a: B_r = H
    at = lambda m: attention.tiled_fa2_bytes().subs({**v, M_sram: m})  # noqa: E731
    assert at(cap // 2) > at(cap) == at(2 * cap) == at(64 * cap)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.sampled_from([32, 64, 128, 256]),
       st.integers(1, 8), st.integers(1, 8), st.integers(2**10, 2**20),
       st.booleans())
def test_tiled_traffic_never_below_ideal(t, h, group, kv, sram, causal):
    v = _v(B=1, T=t, H=h, n_q=group * kv, n_kv=kv, b_a=2, M_sram=max(sram, 8 * h))
    ideal = attention.ideal_bytes().subs(v)
    assert attention.tiled_bytes(causal).subs(v) >= ideal
    assert attention.tiled_fa2_bytes(causal).subs(v) >= ideal
    assert attention.naive_bytes().subs(v) >= ideal


def test_relaxed_block_counts_never_drop_below_one():
    # a huge SRAM (TPU VMEM): one block of K, V covers the whole prompt, as ⌈T/B_c⌉ = 1 says
    v = _v(B=1, n_q=1, T=1000, H=128, b_a=2, M_sram=128 * 2**20)
    for causal in (False, True):
        exact = attention.tiled_bytes(causal).subs(v)
        relaxed = attention.tiled_bytes(causal, smooth=True).subs(v)
        assert relaxed == exact == 2 * (3 * 1000 * 128 + 2 * 1000 + 1000 * (3 * 128 + 4))
