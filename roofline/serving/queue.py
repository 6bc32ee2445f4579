"""The prefill queue in numbers: the closed forms of :mod:`roofline.derive.service` (DistServe
§3.1 Eq. 1–3; Pollaczek–Khinchine for M/G/1) evaluated through :mod:`roofline.evaluate`.

Every configuration is an M/G/1 queue: the queue's service time s (the prefill time t; t/2, the
slowest of two pipeline stages, for inter-op; t/K for intra-op) and an execution time e added
after the wait (t for inter-op, t/K for intra-op). One prompt length gives E[s²] = E[s]² (M/D/1,
DistServe Eq. 1–3). ``N`` replicas each see rate R/N.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, NoSteadyStateError
from .checks import PARALLEL, check_rate, check_replicas, check_slo, check_speedup, shown

if TYPE_CHECKING:
    from sympy import Expr

    from ..specs.distribution import Distribution

__all__ = ["QueueModel", "queue_model", "QueuePoint", "ttft", "ttft_curve", "max_rate",
           "inter_beats_intra_rate", "moments", "md1_attainment"]


@cache
def _forms() -> dict[str, Expr]:
    """The derivations, built once: queueing in (R, t_mean, t_sq); the highest rate meeting a
    target in (t_pre = execution, t_mean, t_sq, t_slo); inter-beats-intra in (t_pre, K_intra)."""
    from ..derive import service
    from ..symbols import t_mean, t_pre, t_sq

    return {"queueing": service.mg1_queueing(),
            "max_rate": service.max_rate(t_pre, t_mean, t_sq),
            "inter_intra": service.inter_beats_intra_rate()}


def moments(dist: Distribution, time_of: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """(E[t], E[t²]) of the prefill time over the distribution; ``time_of`` maps lengths to s."""
    t = np.asarray(time_of(dist.lengths), dtype=float)
    return float(dist.weights @ t), float(dist.weights @ t**2)


@dataclass(frozen=True)
class QueueModel:
    """One configuration: per replica, the queue's service moments and the execution time."""

    execution: float  # s, added after the wait
    mean: float  # E[s], s
    second: float  # E[s²], s²
    replicas: int = 1

    @property
    def stable_rate(self) -> float:
        """The rate at which the load reaches 1: N / E[s] per second."""
        return self.replicas / self.mean


def queue_model(mean: float, second: float | None = None, parallel: str | None = None,
                speedup: float | None = None, replicas: int = 1,
                stage: tuple[float, float, float] | None = None) -> QueueModel:
    """The queue of a prefill of execution-time moments (E[t], E[t²]) (one length: E[t]²).

    ``parallel``: None, "inter" (pipeline stages: ``stage`` = (E[e], E[s], E[s²]), the mean
    time of a prompt through the stages and the moments of the slowest stage's time, from the
    model, :func:`roofline.derive.pipeline.interop_ttft`; without it two stages of t/2,
    DistServe Eq. 2) or "intra" (speedup K in (1, 2], Eq. 3).
    """
    second = mean**2 if second is None else second
    if not (mean > 0 and second > 0):
        raise InputError("prefill time", "must be > 0 seconds", mean)
    check_replicas(replicas)
    if parallel is None:
        if speedup is not None:
            raise InputError("speedup", "applies only with intra-op parallelism", speedup)
        return QueueModel(mean, mean, second, replicas)
    if parallel == "inter":
        if speedup is not None:
            raise InputError("speedup", "applies only with intra-op parallelism", speedup)
        if stage is not None:
            return QueueModel(*stage, replicas)
        return QueueModel(mean, mean / 2, second / 4, replicas)
    if parallel == "intra":
        if speedup is None:
            raise InputError("speedup", "intra-op parallelism needs a speedup K in (1, 2]")
        check_speedup(speedup)
        return QueueModel(mean / speedup, mean / speedup, second / speedup**2, replicas)
    raise InputError("parallel", f"must be one of {', '.join(PARALLEL)}", parallel)


@dataclass(frozen=True)
class QueuePoint:
    """Mean time to first token at one rate, its parts, and the rates that bound it."""

    rate_per_s: float  # all replicas together
    execution_s: float
    queueing_s: float
    total_s: float
    utilization: float  # load per replica, R·E[s]/N
    max_rate_per_s: float | None  # highest rate meeting the target (None: no target / none meets)
    stable_rate_per_s: float  # the load reaches 1 here


def _load_error(rate: float, model: QueueModel) -> NoSteadyStateError:
    load = rate * model.mean / model.replicas
    return NoSteadyStateError(
        "rate", f"the queue has no steady state at load R·t = {load:.3g} ≥ 1; the largest "
        f"rate it can take is {model.stable_rate:.3g} /s", shown(rate))


def max_rate(model: QueueModel, slo: float) -> float | None:
    """Highest arrival rate whose mean TTFT meets ``slo`` (None when execution alone misses it)."""
    from ..evaluate import scalar
    from ..symbols import t_mean, t_pre, t_slo, t_sq

    check_slo(slo)
    if slo <= model.execution:
        return None
    where = {t_pre: model.execution, t_mean: model.mean, t_sq: model.second, t_slo: slo}
    return model.replicas * scalar(_forms()["max_rate"], where)


def ttft(rate: float, model: QueueModel, slo: float | None = None) -> QueuePoint:
    """Mean TTFT at arrival rate ``rate`` (all replicas together), execution and queueing apart."""
    from ..evaluate import scalar
    from ..symbols import R, t_mean, t_sq

    check_rate(rate)
    per_replica = rate / model.replicas
    load = per_replica * model.mean
    if load >= 1:
        raise _load_error(rate, model)
    queueing = scalar(_forms()["queueing"], {R: per_replica, t_mean: model.mean,
                                             t_sq: model.second})
    return QueuePoint(rate, model.execution, queueing, model.execution + queueing, load,
                      None if slo is None else max_rate(model, slo), model.stable_rate)


def ttft_curve(rates: np.ndarray, model: QueueModel) -> tuple[np.ndarray, np.ndarray]:
    """(execution, queueing) at each rate below the stable rate (NaN queueing at or above it)."""
    from ..evaluate import numeric
    from ..symbols import R, t_mean, t_sq

    per = np.asarray(rates, dtype=float) / model.replicas
    load = per * model.mean
    f = numeric(_forms()["queueing"], {t_mean: model.mean, t_sq: model.second}, R)
    with np.errstate(divide="ignore", invalid="ignore"):
        queue = np.where(load < 1, f(per), np.nan)
    return np.full_like(per, model.execution), queue


def inter_beats_intra_rate(mean: float, speedup: float) -> float:
    """Rate above which two-way inter-op beats intra-op of speedup K (one prompt length)."""
    from ..evaluate import scalar
    from ..symbols import K_intra, t_pre

    check_speedup(speedup)
    if speedup == 2:
        return math.inf
    return scalar(_forms()["inter_intra"], {t_pre: mean, K_intra: speedup})


_TERMS = 400  # service times of wait summed at most: beyond, the attainment at 400 (a floor)


def md1_attainment(rate: float, service: float, objective: float,
                   execution: float | None = None) -> float:
    """P(execution + W ≤ objective) in an M/D/1 queue of Poisson arrivals at ``rate`` and
    deterministic ``service`` (Erlang's waiting-time distribution); ``execution`` is the
    service's by default (a pipeline's is its stages' sum, its service the slowest stage's);
    0 at a load of 1 or more. The catalogue's ``service.ttft.md1_attainment``
    (:func:`roofline.derive.service.md1_attainment`, tested against the SymPy sum at rational
    numbers). Its terms alternate in sign and grow as e^{2·R·x}, so it is summed with
    0.87·R·x + 30 digits (mpmath); a wait of more than 400 service times is taken at 400,
    which can only lower the attainment (the distribution grows with x)."""
    import mpmath

    rho, execution = rate * service, service if execution is None else execution
    if rho >= 1 or objective < execution:
        return 0.0
    x = min(objective - execution, _TERMS * service)
    with mpmath.workdps(int(0.87 * rate * x) + 30):
        r, d, xx = mpmath.mpf(rate), mpmath.mpf(service), mpmath.mpf(x)
        total = mpmath.fsum((r * (k * d - xx)) ** k / mpmath.factorial(k)
                            * mpmath.exp(-r * (k * d - xx))
                            for k in range(int(math.floor(x / service)) + 1))
        return float(min(1, max(0, (1 - mpmath.mpf(rho)) * total)))
