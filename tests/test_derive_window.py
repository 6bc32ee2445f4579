"""Sliding-window attention (roofline.derive.window) against brute-force loops over the mask:
the query–key pairs, the rows FlashAttention's Algorithm 1 revisits and the keys each of
FlashAttention-2's row blocks reads; and at T ≤ W every form equals the one without a window."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sympy import Integer, Rational

from roofline.derive import attention, window
from roofline.derive.architecture import ATTENTION_MODES, Architecture
from roofline.derive.decode import decode_operations, model_kv_cache_bytes
from roofline.derive.transformer import prefill_operations, total_bytes, total_flops
from roofline.symbols import B, D, F, H, L, L_w, M_sram, T, T_ctx, V, W, b_a, b_kv, b_w, n_kv, n_q


def _seen(i: int, j: int, w: int) -> bool:
    """The mask: query i sees key j when 0 ≤ i − j < w."""
    return 0 <= i - j < w


def _pairs(t: int, w: int) -> int:
    return sum(_seen(i, j, w) for i in range(t) for j in range(t))


def _fa1_rows(t: int, w: int, b_c: int) -> int:
    """Algorithm 1: for each key block, the query rows with at least one key of it unmasked."""
    blocks = [range(s, min(s + b_c, t)) for s in range(0, t, b_c)]
    return sum(sum(any(_seen(i, j, w) for j in blk) for i in range(t)) for blk in blocks)


def _fa2_keys(t: int, w: int, b_r: int) -> int:
    """FlashAttention-2 order: for each query block, the keys any of its rows sees."""
    blocks = [range(s, min(s + b_r, t)) for s in range(0, t, b_r)]
    return sum(sum(any(_seen(i, j, w) for i in blk) for j in range(t)) for blk in blocks)


SMALL = [(t, w) for t in range(1, 14) for w in range(1, 16)]


@pytest.mark.parametrize("t, w", SMALL)
def test_pairs_equal_a_count_over_the_mask(t: int, w: int) -> None:
    expected = _pairs(t, w)
    assert window.pairs().subs({T: t, W: w}) == expected
    assert window.pairs_piecewise().subs({T: t, W: w}) == expected


def _values(t: int, w: int, block: int, head: int = 3) -> dict:
    # H = head, b_a = 1 byte, M_sram = 4·H·block bytes: B_c = block, B_r = min(block, H)
    return {T: t, W: w, B: 2, n_q: 3, n_kv: 1, H: head, b_a: 1, M_sram: 4 * head * block}


@pytest.mark.parametrize("t, w", SMALL[::5])
@pytest.mark.parametrize("block", [1, 2, 3, 5])
def test_tiled_traffic_equals_a_loop_over_blocks(t: int, w: int, block: int) -> None:
    v = _values(t, w, block)
    h, per_head = v[H], v[B] * v[n_q] * v[b_a]
    fa1 = 2 * t * h + (t * h + 2 * t) + _fa1_rows(t, w, block) * (3 * h + 4)
    assert window.tiled_bytes().subs(v) == per_head * fa1
    b_r = min(block, h)
    fa2 = 2 * t * h + t + 2 * h * _fa2_keys(t, w, b_r)
    assert window.tiled_fa2_bytes().subs(v) == per_head * fa2


@pytest.mark.parametrize("t, w", SMALL[::2])
def test_flops_count_four_H_per_pair(t: int, w: int) -> None:
    v = _values(t, w, 2)
    per_pair = 4 * v[B] * v[n_q] * v[H]
    assert window.flops().subs(v) == per_pair * _pairs(t, w)
    # naive stores and computes the whole band: min(T, W) scores per query
    assert window.flops("naive").subs(v) == per_pair * t * min(t, w)
    assert window.score_bytes().subs(v) == v[B] * v[n_q] * t * min(t, w)
    band = v[B] * v[n_q] * (4 * t * v[H] + 4 * t * min(t, w))  # Algorithm 0 on the band
    assert window.naive_bytes().subs(v) == band


@cache
def _with_and_without(mode: str, smooth: bool) -> tuple:
    """(FLOPs, bytes) of ``mode`` with a window and without, built once for every example."""
    return (window.flops(mode), attention.mode_flops(mode), window.hbm_bytes(mode, smooth),
            attention.hbm_bytes(mode, smooth=smooth))


@settings(max_examples=150, deadline=None)
@given(t=st.integers(1, 5000), extra=st.integers(0, 5000), block=st.integers(1, 300),
       head=st.sampled_from([64, 96, 128, 256]), smooth=st.booleans())
@example(t=1, extra=1, block=2, head=64, smooth=True)  # once a negative relaxed skip
def test_no_window_change_while_the_prompt_fits_in_it(t, extra, block, head, smooth):
    """T ≤ W: every mode's FLOPs and bytes equal those without a window (exact and smooth)."""
    v = _values(t, t + extra, block, head)
    for mode in ATTENTION_MODES:
        flops, plain_flops, nbytes, plain_bytes = _with_and_without(mode, smooth)
        assert flops.xreplace(v) == plain_flops.xreplace(v), mode
        assert nbytes.xreplace(v) == plain_bytes.xreplace(v), mode


def test_long_prompts_grow_as_W_times_T() -> None:
    """Beyond the window, FLOPs and tiled traffic grow linearly in T: their second difference
    in T is 0 (exact forms, block boundaries aligned)."""
    v = {W: 64, B: 1, n_q: 2, n_kv: 1, H: 16, b_a: 2, M_sram: 4 * 16 * 2 * 16}  # B_c = 16
    for expr in (window.flops(), window.tiled_bytes(), window.tiled_fa2_bytes(),
                 window.naive_bytes()):
        f = [expr.subs({**v, T: t}) for t in (1024, 2048, 3072)]
        assert f[2] - 2 * f[1] + f[0] == 0
    quadratic = attention.hbm_bytes("tiled").subs({**v, T: 1024})
    assert window.tiled_bytes().subs({**v, T: 1024}) < quadratic / 4


def _model_values(t: int) -> dict:
    # Mistral-7B-v0.1's shape (HF config.json), bf16: W = 4096
    return {T: t, W: 4096, B: 1, D: 4096, F: 14336, n_q: 32, n_kv: 8, H: 128, L: 32,
            V: 32000, b_a: 2, b_w: 2, b_kv: 2, M_sram: 228 * 1024}


def test_mistral_attention_and_cache_at_32k_by_hand() -> None:
    """Issue 12's example: at 32,768 tokens the window leaves about a quarter of the FLOPs and
    an eighth of the cache. Pairs: 4096·32768 − 4096·4095/2 = 125,831,168 per head."""
    v, arch = _model_values(32768), Architecture(window="all")
    attn = [op for op in prefill_operations(arch, "tiled") if op.kind == "attention"]
    assert [op.name for op in attn] == ["attention.tiled.window"]
    flops = (attn[0].count * attn[0].flops).subs(v)
    assert flops == 32 * 4 * 32 * 128 * 125_831_168  # L · 4 · n_q · H · pairs
    full = (32 * attention.flops()).subs(v)
    assert Rational(1, 5) < flops / full < Rational(1, 3)
    kv = model_kv_cache_bytes(arch).subs(v)
    assert kv == 2 * 32 * 8 * 128 * 4096 * 2  # 2·L·n_kv·H·W·b_kv = 536,870,912
    assert model_kv_cache_bytes(Architecture(window="all", kv_cache="full")).subs(v) == 8 * kv


def test_some_layers_windowed() -> None:
    """Gemma-2's split: L − L_w global layers and L_w local ones, each with its own count."""
    arch = Architecture(window="some")
    attn = [op for op in prefill_operations(arch, "ideal") if op.kind == "attention"]
    assert [(op.name, op.count) for op in attn] == [("attention.ideal", L - L_w),
                                                   ("attention.ideal.window", L_w)]
    v = {**_model_values(10000), L: 42, L_w: 21}
    kv = model_kv_cache_bytes(arch).subs(v)
    assert kv == 2 * 8 * 128 * 2 * (21 * 10000 + 21 * 4096)
    step = [op for op in decode_operations(arch) if op.kind == "attention"]
    assert [op.count for op in step] == [L - L_w, L_w]
    keys = step[1].flops.subs({**v, T_ctx: 9999}) / (4 * 32 * 128)
    assert keys == 4096  # a decode step of a local layer attends to W keys


def test_windowed_model_equals_unwindowed_within_the_window() -> None:
    """Whole prefill and decode at T ≤ W: identical totals with and without the window."""
    for t in (1, 100, 4096):
        v = _model_values(t)
        for mode in ATTENTION_MODES:
            a = prefill_operations(Architecture(window="all"), mode)
            b = prefill_operations(Architecture(), mode)
            assert total_flops(a).subs(v) == total_flops(b).subs(v)
            assert total_bytes(a).subs(v) == total_bytes(b).subs(v)
        assert model_kv_cache_bytes(Architecture(window="all")).subs(v) \
            == model_kv_cache_bytes().subs(v)
        dv = {**v, T_ctx: t - 1}
        assert total_bytes(decode_operations(Architecture(window="all"))).subs(dv) \
            == total_bytes(decode_operations()).subs(dv)


def test_the_skipped_pairs_are_a_triangle() -> None:
    for t, w in ((10, 3), (100, 7), (50, 50)):
        s = t - min(t, w)
        assert Integer(t * (t + 1) // 2 - _pairs(t, w)) == s * (s + 1) // 2
