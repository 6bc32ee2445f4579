"""roofline.sweeps: arrays against exact substitution (roofline.evaluate) and hand-expanded
numbers for Llama-3-8B on H100-SXM (bf16): D = 4096, F = 14336, n_q = 32, n_kv = 8, H = 128,
L = 32; P = 989.4 TFLOP/s, β = 3.35 TB/s, SRAM 228 KiB = 233,472 bytes per SM."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import api, evaluate, sweeps
from roofline.errors import InputError

# Σ d_in·d_out of one layer's projections: QKV 4096×6144, O 4096×4096, up 4096×28672 (gate and
# up), down 14336×4096; and Σ (d_in + d_out) over them.
WEIGHTS = 4096 * 6144 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096  # = 218,103,808
WIDTHS = (4096 + 6144) + (4096 + 4096) + (4096 + 28672) + (14336 + 4096)  # = 69,632
PEAK, BW = 989.4e12, 3.35e12
FIXTURES = Path(__file__).parent / "fixtures" / "hardware"


@pytest.fixture(scope="module")
def s():
    return api.setting("H100-SXM", "Llama-3-8B")


def test_hand_sums():
    assert WEIGHTS == 218_103_808 and WIDTHS == 69_632


def test_projection_flops_and_bytes_by_hand(s):
    sweep = sweeps.by_kind(s, [1000, 4096])
    t = np.array([1000, 4096])
    assert sweep.flops["projection"] == pytest.approx(32 * 2 * t * WEIGHTS)
    assert sweep.bytes["projection"] == pytest.approx(32 * (2 * WEIGHTS + 2 * t * WIDTHS))
    # each projection is compute-bound at these lengths: time = FLOPs / P
    assert sweep.time["projection"] == pytest.approx(32 * 2 * t * WEIGHTS / PEAK)


def test_kinds_and_total_agree_with_exact_evaluation(s):
    prompts = [128, 2048, 32768]
    sweep = sweeps.by_kind(s, prompts)
    for i, point in enumerate(evaluate.prefill(s, prompts)):
        assert sweep.time["total"][i] == pytest.approx(point.time_s, rel=1e-12)
        assert sweep.flops["total"][i] == pytest.approx(point.flops, rel=1e-12)
        for kind in ("projection", "attention", "elementwise", "embedding", "lm_head"):
            ops = [o for o in point.operations if o.kind == kind]
            assert sweep.time[kind][i] == pytest.approx(sum(o.time_s for o in ops), rel=1e-12)
    assert list(sweep.compute_bound()) == [p.bound == "compute" for p in
                                          evaluate.prefill(s, prompts)]


@settings(max_examples=8, deadline=None)
@given(st.integers(min_value=1, max_value=2**20))
def test_lambdify_agrees_with_subs(t):
    s = api.setting("H100-SXM", "Llama-3-8B")
    (point,) = evaluate.prefill(s, [t])
    assert sweeps.by_kind(s, [t]).time["total"][0] == pytest.approx(point.time_s, rel=1e-9)
    assert evaluate.prefill_time(s, [t])[0] == pytest.approx(point.time_s, rel=1e-9)


def test_intensity_of_projections_by_hand(s):
    t = 2048.0
    expected = 2 * t * WEIGHTS / (2 * WEIGHTS + 2 * t * WIDTHS)  # L cancels
    assert sweeps.intensity(s, [t], ("projection",))[0] == pytest.approx(expected)
    whole = evaluate.prefill(s, [2048])[0]
    assert sweeps.intensity(s, [2048])[0] == pytest.approx(whole.intensity)


def test_attention_bytes_naive_and_ideal_by_hand(s):
    t = 1000.0
    # Algorithm 0 per head: 4·T·H + 4·T² elements; 32 heads; 2 bytes
    assert sweeps.attention_bytes(s, [t], "naive")[0] == pytest.approx(
        32 * 2 * (4 * t * 128 + 4 * t * t))
    # ideal: Q, O per query head and K, V per key/value head, once
    assert sweeps.attention_bytes(s, [t], "ideal")[0] == pytest.approx(
        128 * 2 * (2 * 32 * t + 2 * 8 * t))


def test_tiled_traffic_falls_with_sram(s):
    xs = [4096, 65536]
    small, own, big = (sweeps.attention_bytes(s, xs, "tiled", m)
                       for m in (233472 / 4, 233472, 233472 * 4))
    assert np.all(small > own) and np.all(own > big)
    assert np.allclose(own, sweeps.attention_bytes(s, xs, "tiled"))


def test_t2_coefficients(s):
    # naive: 4·n_q·b_a; tiled (FlashAttention Theorem 2's T²H²/M): 2·n_q·b_a²·H(3H + 4)/M
    assert sweeps.attention_t2_coefficient(s, "naive") == pytest.approx(4 * 32 * 2)
    assert sweeps.attention_t2_coefficient(s, "tiled") == pytest.approx(
        2 * 32 * 4 * 128 * 388 / 233472)
    assert sweeps.attention_t2_coefficient(s, "tiled", 4 * 233472) == pytest.approx(
        2 * 32 * 4 * 128 * 388 / 233472 / 4)
    assert sweeps.attention_t2_coefficient(s, "ideal") == 0


def test_intensity_limits(s):
    # naive computes all T² scores: 4T²H FLOPs over 4T²·b_a bytes → H/b_a = 64
    assert sweeps.attention_intensity_limit(s, "naive") == pytest.approx(64)
    # tiled: B_c = M/(4·H·b_a) = 228 rows; 2T²H FLOPs over T²(3H + 4)·b_a/(2B_c) bytes
    assert sweeps.attention_intensity_limit(s, "tiled") == pytest.approx(
        4 * 128 * 228 / (388 * 2))
    # FlashAttention-2 order, B_r = H: 2·B_r/b_a = 128
    assert sweeps.attention_intensity_limit(s, "tiled_fa2") == pytest.approx(128)
    assert sweeps.attention_intensity_limit(s, "ideal") == float("inf")


def test_footprint_by_hand(s):
    used = sweeps.footprint(s, [1000, 31608])
    assert used["kv_cache"] == pytest.approx(2 * 32 * 8 * 128 * np.array([1000, 31608]) * 2)
    assert used["scores"] == pytest.approx(32 * np.array([1000, 31608]) ** 2 * 2)
    assert used["weights"] == pytest.approx(2 * 8_030_261_248)


def test_decode_intensity_by_hand(s):
    b = np.array([1.0, 64.0, 326.0])
    proj = sweeps.decode_intensity(s, b, 8192, ("projection",))
    assert proj == pytest.approx(2 * b * WEIGHTS / (2 * WEIGHTS + 2 * b * WIDTHS))
    # the critical batch puts the projections at the ridge
    crit = evaluate.crossover_values(s)["decode_critical_batch"].value
    at = sweeps.decode_intensity(s, [crit], 8192, ("projection",))[0]
    assert at == pytest.approx(PEAK / BW, rel=1e-9)
    whole = evaluate.decode(s, 8192)  # batch 1
    assert sweeps.decode_intensity(s, [1], 8192)[0] == pytest.approx(whole.intensity)


def test_operation_points(s):
    points = sweeps.operation_points(s, [128, 2048])
    groups = {(p.group, p.tokens) for p in points}
    assert groups == {(g, t) for g in ("projection", "prefill", "attention.naive",
                                       "attention.kernel", "attention.ideal")
                      for t in (128, 2048)}
    whole = {p.tokens: p for p in points if p.group == "prefill"}
    for e in evaluate.prefill(s, [128, 2048]):
        assert whole[e.prompt_tokens].intensity == pytest.approx(e.intensity)
        assert whole[e.prompt_tokens].attained == pytest.approx(e.flops / e.time_s)
    proj = next(p for p in points if p.group == "projection" and p.tokens == 2048)
    assert proj.attained == pytest.approx(PEAK)  # compute-bound: on the flat roof
    d = sweeps.decode_point(s, 64, 8192)
    assert d.intensity == pytest.approx(evaluate.decode(api.setting(
        "H100-SXM", "Llama-3-8B", batch=64), 8192).intensity)


def test_device_without_sram_skips_tiled(tmp_path):
    text = (FIXTURES / "good.toml").read_text()
    start = text.index("[on_chip]")
    path = tmp_path / "no_sram.toml"
    path.write_text(text[:start] + text[text.index("[interconnect]"):])
    s = api.setting(str(path), "Llama-3-8B", attention="ideal")
    assert s.hardware.sram_per_sm is None
    assert {p.group for p in sweeps.operation_points(s, [512])} == {
        "projection", "prefill", "attention.naive", "attention.kernel", "attention.ideal"}
    # the paper's tiled schedules need the SRAM size; without it they are left out
    assert not any(p.group.startswith("attention.tiled") for p in sweeps.operation_points(
        s, [512], modes=("naive", "tiled", "tiled_fa2", "kernel", "ideal")))


@pytest.mark.parametrize("values", [[], [0], [-5], [float("nan")]])
def test_bad_prompt_arrays(s, values):
    with pytest.raises(InputError, match="^prompt: needs a non-empty list of positive"):
        sweeps.by_kind(s, values)


def test_bad_context(s):
    with pytest.raises(InputError, match="^context: must be a positive integer"):
        sweeps.decode_intensity(s, [1], 0)
    with pytest.raises(InputError, match="^batch: needs a non-empty list"):
        sweeps.decode_intensity(s, [], 1024)


def test_memory_fits_by_hand(s):
    # issue 14: weights 2·8,030,261,248 bytes; one sequence's KV cache 2·L·n_kv·H·b_kv per
    # token = 131,072 bytes; 80 GB of HBM
    weights, kv = 2 * 8_030_261_248, 2 * 32 * 8 * 128 * 2
    assert sweeps.decode_memory(s, [1, 64], 8192) == pytest.approx(
        weights + np.array([1, 64]) * kv * 8192)
    held = (80e9 - weights) // (kv * 8192)  # 59 sequences at 8,192 tokens
    assert sweeps.max_batch(s, 8192) == held == 59
    assert list(sweeps.decode_fits(s, [held, held + 1], 8192)) == [True, False]
    assert sweeps.max_batch(s, 10**7) == 0  # not even one sequence of 10⁷ tokens
    # one layer's naive scores beside the weights and the KV cache: the crossover's rule, and
    # a naive prefill's
    limit = evaluate.crossover_values(s)["naive_scores_exceed_memory_tokens"].value
    assert list(sweeps.scores_fit(s, [limit - 1, limit + 1])) == [True, False]
    kv_limit = evaluate.crossover_values(s)["kv_cache_exceeds_memory_tokens"].value
    assert (80e9 - weights) / kv == pytest.approx(kv_limit)
    # a whole prefill fits while its peak, live activations counted (issue 29), does: the rule
    # of prefill_exceeds_memory_tokens, earlier than the scores' or the KV cache's alone
    for mode, alone in (("naive", limit), ("kernel", kv_limit)):
        at = sweeps.with_mode(s, mode)
        peak = evaluate.crossover_values(at)[f"prefill_exceeds_memory_tokens.{mode}"].value
        assert peak < alone
        assert list(sweeps.prefill_fits(at, [math.floor(peak), math.ceil(peak)])) \
            == [True, False]
    assert sweeps.with_batch(s, 1) is s and sweeps.with_batch(s, 4).batch == 4


def test_memory_is_one_devices_share_under_parallelism():
    # the figures' "does not fit" (hollow markers, dashed decode, "memory holds B ≤ …") asked
    # the whole model's weights and KV cache of a device that holds a quarter of them (TP 4).
    # Llama-3-8B by hand: projections L·218,103,808 parameters split four ways, the vocabulary
    # (embedding and LM head, 2·V·D) too, the 2L + 1 norms of D in full; one device's KV heads
    # n_kv/4 = 2 of 8
    tp = api.setting("H100-SXM", "Llama-3-8B", tp=4)
    params = 32 * WEIGHTS // 4 + 2 * 128256 * 4096 // 4 + (2 * 32 + 1) * 4096
    used = sweeps.footprint(tp, [1000])
    assert used["weights"] == pytest.approx([2 * params])  # 4,015,529,984 bytes
    assert used["kv_cache"] == pytest.approx([2 * 32 * 2 * 128 * 1000 * 2])
    assert used["scores"] == pytest.approx([8 * 1000**2 * 2])  # one layer's, 8 of 32 heads
    assert evaluate.memory_bytes(tp, 1000) == pytest.approx(2 * params + 2 * 32 * 2 * 128 * 1000
                                                            * 2)
    # pipeline stages: the fullest stage's (the weights' warning's rule). Two stages of 16
    # layers (vLLM's get_pp_indices); the first holds the embedding (V·D), the last the final
    # norm (D) and the untied LM head (V·D): the last, fuller by D
    pp = api.setting("H100-SXM", "Llama-3-8B", pp=2)
    last = 16 * (WEIGHTS + 2 * 4096) + 4096 + 128256 * 4096
    assert sweeps.footprint(pp, [1000])["weights"] == pytest.approx([2 * last], rel=1e-12)
    assert sweeps.footprint(pp, [1000])["kv_cache"] == pytest.approx(
        [2 * 16 * 8 * 128 * 1000 * 2], rel=1e-12)
    # a decode step holds what the decode step models: tensor parallelism's shares alone (its
    # weights and KV heads; no pipeline stages, as `prefill` prints beside it)
    assert sweeps.decode_memory(pp, [1], 1000)[0] == pytest.approx(
        2 * 8_030_261_248 + 2 * 32 * 8 * 128 * 1000 * 2)
    assert sweeps.decode_memory(tp, [3], 1000)[0] == pytest.approx(
        2 * params + 3 * 2 * 32 * 2 * 128 * 1000 * 2)
    # Llama-3-70B's 141 GB of weights do not fit in one H100's 80 GB, a quarter of them do
    with pytest.warns(UserWarning, match="do not fit"):
        whole = api.setting("H100-SXM", "Llama-3-70B")
    assert not sweeps.prefill_fits(whole, [2048])[0]
    quarter = api.setting("H100-SXM", "Llama-3-70B", tp=4)
    assert sweeps.prefill_fits(quarter, [2048])[0] and sweeps.max_batch(quarter, 8192) > 0


def test_a_windowed_layer_is_one_devices_share_under_tensor_parallelism():
    """The window panel's curves are one device's heads, as the global layer's are: below W the
    windowed and global layers agree, and TP 4 runs a quarter of Mistral-7B's 32 heads (8 KV
    heads: 2 a device)."""
    one, four = (api.setting("H100-SXM", "Mistral-7B", tp=n) for n in (1, 4))
    for s in (one, four):
        flops, nbytes = sweeps.window_attention(s, [1024], "kernel")
        assert flops[0] == pytest.approx(sweeps.attention_flops(s, [1024], "kernel")[0])
        assert nbytes[0] == pytest.approx(sweeps.attention_bytes(s, [1024], "kernel")[0])
    assert sweeps.window_attention(four, [65536], "kernel")[0][0] == pytest.approx(
        sweeps.window_attention(one, [65536], "kernel")[0][0] / 4)
