"""The numeric TTFT layer: closed forms against hand numbers and against a seeded simulation;
distribution files; every bad-input message."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from roofline import service
from roofline.errors import InputError, NoSteadyStateError

T_EXEC = 0.1  # s, one prefill


# --- closed forms, by hand ---------------------------------------------------------------------
def test_md1_hand_numbers():
    r = service.ttft(5, service.queue_model(T_EXEC), slo=0.2)
    assert r.execution_s == pytest.approx(0.1)
    assert r.queueing_s == pytest.approx(5 * 0.01 / (2 * 0.5))  # 0.05 s
    assert r.total_s == pytest.approx(0.15)
    assert r.utilization == pytest.approx(0.5)
    assert r.max_rate_per_s == pytest.approx(2 * 0.1 / (0.1 * 0.3))  # 20/3 per second
    assert r.stable_rate_per_s == pytest.approx(10)


def test_parallel_and_replica_hand_numbers():
    inter = service.ttft(5, service.queue_model(T_EXEC, parallel="inter"))
    assert inter.total_s == pytest.approx(0.1 + 5 * 0.01 / (4 * 1.5))  # Eq. 2: 13/120
    assert inter.stable_rate_per_s == pytest.approx(20)
    intra = service.ttft(5, service.queue_model(T_EXEC, parallel="intra", speedup=1.5))
    assert intra.execution_s == pytest.approx(0.1 / 1.5)
    assert intra.total_s == pytest.approx(1 / 12)  # Eq. 3
    two = service.ttft(10, service.queue_model(T_EXEC, replicas=2))
    assert two.total_s == pytest.approx(0.15) and two.utilization == pytest.approx(0.5)


def test_max_rate_meets_the_target_numerically():
    model = service.queue_model(0.2, 0.05)  # E[t] = 0.2 s, E[t²] = 0.05 s²
    rate = service.max_rate(model, 0.5)
    assert service.ttft(rate, model).total_s == pytest.approx(0.5)
    assert service.max_rate(model, 0.2) is None  # execution alone fills the target


def test_inter_beats_intra_numeric():
    rate = service.inter_beats_intra_rate(T_EXEC, 1.5)
    inter = service.queue_model(T_EXEC, parallel="inter")
    intra = service.queue_model(T_EXEC, parallel="intra", speedup=1.5)
    assert service.ttft(rate, inter).total_s == pytest.approx(service.ttft(rate, intra).total_s)
    assert service.inter_beats_intra_rate(T_EXEC, 2) == math.inf


def test_curve_matches_pointwise_and_stops_at_the_steady_state_limit():
    model = service.queue_model(T_EXEC)
    execution, queueing = service.ttft_curve(np.array([0.0, 5.0, 10.0, 12.0]), model)
    assert execution.tolist() == pytest.approx([0.1] * 4)
    assert queueing[:2].tolist() == pytest.approx([0.0, 0.05])
    assert np.isnan(queueing[2:]).all()


# --- distributions -----------------------------------------------------------------------------
def test_moments_of_a_two_length_distribution():
    dist = service.Distribution.of([100, 300], [3, 1])
    mean, second = service.moments(dist, lambda lengths: lengths * 1e-3)
    assert mean == pytest.approx(0.75 * 0.1 + 0.25 * 0.3)
    assert second == pytest.approx(0.75 * 0.01 + 0.25 * 0.09)


def test_read_distribution_formats(tmp_path):
    path = tmp_path / "lengths.txt"
    path.write_text("# a trace\n512\n\n2048,0.5   # half as likely\n512\n")
    dist = service.read_distribution(path)
    assert dist.lengths.tolist() == [512, 2048]
    assert dist.weights.tolist() == pytest.approx([2 / 2.5, 0.5 / 2.5])


# --- simulation --------------------------------------------------------------------------------
def _loop_waits(interarrival, times):
    """Plain event-by-event FCFS: start = max(arrival, previous departure)."""
    arrival, free, waits = 0.0, 0.0, []
    for gap, s in zip(interarrival, times):
        arrival += gap
        start = max(arrival, free)
        waits.append(start - arrival)
        free = start + s
    return np.array(waits)


def test_vectorised_lindley_matches_an_event_loop():
    rng = np.random.default_rng(7)
    gaps, times = rng.exponential(1.0, 2000), rng.uniform(0.2, 1.6, 2000)
    assert service._waits(gaps, times) == pytest.approx(_loop_waits(gaps, times), abs=1e-9)


@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_md1_closed_form_lies_in_the_simulation_interval(load):
    rate = load / T_EXEC
    sim = service.simulate_queue(rate, T_EXEC, n_requests=200_000, seed=1)
    closed = service.ttft(rate, service.queue_model(T_EXEC)).total_s
    assert sim.contains(closed), (closed, sim)


def test_a_wrong_service_time_fails_the_check():
    rate = 0.6 / T_EXEC
    sim = service.simulate_queue(rate, T_EXEC, n_requests=200_000, seed=1)
    wrong = service.ttft(rate, service.queue_model(1.1 * T_EXEC)).total_s
    assert not sim.contains(wrong)


def test_mg1_closed_form_lies_in_the_simulation_interval():
    times = np.array([0.05, 0.25])  # two prompt lengths, equally likely
    model = service.queue_model(times.mean(), float((times**2).mean()))
    rate = 0.7 / times.mean()
    sim = service.simulate_queue(rate, times, n_requests=200_000, seed=3)
    closed = service.ttft(rate, model).total_s
    assert sim.contains(closed), (closed, sim)
    # the M/D/1 form at the same mean is too low: variance adds queueing
    assert not sim.contains(service.ttft(rate, service.queue_model(times.mean())).total_s)


def test_inter_op_pipeline_simulation():
    # a two-stage pipeline admits one prompt every t/2; a prompt's TTFT is its wait plus t
    rate = 1.2 / T_EXEC  # load 0.6 on the slowest stage
    sim = service.simulate_queue(rate, T_EXEC / 2, n_requests=200_000, seed=5, execution=T_EXEC)
    closed = service.ttft(rate, service.queue_model(T_EXEC, parallel="inter")).total_s
    assert sim.contains(closed), (closed, sim)


def test_simulation_is_seeded():
    a = service.simulate_queue(5, T_EXEC, n_requests=10_000, seed=11)
    b = service.simulate_queue(5, T_EXEC, n_requests=10_000, seed=11)
    assert a == b


# --- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rate", [0, -1.5])
def test_rate_must_be_positive(rate):
    with pytest.raises(InputError, match=r"^--rate: the arrival rate must be a finite number > 0"):
        service.ttft(rate, service.queue_model(T_EXEC))


def test_no_steady_state_names_the_largest_rate():
    with pytest.raises(NoSteadyStateError) as err:
        service.ttft(10, service.queue_model(0.12))
    assert str(err.value) == ("--rate: the queue has no steady state at load R·t = 1.2 ≥ 1; "
                              "the largest rate it can take is 8.33 /s (got 10)")


def test_no_steady_state_at_load_one_with_replicas():
    with pytest.raises(NoSteadyStateError, match=r"load R·t = 1 ≥ 1; the largest rate it can "
                                                 r"take is 20 /s \(got 20\)"):
        service.ttft(20, service.queue_model(T_EXEC, replicas=2))


@pytest.mark.parametrize("k", [1, 0.5, 2.5, float("nan")])
def test_speedup_outside_one_to_two(k):
    with pytest.raises(InputError, match=r"^--speedup: a two-way intra-op speedup must lie in "
                                         r"\(1, 2\]"):
        service.queue_model(T_EXEC, parallel="intra", speedup=k)


def test_speedup_two_is_allowed():
    assert service.queue_model(T_EXEC, parallel="intra", speedup=2).execution == 0.05


def test_intra_needs_a_speedup():
    with pytest.raises(InputError, match=r"^--speedup: intra-op parallelism needs a speedup"):
        service.queue_model(T_EXEC, parallel="intra")


def test_slo_must_be_positive():
    with pytest.raises(InputError, match=r"^--slo: the TTFT target must be a finite number"):
        service.ttft(1, service.queue_model(T_EXEC), slo=0)


def test_replicas_must_be_a_positive_integer():
    with pytest.raises(InputError, match=r"^--replicas: must be an integer ≥ 1 \(got 0\)"):
        service.queue_model(T_EXEC, replicas=0)


def test_empty_distribution_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# only a comment\n\n")
    with pytest.raises(InputError, match=r"empty\.txt: holds no prompt lengths"):
        service.read_distribution(path)


@pytest.mark.parametrize("line", ["abc", "512,", "512,x", "-3", "0", "1.5", "512,0", "1,2,3",
                                  "512,-1", "512,inf"])
def test_malformed_distribution_line(tmp_path, line):
    path = tmp_path / "bad.txt"
    path.write_text(f"128\n{line}\n")
    with pytest.raises(InputError, match=r"bad\.txt:2: a line is a positive integer length, "
                                         r"optionally ',weight' with a weight > 0"):
        service.read_distribution(path)


def test_missing_distribution_file(tmp_path):
    path = tmp_path / "absent.txt"
    with pytest.raises(InputError) as info:
        service.read_distribution(path)
    assert str(info.value) == (f"--prompt-dist: cannot read the file: No such file or directory "
                               f"(got '{path}')")  # no Python errno text
    with pytest.raises(InputError) as info:
        service.read_distribution(tmp_path)
    assert str(info.value) == f"--prompt-dist: cannot read the file: Is a directory (got '{tmp_path}')"


def test_distribution_file_not_utf8(tmp_path):
    path = tmp_path / "bin.txt"
    path.write_bytes(b"128\n\xff\xfe\n")
    with pytest.raises(InputError) as info:
        service.read_distribution(path)
    assert str(info.value) == f"--prompt-dist: is not UTF-8 text (byte 4) (got '{path}')"


def test_distribution_of_validates():
    with pytest.raises(InputError, match="prompt lengths must be positive integers"):
        service.Distribution.of([0, 5])
    with pytest.raises(InputError, match="holds no prompt lengths"):
        service.Distribution.of([])


# --- batching and chunked prefill on a device ----------------------------------------------------
# Llama-3-8B (D 4096, F 14336, H 128, n_q 32, n_kv 8, L 32) on H100-SXM, bf16 (2 bytes).
LLAMA = {"D": 4096, "F": 14336, "H": 128, "n_q": 32, "n_kv": 8, "L": 32}


@pytest.fixture(scope="module")
def h100():
    from roofline.api import setting

    return setting("H100-SXM", "Llama-3-8B")


def _layer_weights() -> int:
    """Weight elements of one Llama layer, by hand: QKV, O, gate + up, down, two norm gains."""
    d, f, h, n_q, n_kv = (LLAMA[k] for k in ("D", "F", "H", "n_q", "n_kv"))
    return d * (n_q + 2 * n_kv) * h + n_q * h * d + 2 * d * f + f * d + 2 * d


def test_batching_times(h100):
    from dataclasses import replace

    from roofline.derive import service as derive
    from roofline.evaluate import prefill_time
    from roofline.symbols import B, T

    b = service.batching(h100, 2048, 4, 10)
    # the last prompt's TTFT is the prefill of 4 sequences (lambdify) ...
    at_four = float(prefill_time(replace(h100, batch=4), [2048])[0])
    assert b.last_s == pytest.approx(at_four, rel=1e-12)
    assert b.execution_s == b.last_s and b.per_prompt_s == pytest.approx(at_four / 4)
    # ... and the derived batch_ttft_last substituted exactly (a second method)
    exact = derive.batch_ttft_last(h100.model.architecture, h100.attention)
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
    from dataclasses import replace

    from roofline.evaluate import prefill

    assert 16 < service.batching(h100, 16, 2, 1).stops_helping < 32

    def per_prompt(batch):
        (point,) = prefill(replace(h100, batch=batch), [16])
        return sum(o.time_s for o in point.operations if o.kind == "projection") / batch

    below = [per_prompt(b) for b in (1, 4, 16)]
    assert below[0] > 3.5 * below[1] > 3.5 * 3.5 * below[2]  # memory-bound: weights shared
    assert per_prompt(32) == pytest.approx(per_prompt(128), rel=1e-12)  # compute-bound


def test_chunking_of_a_divisible_prompt(h100):
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


def test_chunking_extra_bytes_by_hand(h100):
    # 4 chunks: the layers' weights are read 3 more times, and 512 + 1024 + 1536 tokens of KV
    # cache are read again: 32 · (3 · 2 · W + 4096 · 3072)
    c = service.chunking(h100, 2048, 512)
    expected = 32 * (3 * 2 * _layer_weights() + 4096 * 3072)
    assert c.extra_bytes == pytest.approx(expected, rel=1e-12)  # chunk_bytes_extra evaluated
    assert sum(c.bytes) - c.one_shot_bytes == pytest.approx(expected, rel=1e-12)  # chunk by chunk


def test_chunking_when_the_chunk_does_not_divide_the_prompt(h100):
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


@pytest.mark.parametrize("batch", [0, -2, 1.5, True])
def test_batch_must_be_a_positive_integer(h100, batch):
    with pytest.raises(InputError, match=r"^--batch-prompts: the number of prompts in a batch "
                                         r"must be an integer ≥ 1 \(got "):
        service.batching(h100, 2048, batch, 1)


@pytest.mark.parametrize("chunk", [0, 2049, 2.5])
def test_chunk_must_lie_between_one_and_the_prompt(h100, chunk):
    with pytest.raises(InputError) as info:
        service.chunking(h100, 2048, chunk)
    assert str(info.value) == ("--chunk: a chunk must be an integer from 1 to the prompt length "
                               f"2048 tokens (got {chunk!r})")


def test_batching_and_chunking_check_prompt_and_rate(h100):
    with pytest.raises(InputError, match=r"^--prompt: a prompt length must be a positive "
                                         r"integer \(got 0\)"):
        service.batching(h100, 0, 2, 1)
    with pytest.raises(InputError, match=r"^--prompt: a prompt length must be a positive"):
        service.chunking(h100, -5, 1)
    with pytest.raises(InputError, match=r"^--rate: the arrival rate must be a finite number"):
        service.batching(h100, 2048, 2, 0)
