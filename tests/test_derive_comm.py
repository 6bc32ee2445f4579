"""The α–β collectives of roofline.derive.comm against step-by-step simulations."""

from fractions import Fraction

import pytest
from sympy import Integer, Rational, simplify

from roofline.derive import comm
from roofline.symbols import N_dev, S_msg, alpha_link, beta_link


def _simulate_ring_allreduce(n: int, size: int) -> tuple[int, Fraction, list[list[Fraction]]]:
    """A ring all-reduce of ``size`` bytes, split into n chunks, device d holding the value d+1
    in each of its chunks: (steps, bytes sent per device, final buffers). Each step, device d
    sends one chunk to device d+1 (reduce-scatter, then all-gather)."""
    chunk = Fraction(size, n)
    data = [[Fraction(d + 1)] * n for d in range(n)]
    sent = [Fraction(0)] * n
    steps = 0
    for phase in ("reduce", "gather"):
        for s in range(n - 1):
            steps += 1
            msgs = []
            for d in range(n):
                # the chunk d sends: in reduce-scatter (d − s) mod n, in all-gather (d + 1 − s)
                c = (d - s) % n if phase == "reduce" else (d + 1 - s) % n
                msgs.append(((d + 1) % n, c, data[d][c]))
                sent[d] += chunk
            for dst, c, v in msgs:
                data[dst][c] = data[dst][c] + v if phase == "reduce" else v
    assert len(set(sent)) == 1
    return steps, sent[0], data


@pytest.mark.parametrize("n", range(2, 9))
def test_ring_allreduce_matches_simulation(n):
    size = 840  # divisible by 2..8
    steps, sent, data = _simulate_ring_allreduce(n, size)
    total = Fraction(n * (n + 1), 2)
    assert all(v == total for row in data for v in row)  # every device holds the full sum
    assert comm.ring_allreduce_steps(Integer(n)) == steps
    assert comm.ring_allreduce_bytes(Integer(n), Integer(size)) == Rational(sent.numerator,
                                                                            sent.denominator)
    t = comm.allreduce_time("ring", Integer(n), Integer(size), Rational(1, 10**6), Integer(10**9))
    assert t == Rational(steps, 10**6) + Rational(sent.numerator, sent.denominator) / 10**9


def test_ring_allreduce_hand_expanded():
    # N = 8, 1 MB, 3 us, 450 GB/s: 14·3 us + 2·7/8·1e6/450e9 s
    t = comm.allreduce_time("ring", Integer(8), Integer(10**6), Rational(3, 10**6),
                            Integer(450 * 10**9))
    assert float(t) == pytest.approx(42e-6 + 1.75e6 / 450e9, rel=1e-15)


def test_tree_and_rabenseifner():
    assert comm.allreduce_time("tree", Integer(8), Integer(100), Integer(1), Integer(10)) \
        == 2 * 3 * (1 + 10)
    # 5 devices: ceil(log2 5) = 3 levels
    assert comm.allreduce_time("tree", Integer(5), Integer(0), Integer(1), Integer(10)) == 6
    # Rabenseifner has the ring's bandwidth term and log-many latencies
    rab = comm.allreduce_time("rabenseifner", Integer(8), S_msg)
    ring = comm.allreduce_time("ring", Integer(8), S_msg)
    assert simplify(ring - rab - 8 * alpha_link) == 0
    with pytest.raises(ValueError, match="algorithm"):
        comm.allreduce_time("butterfly")


def test_allgather_plus_reduce_scatter_is_ring_allreduce():
    total = comm.allgather_time() + comm.reduce_scatter_time()
    assert simplify(total - comm.allreduce_time("ring")) == 0


def test_alltoall_simulated_bytes():
    # pairwise exchange: each device sends S/N to each of the N − 1 others, one per step
    for n in range(2, 9):
        sent = Fraction(840, n) * (n - 1)
        t = comm.alltoall_time(Integer(n), Integer(840), Integer(0), Integer(1))
        assert t == Rational(sent.numerator, sent.denominator)


def test_p2p_and_time_as_bytes():
    assert comm.p2p_time() == alpha_link + S_msg / beta_link
    assert comm.time_as_bytes(comm.p2p_time()) == alpha_link * beta_link + S_msg
    assert N_dev in comm.allreduce_time().free_symbols
