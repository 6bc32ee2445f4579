"""Ring attention: the pass-hidden crossover satisfies its equality and, without latency, is
the paper's block-size condition T/N ≥ n_kv·b_a·P/(2·n_q·β)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from sympy import Rational, simplify

from roofline.derive import context_parallel as cp
from roofline.symbols import (B, H, N_cp, P_peak, T, alpha_link, b_a, beta_link, n_kv, n_q)


def test_without_latency_by_hand():
    root = cp.hidden_tokens().subs(alpha_link, 0)
    assert simplify(root - N_cp * n_kv * b_a * P_peak / (2 * n_q * beta_link)) == 0
    # Llama-3-8B-like (32 query, 8 KV heads), bf16, H100 989.4 TFLOP/s over 450 GB/s, 8 devices:
    # 8·8·2·989.4e12/(2·32·450e9) = 4,397 tokens
    v = root.subs({N_cp: 8, n_kv: 8, n_q: 32, b_a: 2, P_peak: Rational(9894, 10) * 10**12,
                   beta_link: 450 * 10**9})
    assert float(v) == pytest.approx(8 * 8 * 2 * 989.4e12 / (2 * 32 * 450e9))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 16), alpha=st.integers(1, 100), beta=st.integers(10, 2000),
       peak=st.integers(100, 5000))
def test_root_satisfies_its_equality(n, alpha, beta, peak):
    vals = {N_cp: n, B: 1, H: 128, n_q: 32, n_kv: 8, b_a: 2,
            alpha_link: Rational(alpha, 10**7), beta_link: beta * 10**9,
            P_peak: peak * 10**12}
    root = cp.hidden_tokens().subs(vals)
    assert root.is_positive
    gap = (cp.block_compute_time() - cp.block_send_time()).subs(vals)
    assert abs(float(gap.subs(T, root))) <= 1e-9 * float(cp.block_send_time().subs(vals)
                                                          .subs(T, root))
    assert float(gap.subs(T, 2 * root)) > 0 > float(gap.subs(T, root / 2))
