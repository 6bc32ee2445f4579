"""Expert parallelism: the all-to-all bytes against a simulation of uniform routing, and one
device's experts."""

from __future__ import annotations

import pytest
from sympy import Rational, expand

from roofline.derive import expert_parallel as ep
from roofline.derive.architecture import Architecture
from roofline.symbols import B, D, F, N_ep, T, alpha_link, b_a, b_w, beta_link, n_a, n_e


@pytest.mark.parametrize("n", [2, 4, 8])
def test_alltoall_bytes_match_uniform_routing(n):
    """Each of n devices holds 8·n tokens, each routed to 2 experts, the experts' devices taken
    in turn (uniform): the bytes leaving a device are (n−1)/n of its buffer."""
    tokens, active, width, nbytes = 8 * n, 2, 16, 2
    leaving = 0
    for token in range(tokens):
        for k in range(active):
            target = (token * active + k) % n
            if target != 0:  # device 0's view
                leaving += width * nbytes
    t = ep.dispatch_time().subs({N_ep: n, B: 1, T: tokens, n_a: active, D: width, b_a: nbytes,
                                 alpha_link: 0, beta_link: 1})
    assert t == leaving


def test_layer_time_by_hand():
    # Mixtral-like: 2 active experts, D 4096, 4096 tokens, 8 devices, 450 GB/s, 0.47 us
    t = ep.layer_communication_time().subs({N_ep: 8, B: 1, T: 4096, n_a: 2, D: 4096, b_a: 2,
                                             alpha_link: Rational(47, 10**8),
                                             beta_link: 450 * 10**9})
    buffer = 4096 * 2 * 4096 * 2
    assert float(t) == pytest.approx(2 * (7 * 0.47e-6 + 7 / 8 * buffer / 450e9), rel=1e-12)


def test_device_experts():
    whole = b_w * n_e * 3 * D * F  # gated experts of 3·D·F parameters
    assert expand(ep.device_expert_bytes(Architecture(moe=True)) * N_ep - whole) == 0
