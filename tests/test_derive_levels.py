"""Fused attention over the memory hierarchy (roofline.derive.levels): the split of the bytes
over the levels, its limits, and the spill point against a walk over the launch grid."""

import math

import pytest
from sympy import Max, Min, limit, oo, simplify

from roofline.derive import attention, levels
from roofline.symbols import B, H, M_l2, M_l3, M_sram, N_sm, T, W, b_a, n_kv, n_q

# Llama-3-8B's attention (HF meta-llama/Meta-Llama-3-8B config.json) on H100-SXM (132 SMs, 50 MB
# of L2: NVIDIA H100 datasheet), bf16
LLAMA = {B: 1, n_q: 32, n_kv: 8, H: 128, b_a: 2}
H100 = {N_sm: 132, M_l2: 50_000_000, M_sram: 228 * 1024}


def _at(expr, t, extra=None):
    return float(expr.subs({**LLAMA, **H100, **(extra or {}), T: t}))


@pytest.mark.parametrize("mode", levels.TILED)
@pytest.mark.parametrize("t", [64, 2048, 60_000, 200_000, 2_000_000])
def test_what_the_cache_serves_and_what_reaches_hbm_add_up_to_the_schedule(mode, t):
    hbm, served = levels.level_bytes(mode, ("l2",))
    schedule = attention.hbm_bytes(mode)
    q_s, q = _at(schedule, t), _at(hbm, t)
    hits = _at(served["l2"], t) - q  # the bytes the L2 serves from what it holds
    assert _at(served["l2"], t) == q_s == _at(served["sram"], t)
    assert hits >= 0 and hits + q == pytest.approx(q_s, rel=1e-12)
    assert q >= _at(levels.compulsory_bytes(mode), t) * (1 - 1e-12)


@pytest.mark.parametrize("mode", levels.TILED)
def test_within_the_cache_hbm_moves_the_ideal_bytes_and_the_statistics(mode):
    hbm, _ = levels.level_bytes(mode, ("l2",))
    stats = 2 if mode == "tiled" else 1  # ℓ and m, or one logsumexp, per query row
    for t in (128, 1024, 2048):
        ideal = _at(attention.ideal_bytes(), t)
        assert _at(hbm, t) == pytest.approx(ideal + 32 * t * stats * 2, rel=1e-12)
        assert _at(hbm, t) < _at(attention.hbm_bytes(mode), t)  # below the paper's count
    if mode != "tiled":  # (Algorithm 1's Q and O of 132 heads outgrow the L2 from 3,028 tokens)
        assert _at(hbm, 8192) < _at(attention.hbm_bytes(mode), 8192) / 4  # far below


def _long(expr):
    """The branch that holds as T → ∞ (Llama-3-8B on H100): each Max/Min at the argument that
    is the largest (smallest) at T = 10¹² tokens: block counts T/B, the cache overflowing, N_sm
    blocks on one key/value head."""
    at = {**LLAMA, **H100, T: 10**12}
    while expr.atoms(Max, Min):
        inner = min(expr.atoms(Max, Min), key=lambda a: len(str(a)))
        values = [float(a.subs(at)) for a in inner.args]
        best = max(values) if isinstance(inner, Max) else min(values)
        expr = expr.xreplace({inner: inner.args[values.index(best)]})
    return expr


@pytest.mark.parametrize("mode", levels.TILED)
def test_beyond_the_spill_point_hbm_tends_to_the_sram_only_count_over_the_sharing(mode):
    hbm, _ = levels.level_bytes(mode, ("l2",), smooth=True)
    q_s = attention.hbm_bytes(mode, smooth=True)
    q_c = levels.compulsory_bytes(mode)
    share = 1 if mode == "tiled" else N_sm
    # the misses tend to every re-read, each fetched once for the blocks that share it
    ratio = limit(_long((hbm - q_c) / (q_s - q_c)).subs({M_sram: H100[M_sram]}), T, oo)
    assert simplify(ratio * share - 1) == 0
    # one thread block in flight: the paper's SRAM-only count itself
    alone = _long(hbm / q_s).subs({N_sm: 1, M_sram: H100[M_sram]})
    assert simplify(limit(alone, T, oo) - 1) == 0


def _grid_walk_working_set(t: int) -> float:
    """The K and V bytes the first 132 thread blocks of the launch grid re-read: the grid is
    (row blocks of 128, query heads), row blocks fastest (FlashAttention-2's launch); query head
    h reads key/value head h // 4 (GQA, 32/8), every key of the prompt as its row blocks go."""
    row_blocks = math.ceil(t / 128)
    blocks = [(i % row_blocks, i // row_blocks) for i in range(132)]
    kv_heads = {head // 4 for _, head in blocks if head < 32}
    return len(kv_heads) * 2 * t * 128 * 2


def test_the_spill_point_on_h100_is_within_two_of_a_walk_over_the_launch_grid():
    from roofline.api import setting
    from roofline.evaluate import crossover_value

    s = setting("H100-SXM", "Llama-3-8B")
    value = crossover_value(s, "attention_cache_spill_tokens.kernel").value
    lo, hi = 1, 10**8  # the walk's working set grows with T: bisect for 50 MB
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _grid_walk_working_set(mid) < 50e6 else (lo, mid)
    assert 0.5 < value / hi < 2
    # and by hand: one key/value head's K and V, 2·T·H·b_a = 512·T bytes, reach 50 MB
    assert value == pytest.approx(50e6 / 512)


def test_a_second_cache_serves_the_first_ones_misses():
    hbm, served = levels.level_bytes("kernel", ("l2", "l3"))
    one, _ = levels.level_bytes("kernel", ("l2",))
    mi300x = {N_sm: 304, M_l2: 4 * 2**20 * 8, M_l3: 256 * 2**20}  # CDNA 3 white paper
    for t in (4096, 100_000, 1_000_000):
        # what the L3 serves is what reaches HBM behind the L2 alone
        assert _at(served["l3"], t, mi300x) == pytest.approx(_at(one, t, mi300x))
        assert _at(hbm, t, mi300x) <= _at(served["l3"], t, mi300x)


def test_a_window_bounds_the_working_set():
    ws = levels.working_set("kernel", windowed=True)
    full = levels.working_set("kernel")
    assert _at(ws, 100_000, {W: 4096}) == pytest.approx(2 * 4096 * 128 * 2)
    assert _at(ws, 2048, {W: 4096}) == _at(full, 2048)
