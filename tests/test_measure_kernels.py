"""roofline.measure.kernels: the numpy kernels at tiny sizes, attention against a plain loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofline.measure import kernels


def test_kernels_tiny() -> None:
    work, times = kernels.measure_matmul("float32", 8, repeats=3)
    assert work == 2 * 8**3 and len(times) == 3
    res = kernels.measure_stream(10_000, repeats=2, chunk=1000, threads=2)
    assert res["copy"][0] == 16 * 10_000 and res["triad"][0] == 24 * 10_000
    assert all(len(t) == 2 for _, t in res.values())


def _reference_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal attention one query row at a time, in float64."""
    heads, n, d = q.shape
    out = np.zeros((heads, n, d))
    for h in range(heads):
        for i in range(n):
            s = k[h, : i + 1].astype(np.float64) @ q[h, i] / math.sqrt(d)
            p = np.exp(s - s.max())
            out[h, i] = p @ v[h, : i + 1] / p.sum()
    return out


@pytest.mark.parametrize("b_c, b_r", [(2, 2), (3, 2), (4, 1), (16, 16)])
def test_attention_kernels_agree_with_a_loop(b_c: int, b_r: int) -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 7, 3), dtype=np.float32) for _ in range(3))
    ref = _reference_attention(q, k, v)
    mask = np.triu(np.full((7, 7), -np.inf, np.float32), 1)
    naive, n_naive = kernels.naive_attention(q, k, v, mask)
    blocked, n_blocked = kernels.blocked_attention(q, k, v, b_c, b_r)
    assert np.allclose(naive, ref, atol=1e-5) and np.allclose(blocked, ref, atol=1e-5)
    assert n_naive == 9 and n_blocked > 0
