"""Batched and chunked prefill on a device (roofline.serving.schedule): hand numbers, a second
method through the evaluation core, and every bad-input message."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from roofline import serving as service
from roofline.errors import InputError

# Llama-3-8B (D 4096, F 14336, H 128, n_q 32, n_kv 8, L 32) on H100-SXM, bf16 (2 bytes).
LLAMA = {"D": 4096, "F": 14336, "H": 128, "n_q": 32, "n_kv": 8, "L": 32}


@pytest.fixture(scope="module")
def h100():
    from roofline.api import setting

    return setting("H100-SXM", "Llama-3-8B")


@pytest.fixture(scope="module")
def h100_ideal(h100):
    """Ideal attention: each chunk reads its K, V and the earlier cache once per KV head."""
    return replace(h100, attention="ideal")


def _layer_weights() -> int:
    """Weight elements of one Llama layer, by hand: QKV, O, gate + up, down, two norm gains."""
    d, f, h, n_q, n_kv = (LLAMA[k] for k in ("D", "F", "H", "n_q", "n_kv"))
    return d * (n_q + 2 * n_kv) * h + n_q * h * d + 2 * d * f + f * d + 2 * d


def test_batching_times(h100):
    from roofline.derive import batching as derive
    from roofline.evaluate import prefill_time
    from roofline.symbols import B, T

    b = service.batching(h100, 2048, 4, 10)
    # the last prompt's TTFT is the prefill of 4 sequences (lambdify) ...
    at_four = float(prefill_time(replace(h100, batch=4), [2048])[0])
    assert b.last_s == pytest.approx(at_four, rel=1e-12)
    assert b.execution_s == b.last_s and b.per_prompt_s == pytest.approx(at_four / 4)
    # ... and the derived batch_ttft_last substituted exactly (a second method)
    exact = derive.batch_ttft_last(h100.model.architecture, h100.attention, h100.caches)
    assert b.last_s == pytest.approx(float(exact.xreplace({**h100.values(), B: 4, T: 2048})),
                                     rel=1e-12)
    # the first prompt waits (b − 1)/R = 3/10 s for the batch to fill
    assert b.wait_s == pytest.approx(0.3) and b.first_s - b.last_s == pytest.approx(0.3)
    assert b.single_s == pytest.approx(float(prefill_time(h100, [2048])[0]), rel=1e-12)
    one = service.batching(h100, 2048, 1, 10)
    assert one.first_s == one.last_s == pytest.approx(b.single_s, rel=1e-12)


def test_batch_stops_helping_is_the_projection_crossover_over_the_prompt(h100):
    from roofline.evaluate import crossover_values

    cross = crossover_values(h100)["projection_compute_bound_tokens"].value  # batch 1: rows
    for prompt in (16, 2048):
        b = service.batching(h100, prompt, 2, 1)
        assert b.crossover_rows == pytest.approx(cross, rel=1e-9)
        assert b.stops_helping * prompt == pytest.approx(cross, rel=1e-9)
    # ridge 989.4e12 / 3.35e12 ≈ 295 FLOP/byte: the crossover lies near I_ridge·b_w/2 ≈ 295 rows
    assert 295 < cross < 340


def test_batching_stops_lowering_the_time_per_prompt_beyond_the_crossover(h100):
    # the meaning, by a second method: per prompt, the projections' roofline time falls while
    # B·T is below the crossover (~326 rows: B* ≈ 20 at T = 16) and stays put beyond it
    from roofline.evaluate import prefill

    assert 16 < service.batching(h100, 16, 2, 1).stops_helping < 32

    def per_prompt(batch):
        (point,) = prefill(replace(h100, batch=batch), [16])
        return sum(o.time_s for o in point.operations if o.kind == "projection") / batch

    below = [per_prompt(b) for b in (1, 4, 16)]
    assert below[0] > 3.5 * below[1] > 3.5 * 3.5 * below[2]  # memory-bound: weights shared
    assert per_prompt(32) == pytest.approx(per_prompt(128), rel=1e-12)  # compute-bound


def test_chunking_of_a_divisible_prompt(h100_ideal):
    h100 = h100_ideal
    c = service.chunking(h100, 2048, 512)
    assert c.sizes == (512,) * 4
    assert sum(c.times_s) == pytest.approx(c.total_s)
    # every chunk does its share: the chunks' FLOPs add up to the one-shot FLOPs, which are the
    # layers' FLOPs of the ordinary prefill (embedding, final norm and LM head left out)
    from roofline.evaluate import prefill

    (point,) = prefill(h100, [2048])
    layers = sum(o.flops for o in point.operations if o.count == LLAMA["L"])
    assert sum(c.flops) == pytest.approx(c.one_shot_flops, rel=1e-12)
    assert c.one_shot_flops == pytest.approx(layers, rel=1e-12)
    # chunk k reads the KV cache of the k·512 tokens before it: 2·n_kv·H·b_kv bytes a token
    # and layer = 4096 bytes, over 32 layers
    for k in range(4):
        assert c.bytes[k] - c.bytes[0] == pytest.approx(32 * 4096 * 512 * k)
    # 512 > the crossover: each chunk is compute-bound enough that chunking costs < 1 %
    assert c.one_shot_s < c.total_s < 1.01 * c.one_shot_s


def test_chunking_extra_bytes_by_hand(h100_ideal):
    h100 = h100_ideal
    # 4 chunks: the layers' weights are read 3 more times, and 512 + 1024 + 1536 tokens of KV
    # cache are read again: 32 · (3 · 2 · W + 4096 · 3072)
    c = service.chunking(h100, 2048, 512)
    expected = 32 * (3 * 2 * _layer_weights() + 4096 * 3072)
    assert c.extra_bytes == pytest.approx(expected, rel=1e-12)  # chunk_bytes_extra evaluated
    assert sum(c.bytes) - c.one_shot_bytes == pytest.approx(expected, rel=1e-12)  # chunk by chunk


def test_chunking_when_the_chunk_does_not_divide_the_prompt(h100_ideal):
    h100 = h100_ideal
    c = service.chunking(h100, 2048, 500)
    assert c.sizes == (500, 500, 500, 500, 48)
    assert sum(c.flops) == pytest.approx(c.one_shot_flops, rel=1e-12)
    # 5 chunks: 4 more weight reads; the cache before chunk k is 500·k tokens (0 + ... + 2000)
    expected = 32 * (4 * 2 * _layer_weights() + 4096 * 5000)
    assert c.extra_bytes == pytest.approx(expected, rel=1e-12)
    # the short last chunk: its cache read is that of 2000 tokens; otherwise 48/500 of a chunk's
    # activation traffic. Its bytes less its weights and cache are 48/500 of chunk 0's.
    weights = 32 * 2 * _layer_weights()
    assert c.bytes[4] - weights - 32 * 4096 * 2000 == pytest.approx(
        (c.bytes[0] - weights) * 48 / 500, rel=1e-9)
    whole = service.chunking(h100, 2048, 2048)
    assert whole.times_s == (whole.one_shot_s,) and whole.extra_bytes == 0


def test_smallest_compute_bound_chunk_is_the_projection_crossover(h100):
    from roofline.evaluate import crossover_values

    c = service.chunking(h100, 2048, 512)
    assert c.min_chunk == pytest.approx(
        crossover_values(h100)["projection_compute_bound_tokens"].value, rel=1e-9)


def test_projections_that_never_reach_the_ridge(h100, tmp_path):
    # a made-up device with 100 GB/s: ridge ≈ 9,894 FLOP/byte, above what a Llama-3-8B layer's
    # projections can reach (2W/(b_a·A) ≈ 3,137): neither crossover exists
    from roofline.api import setting

    h100_file = Path(__file__).parents[1] / "hardware" / "H100-SXM.toml"
    text = (h100_file.read_text().replace('"H100-SXM"', '"slow"')
            .replace('bandwidth = { value = "3.35 TB/s"', 'bandwidth = { value = "100 GB/s"'))
    (tmp_path / "slow.toml").write_text(text)
    slow = setting(str(tmp_path / "slow.toml"), "Llama-3-8B")
    b = service.batching(slow, 2048, 2, 1)
    assert b.crossover_rows is None and b.stops_helping is None
    assert service.chunking(slow, 2048, 512).min_chunk is None


@pytest.mark.parametrize("batch", [0, -2, 1.5, True, 10**6 + 1])
def test_batch_must_be_a_positive_integer(h100, batch):
    with pytest.raises(InputError, match=r"^batch_prompts: the number of prompts in a batch "
                                         r"must be an integer from 1 to 1,000,000 \(got "):
        service.batching(h100, 2048, batch, 1)


@pytest.mark.parametrize("chunk", [0, 2049, 2.5])
def test_chunk_must_lie_between_one_and_the_prompt(h100, chunk):
    with pytest.raises(InputError) as info:
        service.chunking(h100, 2048, chunk)
    assert str(info.value) == ("chunk: a chunk must be an integer from 1 to the prompt length "
                               f"2048 tokens (got {chunk!r})")


def test_batching_and_chunking_check_prompt_and_rate(h100):
    with pytest.raises(InputError, match=r"^prompt: a prompt length must be a positive "
                                         r"integer of at most 1,000,000,000 tokens \(got 0\)"):
        service.batching(h100, 0, 2, 1)
    with pytest.raises(InputError, match=r"^prompt: a prompt length must be a positive"):
        service.chunking(h100, -5, 1)
    with pytest.raises(InputError, match=r"^prompt: a prompt length must be a positive"):
        service.chunking(h100, 2**64 - 1, 512)  # used to wrap to −1 token in numpy
    with pytest.raises(InputError, match=r"^rate: the arrival rate must be a finite number"):
        service.batching(h100, 2048, 2, 0)


# --- issue 14: chunks in the setting's attention mode ---------------------------------------------
@pytest.mark.parametrize("mode", ["naive", "tiled", "tiled_fa2", "kernel", "ideal"])
def test_one_shot_is_the_ordinary_prefill_in_the_same_mode(h100, mode):
    # a second method: the core's derived prefill forms, the layers only (count L)
    from roofline.evaluate import prefill

    s = replace(h100, attention=mode)
    c = service.chunking(s, 2048, 512)
    assert c.attention == mode
    (point,) = prefill(s, [2048])
    layers = [o for o in point.operations if o.count == LLAMA["L"]]
    assert c.one_shot_flops == pytest.approx(sum(o.flops for o in layers), rel=1e-12)
    assert c.one_shot_bytes == pytest.approx(sum(o.bytes for o in layers), rel=1e-12)
    assert c.one_shot_s == pytest.approx(sum(o.time_s for o in layers), rel=1e-12)


def test_naive_chunks_by_hand(h100, h100_ideal):
    # Algorithm 0 per query head for chunk k (q = 512 queries, o = 512·k cached keys,
    # keys = o + q): Q, O, the chunk's K, V at b_a, the cache's K, V at b_kv, and the q×keys
    # scores S written, read, P written, read; ideal: Q, O per query head, K, V per KV head
    naive = service.chunking(replace(h100, attention="naive"), 2048, 512)
    ideal = service.chunking(h100_ideal, 2048, 512)
    n_q, n_kv, h, layers, q = 32, 8, 128, 32, 512
    for k in range(4):
        o = 512 * k
        attn_naive = n_q * (2 * (4 * q * h + 4 * q * (o + q)) + 2 * 2 * o * h)
        attn_ideal = 2 * h * (2 * n_q * q + 2 * n_kv * q) + 2 * n_kv * h * o * 2
        assert naive.bytes[k] - ideal.bytes[k] == pytest.approx(
            layers * (attn_naive - attn_ideal), rel=1e-12)
    # naive computes every score of its q×(o+q) block: Σ_k 4·n_q·H·q·(o+q) against the causal
    # T(T+1)/2 pairs of the fused modes
    pairs_naive = sum(q * (512 * k + q) for k in range(4))
    assert sum(naive.flops) - sum(ideal.flops) == pytest.approx(
        layers * 4 * n_q * h * (pairs_naive - 2048 * 2049 // 2), rel=1e-12)


def test_chunked_prefill_follows_the_attention_mode(h100):
    # issue 14: 8192 tokens in chunks of 512 gave the same 148.1 ms in every mode, and called it
    # "1 × the one-shot" against an ideal one-shot while the prefill was tiled (168 ms)
    totals = {m: service.chunking(replace(h100, attention=m), 8192, 512) for m in
              ("naive", "tiled", "ideal")}
    assert len({round(c.total_s, 6) for c in totals.values()}) == 3
    assert len({round(c.one_shot_s, 6) for c in totals.values()}) == 3
    # tiled re-reads Q and O once per key block: chunks of 512 over up to 8192 keys re-read the
    # earlier keys' blocks, so chunking costs more than one-shot, unlike ideal attention (behind
    # H100's L2 most re-reads are hits: under 1 % more)
    assert 1.005 * totals["tiled"].one_shot_s < totals["tiled"].total_s < 1.02 * \
        totals["tiled"].one_shot_s
    assert totals["ideal"].total_s < 1.001 * totals["ideal"].one_shot_s
    # naive chunks write q×(o+q) scores, never the whole 8192×8192: less than one-shot
    assert totals["naive"].total_s < totals["naive"].one_shot_s
    assert totals["naive"].extra_bytes < 0


def test_tiled_mode_needs_the_sram(h100):
    from roofline.api import setting

    tpu = setting("TPU-v4", "Llama-3-8B", attention="tiled")
    with pytest.raises(InputError, match=r"^attention: tiled attention needs the on-chip SRAM"):
        service.chunking(tpu, 2048, 512)


# --- issue 14: mixture-of-experts models ----------------------------------------------------------
def test_moe_batching_and_chunking(recwarn):
    # Mixtral-8x7B raised NotImplementedError (SymPy: multiple generators Min(n_e, T_chunk·n_a)).
    # By hand, every expert read (rows·n_a ≥ n_e): per layer, weights W and per-row FLOPs f and
    # activation elements a of QKV, O, router, n_a experts' up (gate + up) and down
    from roofline.api import setting

    s = setting("H100-SXM", "Mixtral-8x7B")
    d, f, h, n_q, n_kv, n_e, n_a = 4096, 14336, 128, 32, 8, 8, 2
    qkv = (n_q + 2 * n_kv) * h
    weights = d * qkv + n_q * h * d + d * n_e + n_e * (2 * d * f + f * d)
    flops_row = 2 * (d * qkv + n_q * h * d + d * n_e + n_a * (2 * d * f + f * d))
    acts_row = (d + qkv) + (n_q * h + d) + (d + n_e) + n_a * (d + 2 * f) + n_a * (f + d)
    ridge = s.peak / s.bandwidth
    rows = ridge * 2 * weights / (flops_row - ridge * 2 * acts_row)  # b_w = b_a = 2
    assert 1100 < rows < 1300
    c = service.chunking(s, 2048, 512)
    assert c.min_chunk == pytest.approx(rows, rel=1e-9)
    assert sum(c.flops) == pytest.approx(c.one_shot_flops, rel=1e-12)
    b = service.batching(s, 2048, 4, 2)
    assert b.crossover_rows == pytest.approx(rows, rel=1e-9)
    assert b.stops_helping == pytest.approx(rows / 2048, rel=1e-9)


def test_chunks_are_bounded_in_number():
    # 10⁹ tokens in chunks of 1 token were evaluated chunk by chunk: 15.7 GB and counting;
    # 100,000 chunks at most: ⌈10⁹ / 10⁵⌉ = 10,000 tokens a chunk at least
    from roofline.serving.checks import MAX_CHUNKS, check_chunk

    assert MAX_CHUNKS == 100_000
    check_chunk(10_000, 10**9)
    check_chunk(2, 200_000)  # exactly 100,000 chunks
    with pytest.raises(InputError, match=r"^chunk: at most 100,000 chunks: for 1,000,000,000 "
                                         r"tokens, chunks of at least 10,000 tokens \(got 9999\)"):
        check_chunk(9_999, 10**9)
    with pytest.raises(InputError, match=r"chunks of at least 3 tokens \(got 2\)"):
        check_chunk(2, 200_001)
