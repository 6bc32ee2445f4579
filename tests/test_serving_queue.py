"""The prefill queue in numbers (roofline.serving.queue): closed forms against hand numbers and
against a seeded simulation (tests/queue_simulation.py); every bad-input message."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the simulation oracle lives beside the tests
from queue_simulation import simulate_queue, waits  # noqa: E402

from roofline import serving as service  # noqa: E402
from roofline.errors import InputError, NoSteadyStateError  # noqa: E402
from roofline.specs.distribution import Distribution  # noqa: E402

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


# --- moments over a distribution ------------------------------------------------------------
def test_moments_of_a_two_length_distribution():
    dist = Distribution.of([100, 300], [3, 1])
    mean, second = service.moments(dist, lambda lengths: lengths * 1e-3)
    assert mean == pytest.approx(0.75 * 0.1 + 0.25 * 0.3)
    assert second == pytest.approx(0.75 * 0.01 + 0.25 * 0.09)


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
    assert waits(gaps, times) == pytest.approx(_loop_waits(gaps, times), abs=1e-9)


@pytest.mark.parametrize("load", [0.3, 0.6, 0.9])
def test_md1_closed_form_lies_in_the_simulation_interval(load):
    rate = load / T_EXEC
    sim = simulate_queue(rate, T_EXEC, n_requests=200_000, seed=1)
    closed = service.ttft(rate, service.queue_model(T_EXEC)).total_s
    assert sim.contains(closed), (closed, sim)


def test_a_wrong_service_time_fails_the_check():
    rate = 0.6 / T_EXEC
    sim = simulate_queue(rate, T_EXEC, n_requests=200_000, seed=1)
    wrong = service.ttft(rate, service.queue_model(1.1 * T_EXEC)).total_s
    assert not sim.contains(wrong)


def test_mg1_closed_form_lies_in_the_simulation_interval():
    times = np.array([0.05, 0.25])  # two prompt lengths, equally likely
    model = service.queue_model(times.mean(), float((times**2).mean()))
    rate = 0.7 / times.mean()
    sim = simulate_queue(rate, times, n_requests=200_000, seed=3)
    closed = service.ttft(rate, model).total_s
    assert sim.contains(closed), (closed, sim)
    # the M/D/1 form at the same mean is too low: variance adds queueing
    assert not sim.contains(service.ttft(rate, service.queue_model(times.mean())).total_s)


def test_inter_op_pipeline_simulation():
    # a two-stage pipeline admits one prompt every t/2; a prompt's TTFT is its wait plus t
    rate = 1.2 / T_EXEC  # load 0.6 on the slowest stage
    sim = simulate_queue(rate, T_EXEC / 2, n_requests=200_000, seed=5, execution=T_EXEC)
    closed = service.ttft(rate, service.queue_model(T_EXEC, parallel="inter")).total_s
    assert sim.contains(closed), (closed, sim)


def test_simulation_is_seeded():
    a = simulate_queue(5, T_EXEC, n_requests=10_000, seed=11)
    b = simulate_queue(5, T_EXEC, n_requests=10_000, seed=11)
    assert a == b


# --- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rate", [0, -1.5])
def test_rate_must_be_positive(rate):
    with pytest.raises(InputError, match=r"^rate: the arrival rate must be a finite number > 0"):
        service.ttft(rate, service.queue_model(T_EXEC))


def test_no_steady_state_names_the_largest_rate():
    with pytest.raises(NoSteadyStateError) as err:
        service.ttft(10, service.queue_model(0.12))
    assert str(err.value) == ("rate: the queue has no steady state at load R·t = 1.2 ≥ 1; "
                              "the largest rate it can take is 8.33 /s (got 10)")


def test_no_steady_state_at_load_one_with_replicas():
    with pytest.raises(NoSteadyStateError, match=r"load R·t = 1 ≥ 1; the largest rate it can "
                                                 r"take is 20 /s \(got 20\)"):
        service.ttft(20, service.queue_model(T_EXEC, replicas=2))


@pytest.mark.parametrize("k", [1, 0.5, 2.5, float("nan")])
def test_speedup_outside_one_to_two(k):
    with pytest.raises(InputError, match=r"^speedup: a two-way intra-op speedup must lie in "
                                         r"\(1, 2\]"):
        service.queue_model(T_EXEC, parallel="intra", speedup=k)


def test_speedup_two_is_allowed():
    assert service.queue_model(T_EXEC, parallel="intra", speedup=2).execution == 0.05


def test_intra_needs_a_speedup():
    with pytest.raises(InputError, match=r"^speedup: intra-op parallelism needs a speedup"):
        service.queue_model(T_EXEC, parallel="intra")


def test_slo_must_be_positive():
    with pytest.raises(InputError, match=r"^slo: the TTFT target must be a finite number"):
        service.ttft(1, service.queue_model(T_EXEC), slo=0)


def test_replicas_must_be_a_positive_integer():
    with pytest.raises(InputError, match=r"^replicas: must be an integer ≥ 1 \(got 0\)"):
        service.queue_model(T_EXEC, replicas=0)
