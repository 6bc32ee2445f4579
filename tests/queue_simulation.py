"""A seeded discrete-event simulation of one FCFS prefill server with Poisson arrivals: the test
oracle for the closed-form queue of :mod:`roofline.serving.queue` (not part of the package)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["SimResult", "simulate_queue", "waits"]

_BATCHES = 20  # batch means for the confidence interval
_T_975_19 = 2.093  # Student t quantile, 0.975, 19 degrees of freedom (two-sided 95 %)


@dataclass(frozen=True)
class SimResult:
    """Means over the simulated requests after a warm-up, with 95 % half-widths (batch means)."""

    wait: float
    wait_half_width: float
    ttft: float
    ttft_half_width: float
    requests: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the TTFT confidence interval."""
        return abs(value - self.ttft) <= self.ttft_half_width


def waits(interarrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """FCFS waits by Lindley's recursion W_n = max(0, W_{n−1} + s_{n−1} − a_n), W_0 = 0, solved
    in closed form: W_n = U_n − min_{k≤n} U_k with U_n = Σ_{j≤n} (s_{j−1} − a_j), U_0 = 0."""
    steps = np.concatenate(([0.0], service[:-1] - interarrival[1:]))
    u = np.cumsum(steps)  # u[0] = 0, so the running minimum is never above 0
    return u - np.minimum.accumulate(u)


def _batch_means(values: np.ndarray) -> tuple[float, float]:
    batches = np.array_split(values, _BATCHES)
    means = np.array([b.mean() for b in batches])
    return float(values.mean()), float(_T_975_19 * means.std(ddof=1) / math.sqrt(_BATCHES))


def simulate_queue(rate: float, service: float | np.ndarray | Callable[..., np.ndarray],
                   n_requests: int = 50_000, seed: int = 0, execution: float | None = None,
                   warmup: float = 0.1) -> SimResult:
    """Simulate one FCFS server with Poisson arrivals at ``rate`` (> 0).

    ``service``: one time for every request (M/D/1), an array of times drawn at random with
    equal probability, or a sampler ``f(rng, n) -> times``. A request's TTFT is its wait plus
    its service time (or plus ``execution``, when the execution differs from the queue's
    service, as for inter-op pipelines). The first ``warmup`` fraction is dropped; the 95 %
    interval comes from 20 batch means (Student t, 19 degrees of freedom).
    """
    assert rate > 0, rate
    rng = np.random.default_rng(seed)
    if callable(service):
        times = np.asarray(service(rng, n_requests), dtype=float)
    elif np.ndim(service) == 0:
        times = np.full(n_requests, float(service))
    else:
        times = rng.choice(np.asarray(service, dtype=float), size=n_requests)
    interarrival = rng.exponential(1.0 / rate, size=n_requests)
    w = waits(interarrival, times)
    ttfts = w + (times if execution is None else execution)
    start = int(warmup * n_requests)
    wait, wait_hw = _batch_means(w[start:])
    total, total_hw = _batch_means(ttfts[start:])
    return SimResult(wait, wait_hw, total, total_hw, n_requests - start)
