"""Time to first token in numbers: the closed forms of :mod:`roofline.derive.service` evaluated,
prompt-length distributions, a seeded discrete-event simulation of the same queue, and batched
and chunked prefill evaluated for a device (:func:`batching`, :func:`chunking`).

Every configuration is an M/G/1 queue: the queue's service time s (the prefill time t; t/2, the
slowest of two pipeline stages, for inter-op; t/K for intra-op) and an execution time e added
after the wait (t for inter-op, t/K for intra-op). One prompt length gives E[s²] = E[s]² (M/D/1,
DistServe Eq. 1–3). ``N`` replicas each see rate R/N.

Prompt-length distribution files (``--prompt-dist``), UTF-8 text, one prompt length per line::

    # lengths of a chat trace; a '#' starts a comment, blank lines are skipped
    512
    2048,0.25        # length,weight: this length with relative weight 0.25 (default 1)

Lengths are positive integers (tokens); weights positive finite numbers, normalised to sum to 1.
A length may appear more than once: its weights add up.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError, NoSteadyStateError

if TYPE_CHECKING:
    from .derive.transformer import Architecture
    from .evaluate import Setting

__all__ = ["Distribution", "read_distribution", "moments", "QueueModel", "queue_model",
           "TTFT", "ttft", "ttft_curve", "max_rate", "inter_beats_intra_rate", "SimResult",
           "simulate_queue", "Batching", "batching", "Chunking", "chunking",
           "check_rate", "check_speedup", "check_slo", "check_batch", "check_chunk", "PARALLEL"]

PARALLEL = ("inter", "intra")
_BATCHES = 20  # batch means for the simulation's confidence interval
_T_975_19 = 2.093  # Student t quantile, 0.975, 19 degrees of freedom (two-sided 95 %)


# --- inputs --------------------------------------------------------------------------------------
def _num(x: float) -> float | int:
    """A number as a message shows it: 10 rather than 10.0."""
    return int(x) if float(x).is_integer() else float(x)


def check_rate(rate: float, option: str = "--rate") -> None:
    if not (math.isfinite(rate) and rate > 0):
        raise InputError(option, "the arrival rate must be a finite number > 0 per second",
                         _num(rate) if math.isfinite(rate) else rate)


def check_slo(slo: float, option: str = "--slo") -> None:
    if not (math.isfinite(slo) and slo > 0):
        raise InputError(option, "the TTFT target must be a finite number of seconds > 0", slo)


def check_speedup(speedup: float, option: str = "--speedup") -> None:
    """Two-way intra-op parallelism speeds a prefill up by K in (1, 2] (DistServe §3.1)."""
    if not (1 < speedup <= 2):
        raise InputError(option, "a two-way intra-op speedup must lie in (1, 2]",
                         _num(speedup) if math.isfinite(speedup) else speedup)


def _whole(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def check_batch(batch: int, option: str = "--batch-prompts") -> None:
    if not (_whole(batch) and batch >= 1):
        raise InputError(option, "the number of prompts in a batch must be an integer ≥ 1", batch)


def check_chunk(chunk: int, prompt: int, option: str = "--chunk") -> None:
    if not (_whole(chunk) and 1 <= chunk <= prompt):
        raise InputError(option, f"a chunk must be an integer from 1 to the prompt length "
                         f"{prompt} tokens", chunk)


def _check_prompt(prompt: int, option: str = "--prompt") -> None:
    if not (_whole(prompt) and prompt >= 1):
        raise InputError(option, "a prompt length must be a positive integer", prompt)


@dataclass(frozen=True)
class Distribution:
    """Prompt lengths (tokens) and their probabilities (summing to 1)."""

    lengths: np.ndarray  # int, distinct, ascending
    weights: np.ndarray  # float, > 0, sum 1

    @classmethod
    def of(cls, lengths: list[int] | np.ndarray, weights: list[float] | np.ndarray | None = None,
           where: str = "distribution") -> Distribution:
        """Validate and normalise: lengths positive integers, weights positive and finite."""
        lengths = np.asarray(lengths)
        weights = np.ones(len(lengths)) if weights is None else np.asarray(weights, dtype=float)
        if lengths.size == 0:
            raise InputError(where, "holds no prompt lengths")
        if lengths.shape != weights.shape or lengths.ndim != 1:
            raise InputError(where, "needs one weight per length", (lengths.shape, weights.shape))
        if not np.issubdtype(lengths.dtype, np.integer) or np.any(lengths <= 0):
            raise InputError(where, "prompt lengths must be positive integers", lengths.tolist())
        if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise InputError(where, "weights must be finite numbers > 0", weights.tolist())
        unique, index = np.unique(lengths, return_inverse=True)
        summed = np.bincount(index, weights=weights)
        return cls(unique.astype(np.int64), summed / summed.sum())


def _parse_line(text: str, where: str) -> tuple[int, float]:
    rule = "a line is a positive integer length, optionally ',weight' with a weight > 0"
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 2 or not parts[0].isdigit() or int(parts[0]) <= 0:
        raise InputError(where, rule, text)
    weight = 1.0
    if len(parts) == 2:
        try:
            weight = float(parts[1])
        except ValueError:
            raise InputError(where, rule, text) from None
        if not (math.isfinite(weight) and weight > 0):
            raise InputError(where, rule, text)
    return int(parts[0]), weight


def read_distribution(path: str | Path) -> Distribution:
    """Read a prompt-length file (format in the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError("--prompt-dist", f"cannot read the file: {err.strerror or err}",
                         str(path)) from None
    except UnicodeDecodeError as err:
        raise InputError("--prompt-dist", f"is not UTF-8 text (byte {err.start})",
                         str(path)) from None
    lengths, weights = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if content:
            length, weight = _parse_line(content, f"{path}:{number}")
            lengths.append(length)
            weights.append(weight)
    if not lengths:
        raise InputError(str(path), "holds no prompt lengths (one positive integer per line)")
    return Distribution.of(lengths, weights, where=str(path))


def moments(dist: Distribution, time_of: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """(E[t], E[t²]) of the prefill time over the distribution; ``time_of`` maps lengths to s."""
    t = np.asarray(time_of(dist.lengths), dtype=float)
    return float(dist.weights @ t), float(dist.weights @ t**2)


# --- the closed forms ----------------------------------------------------------------------------
@cache
def _forms() -> dict[str, Callable[..., float]]:
    """The derivations, lambdified once: queueing (R, E[s], E[s²]); max rate (e, E[s], E[s²], slo);
    inter-beats-intra rate (t, K)."""
    from sympy import lambdify, symbols

    from .derive import service
    from .symbols import K_intra, R, t_pre, t_slo

    e, m, s2 = symbols("e m s2", positive=True)
    return {
        "queueing": lambdify((R, m, s2), service.mg1_queueing(R, m, s2), "math"),
        "queueing_np": lambdify((R, m, s2), service.mg1_queueing(R, m, s2), "numpy"),
        "max_rate": lambdify((e, m, s2, t_slo), service.max_rate(e, m, s2, t_slo), "math"),
        "inter_intra": lambdify((t_pre, K_intra), service.inter_beats_intra_rate(), "math"),
    }


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
                speedup: float | None = None, replicas: int = 1) -> QueueModel:
    """The queue of a prefill of execution-time moments (E[t], E[t²]) (one length: E[t]²).

    ``parallel``: None, "inter" (two pipeline stages of t/2, DistServe Eq. 2) or "intra" (speedup
    K in (1, 2], Eq. 3).
    """
    second = mean**2 if second is None else second
    if not (mean > 0 and second > 0):
        raise InputError("prefill time", "must be > 0 seconds", mean)
    if isinstance(replicas, bool) or int(replicas) != replicas or replicas < 1:
        raise InputError("--replicas", "must be an integer ≥ 1", replicas)
    if parallel is None:
        return QueueModel(mean, mean, second, replicas)
    if parallel == "inter":
        return QueueModel(mean, mean / 2, second / 4, replicas)
    if parallel == "intra":
        if speedup is None:
            raise InputError("--speedup", "intra-op parallelism needs a speedup K in (1, 2]")
        check_speedup(speedup)
        return QueueModel(mean / speedup, mean / speedup, second / speedup**2, replicas)
    raise InputError("--parallel", f"must be one of {', '.join(PARALLEL)}", parallel)


@dataclass(frozen=True)
class TTFT:
    """Mean time to first token, its parts, and the rates that bound it."""

    execution_s: float
    queueing_s: float
    total_s: float
    utilization: float  # load per replica, R·E[s]/N
    max_rate_per_s: float | None  # highest rate meeting the target (None: no target / none meets)
    stable_rate_per_s: float  # the load reaches 1 here


def _load_error(rate: float, model: QueueModel) -> NoSteadyStateError:
    load = rate * model.mean / model.replicas
    return NoSteadyStateError(
        "--rate", f"the queue has no steady state at load R·t = {load:.3g} ≥ 1; the largest "
        f"rate it can take is {model.stable_rate:.3g} /s", _num(rate))


def max_rate(model: QueueModel, slo: float) -> float | None:
    """Highest arrival rate whose mean TTFT meets ``slo`` (None when execution alone misses it)."""
    check_slo(slo)
    if slo <= model.execution:
        return None
    return model.replicas * _forms()["max_rate"](model.execution, model.mean, model.second, slo)


def ttft(rate: float, model: QueueModel, slo: float | None = None) -> TTFT:
    """Mean TTFT at arrival rate ``rate`` (all replicas together), execution and queueing apart."""
    check_rate(rate)
    per_replica = rate / model.replicas
    load = per_replica * model.mean
    if load >= 1:
        raise _load_error(rate, model)
    queueing = _forms()["queueing"](per_replica, model.mean, model.second)
    return TTFT(model.execution, queueing, model.execution + queueing, load,
                None if slo is None else max_rate(model, slo), model.stable_rate)


def ttft_curve(rates: np.ndarray, model: QueueModel) -> tuple[np.ndarray, np.ndarray]:
    """(execution, queueing) at each rate below the stable rate (NaN queueing at or above it)."""
    per = np.asarray(rates, dtype=float) / model.replicas
    load = per * model.mean
    with np.errstate(divide="ignore", invalid="ignore"):
        queue = _forms()["queueing_np"](per, model.mean, model.second)
    queue = np.where(load < 1, queue, np.nan)
    return np.full_like(per, model.execution), queue


def inter_beats_intra_rate(mean: float, speedup: float) -> float:
    """Rate above which two-way inter-op beats intra-op of speedup K (one prompt length)."""
    check_speedup(speedup)
    return _forms()["inter_intra"](mean, speedup) if speedup < 2 else math.inf


# --- batching and chunked prefill ----------------------------------------------------------------
_NUMPY = [{"Max": np.maximum, "Min": np.minimum}, "numpy"]


@cache
def _batch_forms(arch: Architecture, mode: str) -> dict[str, object]:
    """The batching derivations of one architecture and attention mode (exact SymPy)."""
    from .derive import service

    return {"wait": service.batch_ttft_first(arch, mode) - service.batch_ttft_last(arch, mode),
            "rows": service.projection_crossover_rows(arch),
            "stops": service.batch_stops_helping(arch)}


@cache
def _chunk_forms(arch: Architecture) -> dict[str, object]:
    """Chunk i's time, FLOPs and bytes (all layers), the extra bytes of chunking, and the smallest
    compute-bound chunk (exact SymPy, in i_chunk, T_chunk, T and the model's symbols)."""
    from sympy import Integer

    from .derive import service

    ops = service.chunk_operations(arch)
    return {"time": service.chunk_time(arch),
            "flops": sum((op.count * op.flops for op in ops), Integer(0)),
            "bytes": sum((op.count * op.bytes for op in ops), Integer(0)),
            "extra": service.chunk_bytes_extra(arch),
            "min_chunk": service.min_compute_bound_chunk(arch)}


def _positive(value: object) -> float | None:
    """A solved crossover as a number, or None where its root is no valid (positive) size: the
    projections never reach the ridge."""
    number = complex(value)
    return number.real if abs(number.imag) <= 1e-12 * abs(number) and number.real > 0 else None


@dataclass(frozen=True)
class Batching:
    """``batch`` prompts of ``prompt`` tokens prefilled together (one instance, weights read once
    per batch). Times in seconds; the rate is the arrival rate this instance sees."""

    prompt: int  # tokens per prompt
    batch: int  # prompts per batch
    rate_per_s: float
    execution_s: float  # the batch's prefill
    wait_s: float  # (B − 1)/R: the first prompt waits for the B − 1 later arrivals
    first_s: float  # TTFT of the first prompt: wait + execution
    last_s: float  # TTFT of the last prompt: execution
    per_prompt_s: float  # execution / batch
    single_s: float  # one prompt prefilled alone (batch 1)
    crossover_rows: float | None  # rows at which the projections reach the ridge (None: never)
    stops_helping: float | None  # batch size at which batching stops helping (None: never)


def batching(setting: Setting, prompt: int, batch: int, rate: float) -> Batching:
    """Batch ``batch`` prompts of ``prompt`` tokens into one prefill, arrivals Poisson at ``rate``.

    The batch's execution is the roofline prefill of ``batch`` sequences (``prefill_time`` of the
    setting at that batch); the last prompt's TTFT is that execution, the first prompt's adds
    the mean wait (B − 1)/R for the later arrivals (``batch_ttft_first`` − ``batch_ttft_last``,
    evaluated). Queueing for a busy server is not counted.

    Batching *stops helping* at B* = (projection crossover rows)/T (``batch_stops_helping``,
    evaluated): below it a layer's projections are memory-bound, reading the weights once for
    the whole batch, so a larger batch lowers the time per prompt; beyond it they are
    compute-bound, a larger batch adds time in proportion and no longer lowers the time per
    prompt, while the first prompt's wait keeps growing. B* < 1 means the projections of one
    prompt are compute-bound already: batching never lowers the time per prompt.
    """
    from dataclasses import replace

    from .evaluate import prefill_time
    from .symbols import B, R, T

    _check_prompt(prompt)
    check_batch(batch)
    check_rate(rate)
    forms = _batch_forms(setting.model.architecture, setting.attention)
    times = [float(prefill_time(replace(setting, batch=b), [prompt])[0]) for b in (1, batch)]
    wait = float(forms["wait"].xreplace({B: batch, R: rate}))
    vals = setting.values(batch=False)
    rows = _positive(forms["rows"].xreplace(vals))
    stops = _positive(forms["stops"].xreplace(vals).xreplace({T: prompt}))
    single, execution = times
    return Batching(prompt, batch, rate, execution, wait, wait + execution, execution,
                    execution / batch, single, rows, stops)


@dataclass(frozen=True)
class Chunking:
    """One prompt prefilled in chunks: per-chunk numbers (all layers) and the one-shot prefill in
    the same model. Embedding, final norm and LM head are left out of both (they cost the same
    chunked or not); attention is fused (Q, O and the chunk's K, V read once)."""

    prompt: int  # tokens
    chunk: int  # tokens per chunk (the last one may be shorter)
    sizes: tuple[int, ...]  # tokens of each chunk
    times_s: tuple[float, ...]  # roofline time of each chunk
    flops: tuple[float, ...]
    bytes: tuple[float, ...]  # HBM bytes, the KV cache of earlier chunks included
    total_s: float  # Σ times_s
    one_shot_s: float  # the whole prompt as one chunk
    one_shot_flops: float
    one_shot_bytes: float
    extra_bytes: float  # Σ bytes − one-shot bytes
    min_chunk: float | None  # smallest compute-bound chunk, tokens (None: never compute-bound)


def chunking(setting: Setting, prompt: int, chunk: int) -> Chunking:
    """Prefill one prompt of ``prompt`` tokens in chunks of ``chunk`` tokens (batch 1).

    Chunk k covers tokens [k·c, k·c + size): ``chunk_time`` of :mod:`roofline.derive.service`
    with its attention over the keys of all earlier chunks and reading their KV cache. When c
    does not divide T the last chunk has the T mod c remaining tokens; it is evaluated with its
    real size s at offset o = k·c (``chunk_operations`` takes offset index·size, so index o/s).
    The extra bytes are ``chunk_bytes_extra`` evaluated when c divides T, else the per-chunk
    bytes summed minus the one-shot bytes. The smallest compute-bound chunk is
    ``min_compute_bound_chunk`` evaluated: the projection crossover at one sequence.
    """
    from sympy import lambdify

    from .derive.service import i_chunk
    from .symbols import T, T_chunk

    _check_prompt(prompt)
    check_chunk(chunk, prompt)
    forms = _chunk_forms(setting.model.architecture)
    vals = setting.values(batch=False)
    full, rest = divmod(prompt, chunk)
    sizes = np.array([chunk] * full + ([rest] if rest else []), dtype=float)
    offsets = np.concatenate(([0.0], np.cumsum(sizes)[:-1]))
    per_chunk = {}
    for key in ("time", "flops", "bytes"):
        f = lambdify((i_chunk, T_chunk), forms[key].xreplace(vals), modules=_NUMPY)
        per_chunk[key] = np.broadcast_to(f(offsets / sizes, sizes), sizes.shape).astype(float)
        per_chunk[f"one_{key}"] = float(f(0.0, float(prompt)))
    if rest == 0:
        extra = float(forms["extra"].xreplace(vals).xreplace({T: prompt, T_chunk: chunk}))
    else:
        extra = float(per_chunk["bytes"].sum()) - per_chunk["one_bytes"]
    times = per_chunk["time"]
    return Chunking(prompt, chunk, tuple(int(n) for n in sizes), tuple(times.tolist()),
                    tuple(per_chunk["flops"].tolist()), tuple(per_chunk["bytes"].tolist()),
                    float(times.sum()), per_chunk["one_time"], per_chunk["one_flops"],
                    per_chunk["one_bytes"], extra,
                    _positive(forms["min_chunk"].xreplace(vals)))


# --- simulation ----------------------------------------------------------------------------------
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


def _waits(interarrival: np.ndarray, service: np.ndarray) -> np.ndarray:
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
    """Simulate one FCFS server with Poisson arrivals at ``rate``.

    ``service``: one time for every request (M/D/1), an array of times drawn at random with
    equal probability, or a sampler ``f(rng, n) -> times``. A request's TTFT is its wait plus
    its service time (or plus ``execution``, when the execution differs from the queue's
    service, as for inter-op pipelines). The first ``warmup`` fraction is dropped; the 95 %
    interval comes from 20 batch means (Student t, 19 degrees of freedom).
    """
    check_rate(rate)
    rng = np.random.default_rng(seed)
    if callable(service):
        times = np.asarray(service(rng, n_requests), dtype=float)
    elif np.ndim(service) == 0:
        times = np.full(n_requests, float(service))
    else:
        times = rng.choice(np.asarray(service, dtype=float), size=n_requests)
    interarrival = rng.exponential(1.0 / rate, size=n_requests)
    waits = _waits(interarrival, times)
    ttfts = waits + (times if execution is None else execution)
    start = int(warmup * n_requests)
    wait, wait_hw = _batch_means(waits[start:])
    total, total_hw = _batch_means(ttfts[start:])
    return SimResult(wait, wait_hw, total, total_hw, n_requests - start)
