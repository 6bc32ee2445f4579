"""DeepSeek Sparse Attention (roofline.derive.sparse_attention) against brute-force loops: the
top-k pairs and the indexer's causal pairs counted query by query, the sparse attention equal to
dense latent attention (mla.py) while k_top ≥ T and linear in T beyond it, the indexer's
parameters by hand for DeepSeek-V3.2-Exp's config, and the crossovers substituted back."""

from __future__ import annotations

import doctest

import pytest
from sympy import Integer, Rational, S, Symbol, ceiling, expand, floor, simplify, sqrt

from roofline.derive import sparse_decode
from roofline.derive import attention, mla, projection, window
from roofline.derive import sparse_attention as dsa
from roofline.symbols import (B, D, H, H_idx, H_r, T, T_ctx, W, b_a, b_kv, d_c, d_cq, k_top,
                              n_idx, n_q)

# DeepSeek-V3.2-Exp, inference/config_671B_v3.2.json
V32 = {n_q: 128, d_c: 512, H_r: 64, H: 128, n_idx: 64, H_idx: 128, k_top: 2048, D: 7168,
       d_cq: 1536}
SMALL = {B: 2, n_q: 3, d_c: 5, H_r: 2, H: 4, n_idx: 2, H_idx: 3, b_a: 2, b_kv: 1}


def _topk_pairs(t: int, k: int) -> int:
    """Query i has the keys 0 … i; it keeps min(i + 1, k) of them."""
    return sum(min(len(range(i + 1)), k) for i in range(t))


def _dense_mqa_flops() -> object:
    """Dense latent attention in MQA (absorbed) mode, from mla.py: step_flops of T queries over
    no cached context, less its two per-token absorbing products."""
    absorbing = 2 * projection.flops(B * n_q * T, H, d_c)
    return mla.step_flops("absorbed", T, Integer(0)) - absorbing


# --- equal to dense latent attention while k_top ≥ T ----------------------------------------
def test_sparse_equals_dense_latent_attention_at_k_top_equal_T() -> None:
    assert simplify(dsa.sparse_flops().subs(k_top, T) - _dense_mqa_flops()) == 0
    assert simplify(dsa.topk_pairs().subs(k_top, T) - T * (T + 1) / 2) == 0
    # the masked MHA mode is mla.py's prefill attention over materialised heads
    mha = attention.flops().xreplace(mla.head_substitution())
    assert simplify(dsa.sparse_flops("mha") - mha) == 0


@pytest.mark.parametrize("t, k", [(1, 1), (5, 5), (7, 10), (12, 2048), (100, 101)])
def test_sparse_equals_dense_when_k_top_exceeds_T(t: int, k: int) -> None:
    v = {**SMALL, T: t, k_top: k}
    assert dsa.sparse_flops().subs(v) == _dense_mqa_flops().subs(v)
    # a direct count: per pair and head 2·(d_c + H_r) for the score and 2·d_c for P·c^KV
    per = 2 * (v[d_c] + v[H_r]) + 2 * v[d_c]
    assert dsa.sparse_flops().subs(v) == v[B] * v[n_q] * per * t * (t + 1) // 2
    # every key is gathered once per query: the latent of each causal pair
    assert dsa.sparse_bytes().subs(v) == dsa.sparse_bytes(pairs=dsa.causal_pairs()).subs(v)


# --- beyond k_top: linear in T ---------------------------------------------------------------
@pytest.mark.parametrize("t", range(1, 30))
@pytest.mark.parametrize("k", [1, 2, 3, 7, 16])
def test_topk_pairs_equal_a_loop_over_queries(t: int, k: int) -> None:
    expected = _topk_pairs(t, k)
    assert dsa.topk_pairs().subs({T: t, k_top: k}) == expected
    if t >= k:
        assert t * k - k * (k - 1) // 2 == expected


def test_topk_pairs_are_window_pairs() -> None:
    assert dsa.topk_pairs() == window.pairs().xreplace({W: k_top})


@pytest.mark.parametrize("t, k", [(4, 4), (9, 3), (2048, 2048), (5000, 2048), (70000, 2048)])
def test_flops_grow_linearly_beyond_k_top(t: int, k: int) -> None:
    f = dsa.sparse_flops().subs({**SMALL, k_top: k})
    steps = [f.subs(T, m * t) for m in (1, 2, 3)]
    assert steps[1] - steps[0] == steps[2] - steps[1] == SMALL[B] * SMALL[n_q] * (
        4 * SMALL[d_c] + 2 * SMALL[H_r]) * k * t
    # the indexer's is quadratic: its second difference is not zero
    g = dsa.indexer_flops().subs(SMALL)
    assert g.subs(T, 3 * t) - 2 * g.subs(T, 2 * t) + g.subs(T, t) > 0


def test_flops_linear_beyond_k_top_symbolically() -> None:
    s = Symbol("s", integer=True, nonnegative=True)  # T = k_top + s ≥ k_top
    pairs = dsa.topk_pairs().subs(T, k_top + s)
    assert expand(pairs - ((k_top + s) * k_top - k_top * (k_top - 1) / 2)) == 0
    f = dsa.sparse_flops()
    at = [f.subs(T, m * (k_top + s)) for m in (1, 2, 3)]
    assert expand((at[1] - at[0]) - (at[2] - at[1])) == 0


# --- the indexer -----------------------------------------------------------------------------
def _indexer_loop(t: int, heads: int, dim: int, sequences: int) -> int:
    """Every causal pair (i, j ≤ i), every indexer head: H_idx multiply-adds for q·k, a ReLU,
    a multiply-add of its weight into the sum."""
    flops = 0
    for _ in range(sequences):
        for i in range(t):
            for _j in range(i + 1):
                for _h in range(heads):
                    flops += 2 * dim + 1 + 2
    return flops


@pytest.mark.parametrize("t", [1, 2, 3, 8, 13])
@pytest.mark.parametrize("heads, dim", [(1, 1), (2, 3), (4, 8)])
def test_indexer_flops_equal_a_loop_over_causal_pairs(t: int, heads: int, dim: int) -> None:
    v = {T: t, n_idx: heads, H_idx: dim, B: 2}
    assert dsa.indexer_flops().subs(v) == _indexer_loop(t, heads, dim, 2)


def test_indexer_bytes_by_hand() -> None:
    t, v = 10, {**SMALL, T: 10, k_top: 4}
    q = t * v[n_idx] * (v[H_idx] * v[b_kv] + 4)
    keys = t * (v[H_idx] * v[b_kv] + 4)
    assert dsa.indexer_bytes().subs(v) == v[B] * (q + keys + 4 * t * (t + 1) // 2)
    assert dsa.indexer_bytes("indices").subs(v) == v[B] * (q + keys + 4 * t * 4)
    assert dsa.topk_bytes().subs(v) == v[B] * (4 * t * (t + 1) // 2 + 4 * t * 4)
    with pytest.raises(ValueError):
        dsa.indexer_bytes("logits")


def test_indexer_key_cache_is_132_bytes_at_fp8() -> None:
    """kernel.py/DeepGEMM: 128 E4M3 values and one FP32 scale per token."""
    per_key = dsa.indexer_bytes().subs({B: 1, T: 1, n_idx: 0}) - 4  # less the one logit
    assert per_key.subs({H_idx: 128, b_kv: 1}) == 132


def test_indexer_parameters_of_deepseek_v3_2_exp() -> None:
    """Indexer.__init__: wq_b Linear(q_lora_rank, n_heads·head_dim), wk Linear(dim, head_dim),
    k_norm LayerNorm(head_dim) (weight and bias), weights_proj Linear(dim, n_heads)."""
    by_hand = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert by_hand == 13959424
    assert dsa.indexer_parameters().subs(V32) == by_hand


def test_indexer_operations_named_and_sized() -> None:
    ops = dsa.indexer_operations(B * T)
    assert all(op.name.startswith("dsa.indexer.") for op in ops)
    names = {op.name: op for op in ops}
    assert names["dsa.indexer.q_up"].flops == projection.flops(B * T, d_cq, n_idx * H_idx)
    assert names["dsa.indexer.k_proj"].flops == projection.flops(B * T, D, H_idx)
    assert names["dsa.indexer.weights_proj"].flops == projection.flops(B * T, D, n_idx)
    # the rotary part covers the first qk_rope_head_dim (= H_r) of each q head and of k
    assert names["dsa.indexer.rope"].flops == 3 * B * T * (n_idx + 1) * H_r
    # a fast Hadamard transform (log2 128 = 7 stages), its scale, FP8 quantisation (2)
    one = names["dsa.indexer.rotate_quant"].flops.subs({B: 1, T: 1, n_idx: 0, H_idx: 128})
    assert simplify(one) == 128 * (7 + 1 + 2)


# --- decode ----------------------------------------------------------------------------------
def test_decode_step_attends_to_at_most_k_top() -> None:
    ops = {op.name: op for op in sparse_decode.decode_operations()}
    att = ops["dsa.attention.decode"]
    short = {**SMALL, T_ctx: 5, k_top: 100}
    absorbed = {op.name: op for op in mla.decode_step("absorbed")}
    assert att.flops.subs(short) == absorbed["attention.decode.latent"].flops.subs(short)
    long = [att.flops.subs({**SMALL, T_ctx: c, k_top: 16}) for c in (15, 100, 10 ** 6)]
    assert long[0] == long[1] == long[2] == SMALL[B] * SMALL[n_q] * (
        4 * SMALL[d_c] + 2 * SMALL[H_r]) * 16
    scores = ops["dsa.indexer.scores.decode"]
    assert scores.flops == B * n_idx * (2 * H_idx + 3) * (T_ctx + 1)


def test_prefill_operations_total_the_parts() -> None:
    ops = {op.name: op for op in dsa.prefill_operations()}
    for t in (100, 2048, 20_000, 100_000):
        at = {**V32, B: 1, T: t}
        assert ops["dsa.attention"].flops.subs(at) == dsa.bound_flops().subs(at)
    assert ops["dsa.indexer.scores"].flops == dsa.indexer_flops()
    # MQA mode's absorbing products do mla.kv_up's FLOPs with more activation bytes, so the
    # bound keeps kv_up
    absorbing = dsa.absorb_operations(B * T)
    flops = absorbing[0].flops + absorbing[1].flops
    assert expand(flops - projection.flops(B * T, d_c, 2 * n_q * H)) == 0  # = mla.kv_up
    more = (absorbing[0].bytes + absorbing[1].bytes
            - projection.hbm_bytes(B * T, d_c, 2 * n_q * H)).subs(SMALL).subs(T, 7)
    assert more > 0


# --- crossovers ------------------------------------------------------------------------------
def test_crossover_substituted_back_gives_equal_flops() -> None:
    a, c = dsa.indexer_pair_flops(), n_q * dsa.sparse_pair_flops()
    beyond = a * T * (T + 1) / 2 - c * (T * k_top - k_top * (k_top - 1) / 2)
    assert simplify(beyond.subs(T, dsa.crossover())) == 0
    x = dsa.crossover().subs(V32)
    assert x == Rational(17825533, 518) + sqrt(298848119490057) / 518
    assert 67785 < x < 67786
    diff = (dsa.indexer_flops() - dsa.sparse_flops()).subs({**V32, B: 1})
    assert expand(diff.subs(T, x)) == 0  # with the Min of topk_pairs
    assert diff.subs(T, floor(x)) < 0 < diff.subs(T, ceiling(x))
    assert dsa.crossover_condition().subs(V32) == S.true


def test_crossover_lies_beyond_k_top_while_the_condition_holds() -> None:
    for sizes in ({**V32, k_top: 512}, {**V32, n_idx: 8}, {**V32, n_q: 16}):
        assert dsa.crossover_condition().subs(sizes) == S.true
        assert dsa.crossover().subs(sizes) > sizes[k_top]
    # the other way round the indexer costs more from the first token: no crossing above k
    flipped = {**V32, n_q: 1, n_idx: 512}
    assert dsa.crossover_condition().subs(flipped) == S.false


def test_mode_crossover_substituted_back() -> None:
    y = dsa.mode_crossover().subs(V32)
    assert 12812 < y < 12813
    diff = (dsa.sparse_flops("mha") - dsa.sparse_flops("mqa")).subs({**V32, B: 1})
    assert expand(diff.subs(T, y)) == 0
    assert diff.subs(T, 2048) < 0 < diff.subs(T, 20000)  # masked MHA cheaper for short prompts
    with pytest.raises(ValueError):
        dsa.sparse_pair_flops("gqa")


# --- the catalogue ---------------------------------------------------------------------------
def test_entries_are_exact_named_and_sourced() -> None:
    entries = dsa.entries()
    assert entries and all(e.name.startswith("dsa.") for e in entries)
    assert len({e.name for e in entries}) == len(entries)
    for e in entries:
        assert e.source
        assert not any(a.is_Float for a in e.expr.atoms()), e.name


def test_docstring_examples_hold() -> None:
    failed, _ = doctest.testmod(dsa)
    assert failed == 0


def test_bound_takes_the_cheaper_mode() -> None:
    """The bound's FLOPs are masked MHA mode's below the mode crossover (≈ 12,813 tokens at
    V3.2's sizes: every causal pair at 4·(128 + 32) FLOPs a head) and MQA mode's beyond it
    (the top k at 4·(512 + 32)), each counted here by hand."""
    values = {**V32, B: 1}
    for t in (1_000, 4_096, 12_000, 13_000, 65_536):
        mha = 128 * 4 * (128 + 32) * t * (t + 1) // 2
        pairs = t * (t + 1) // 2 if t <= 2048 else t * 2048 - 2048 * 2047 // 2
        mqa = 128 * 4 * (512 + 32) * pairs
        assert dsa.bound_flops().subs({**values, T: t}) == min(mha, mqa)
        assert (mha < mqa) == (t < 12_813)
