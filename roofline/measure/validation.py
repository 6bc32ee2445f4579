"""Hold prefill-shaped work measured on this machine against the model's prediction.

``roofline validate`` times, with numpy in fp32:

- the projection ``X (T×d_in) @ W (d_in×d_out)`` for T = 1, 2, 4, … 4096, with W sized at least
  twice the last-level cache (so every call streams W from memory, as the model assumes);
- causal attention of ``heads`` heads of dimension H, in two forms: ``naive`` (FlashAttention's
  Algorithm 0 as numpy does it: the T×T scores materialised) and ``blocked`` (FlashAttention
  Algorithm 1 with its block sizes B_c = ⌈M/(4d)⌉, B_r = min(B_c, d) for M = the per-core cache:
  the full score matrix is never held; online softmax).

Every point is timed after a warm-up, repeatedly; the median is compared with the prediction

    t = t_call · calls + max(F / P_peak, Q / beta_hbm)

predicted by :mod:`.predict` through the evaluation core, as ``roofline prefill`` predicts:
F and Q are the project's derivations (``roofline.derive.projection``,
``roofline.derive.attention``) evaluated with b_w = b_a = 4 bytes (fp32), the time is
``roofline.evaluate.roofline_time``; P_peak (fp32) and beta_hbm come from the hardware file,
loaded like any other (``Hardware.peak``, ``Hardware.bandwidth``: beta_hbm is the calibrated
bandwidth, ``memory.bandwidth`` × ``efficiency.bandwidth``, the fraction ``roofline measure``
finds a thin BLAS product streaming its weights at; :mod:`.calibrate`). The uncalibrated
prediction, with ``memory.bandwidth`` alone, is reported beside it. t_call is a measured,
explicit per-call overhead (the median time of a 1×1 numpy matmul, i.e. the Python and numpy
dispatch cost), times the numpy calls the implementation makes.

The error of a prediction is |predicted/measured − 1|; the projection's summary is its median
over T. The knee of a time-vs-T curve is found by fitting a roofline-shaped hinge
t(T) = max(a, b·T) in log–log space (least squares over every split of the sorted points into a
flat part and a slope-one part, at least two points each): the knee is T = a/b, where the flat
memory-bound plateau meets the compute-bound line. The fit uses the points the model covers,
T ≥ 2 (``KNEE_MIN_T``): at T = 1 numpy takes BLAS's matrix–vector (GEMV) path, which reads W
without packing it and runs several times faster than the thin GEMM the model describes, so it
would drag the plateau down and the knee with it. The predicted crossover is the T at
which one projection's intensity reaches the ridge P_peak/beta_hbm, solved by the derivation
layer (:func:`.predict.projection_crossover`).

A run is a :class:`Validation` of small records: the :class:`Machine` (the hardware file's
numbers), the :class:`ProjectionSweep` (its knee a :class:`Knee`), the :class:`AttentionSweep`,
and the GPU's own :class:`Validation` or why it was skipped. Its report (``validation.md`` and
its figures) is written by :mod:`.report`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .hwfile import format_bytes
from .kernels import call_overhead, run_attention, run_projection
from .predict import block_sizes, predict_attention, predict_projection, projection_crossover
from .system import cache_levels, last_level_cache, load_average, memory_bytes, per_core_cache
from .timing import Progress, Stats

__all__ = ["KNEE_MIN_T", "Point", "Knee", "Machine", "ProjectionSweep", "AttentionSweep",
           "Validation", "median_abs_error", "fit_knee", "projection_width", "attention_note",
           "projection_sweep", "attention_sweep", "validate"]

FP32 = 4  # bytes per fp32 element: the CPU sweeps run in numpy's float32
KNEE_MIN_T = 2  # the knee is fitted on T ≥ 2: T = 1 takes BLAS's GEMV path, off the model


# --- records ---------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Point:
    """One shape: the model's work and bytes, its predicted time, the measured time."""

    T: int
    flops: float
    bytes: float
    predicted: float  # seconds, including the overhead term
    overhead: float  # seconds: the explicit per-call term inside ``predicted``
    measured: Stats
    no_overlap: float = math.nan  # seconds: overhead + F/P + Q/β, the roofline's upper bound
    uncalibrated: float = math.nan  # seconds: the prediction with β = memory.bandwidth alone

    @property
    def ratio(self) -> float:
        """measured / predicted."""
        return self.measured.median / self.predicted

    @property
    def error(self) -> float:
        """|predicted / measured − 1|."""
        return abs(self.predicted / self.measured.median - 1)


@dataclass(frozen=True)
class Knee:
    """A hinge fit t = max(a, b·T): ``plateau`` a (s), ``slope`` b (s per token), knee a/b."""

    plateau: float
    slope: float
    knee: float
    split: int  # points on the flat side


@dataclass(frozen=True, kw_only=True)
class Machine:
    """The device measured, as the model sees it: the hardware file's numbers for ``dtype``."""

    name: str
    hardware_path: str
    dtype: str  # the data type timed and predicted: fp32 (numpy), bf16 (GPU)
    p_peak: float  # FLOP/s in dtype
    beta: float  # bytes/s: Hardware.bandwidth(), calibrated where the file has an efficiency
    beta_uncalibrated: float  # bytes/s: memory.bandwidth alone
    t_call: float = 0.0  # seconds per call: the measured per-call overhead
    calibration: str = ""  # the hardware file's efficiency.bandwidth note, if any
    peak_source: str = ""  # the hardware file's source of P_peak (it names the matmul shape)
    load: tuple[str, str] = ("", "")  # load averages before and after the run

    @classmethod
    def from_hardware(cls, hw: Any, dtype: str, t_call: float = 0.0,
                      load: tuple[str, str] = ("", "")) -> Machine:
        """The numbers of a loaded :class:`roofline.specs.hardware.Hardware` for ``dtype``."""
        return cls(name=hw.name, hardware_path=str(hw.path), dtype=dtype, p_peak=hw.peak(dtype),
                   beta=hw.bandwidth(), beta_uncalibrated=hw.memory_bandwidth, t_call=t_call,
                   calibration=hw.quantity_notes.get("efficiency.bandwidth", ""),
                   peak_source=getattr(hw, "sources", {}).get(f"peak_flops.{dtype}", ""),
                   load=load)

    @property
    def calibrated(self) -> bool:
        """Whether beta differs from memory.bandwidth (an efficiency below 1 was applied)."""
        return self.beta_uncalibrated != self.beta


@dataclass(frozen=True, kw_only=True)
class ProjectionSweep:
    """X (T×d_in) @ W (d_in×d_out) over T: the points and the predicted crossovers."""

    d_in: int
    d_out: int
    sizing: str  # why d_in, d_out were chosen, in words
    points: tuple[Point, ...]
    crossover: float | None  # predicted T at the ridge (calibrated β)
    crossover_uncalibrated: float | None = None  # the same at β = memory.bandwidth

    @property
    def mae(self) -> float:
        """The median absolute error of the predictions."""
        return median_abs_error(self.points)

    @property
    def mae_uncalibrated(self) -> float:
        """The median absolute error of the predictions with β = memory.bandwidth."""
        return median_abs_error([dataclasses.replace(p, predicted=p.uncalibrated)
                                 for p in self.points])

    @property
    def knee_points(self) -> list[Point]:
        """The points the knee is fitted on: T ≥ ``KNEE_MIN_T``."""
        return [p for p in self.points if p.T >= KNEE_MIN_T]

    @property
    def knee(self) -> Knee | None:
        """The hinge fit of the measured medians over :attr:`knee_points`."""
        pts = self.knee_points
        return fit_knee([p.T for p in pts], [p.measured.median for p in pts])

    @property
    def knee_predicted(self) -> Knee | None:
        """The same fit on the predicted times (a check of the method)."""
        pts = self.knee_points
        return fit_knee([p.T for p in pts], [p.predicted for p in pts])


@dataclass(frozen=True, kw_only=True)
class AttentionSweep:
    """Causal attention over T, one sequence, in each form run (``naive``, ``blocked``...)."""

    heads: int
    head_dim: int
    m_sram: float  # bytes: the cache level taken as FlashAttention's M
    m_sram_source: str
    note: str  # how the forms were run and predicted, in words
    forms: Mapping[str, tuple[Point, ...]]


@dataclass(frozen=True, kw_only=True)
class Validation:
    """One validation run: the machine, its sweeps, and the GPU's run or why there is none."""

    machine: Machine
    projection: ProjectionSweep
    attention: AttentionSweep | None = None
    gpu: Validation | None = None
    gpu_skipped: str = ""  # why there is no GPU part ("" when not tried)


# --- comparison ------------------------------------------------------------------------------
def median_abs_error(points: Sequence[Point]) -> float:
    """Median over points of |predicted/measured − 1|."""
    if not points:
        raise ValueError("no points to compare")
    errors = sorted(p.error for p in points)
    n = len(errors)
    return errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2


def fit_knee(ts: Sequence[float], times: Sequence[float]) -> Knee | None:
    """Fit t = max(a, b·T) in log–log space; the knee is T = a/b. None with < 4 points.

    For each split k of the points sorted by T (k ≥ 2 flat, ≥ 2 sloped), log a is the mean of
    log t over the flat part and log b the mean of log(t/T) over the sloped part; the split with
    the least squared log residual of max(a, b·T) over all points wins.

    >>> ts = [1, 2, 4, 8, 16, 32, 64, 128]
    >>> k = fit_knee(ts, [max(1.0, t / 10) for t in ts])
    >>> round(k.knee, 6)
    10.0
    """
    pairs = sorted(zip(ts, times))
    if len(pairs) < 4 or any(t <= 0 or y <= 0 for t, y in pairs):
        return None
    lt = [math.log(t) for t, _ in pairs]
    ly = [math.log(y) for _, y in pairs]
    best: tuple[float, Knee] | None = None
    for k in range(2, len(pairs) - 1):
        la = sum(ly[:k]) / k
        lb = sum(y - t for t, y in zip(lt[k:], ly[k:])) / (len(pairs) - k)
        sse = sum((max(la, lb + t) - y) ** 2 for t, y in zip(lt, ly))
        if best is None or sse < best[0]:
            best = (sse, Knee(math.exp(la), math.exp(lb), math.exp(la - lb), k))
    return best[1] if best else None


# --- sizes -----------------------------------------------------------------------------------
def projection_width(llc_bytes: int | None, available: int | None,
                     factor: int = 2) -> tuple[int, str]:
    """The smallest power-of-two width d with fp32 weights d×d ≥ ``factor``× the LLC.

    Capped so the weights and the T = 4096 activations take at most a quarter of available memory.

    >>> projection_width(480 * 2**20, 24 * 2**30)[0]
    16384
    >>> projection_width(32 * 2**20, 24 * 2**30)[0]  # 64 MiB of weights
    4096
    """
    target = factor * (llc_bytes or 2**26)
    d = 1024
    while FP32 * d * d < target:
        d *= 2
    why = (f"fp32 weights {format_bytes(FP32 * d * d)} ≥ {factor}× the last-level cache "
           f"({format_bytes(llc_bytes)})" if llc_bytes else
           f"last-level cache unknown: weights {format_bytes(FP32 * d * d)}")
    while available and FP32 * (d * d + 2 * 4096 * d) > available / 4 and d > 1024:
        d //= 2
        why = f"weights {format_bytes(FP32 * d * d)}, capped by available memory"
    return d, why


def attention_note(v_heads: int, head_dim: int, m_sram: float, m_source: str) -> str:
    """How the CPU attention forms were run and predicted, in words."""
    return (f"{v_heads} heads of dimension {head_dim}, one sequence, fp32. `naive`: FlashAttention "
            "Algorithm 0 in numpy (scores materialised; the model counts all T² scores and "
            "4·T² + 4·T·H elements of traffic per head). `blocked`: Algorithm 1 with "
            f"M = {format_bytes(m_sram)} ({m_source}), block sizes (B_c, B_r) = "
            f"{block_sizes(head_dim, m_sram)}; traffic from `tiled_bytes(causal=True)`. "
            "Overhead term: t_call × the numpy calls the implementation makes.")


# --- the model against the measurements ----------------------------------------------------------
def projection_sweep(measured: Mapping[int, Stats], d_in: int, d_out: int, sizing: str,
                     machine: Machine) -> ProjectionSweep:
    """The measured medians of X[:T] @ W against :func:`.predict.predict_projection` for the
    machine (calibrated and uncalibrated β), with the predicted crossovers."""
    m = machine
    points = []
    for t, stats in measured.items():
        f, q, pred = predict_projection(t, d_in, d_out, m.p_peak, m.beta, m.t_call, m.dtype)
        uncal = predict_projection(t, d_in, d_out, m.p_peak, m.beta_uncalibrated, m.t_call,
                                   m.dtype)[2]
        points.append(Point(T=t, flops=f, bytes=q, predicted=pred, overhead=m.t_call,
                            measured=stats, no_overlap=m.t_call + f / m.p_peak + q / m.beta,
                            uncalibrated=uncal))
    return ProjectionSweep(
        d_in=d_in, d_out=d_out, sizing=sizing, points=tuple(points),
        crossover=projection_crossover(d_in, d_out, m.p_peak, m.beta, m.dtype),
        crossover_uncalibrated=projection_crossover(d_in, d_out, m.p_peak, m.beta_uncalibrated,
                                                    m.dtype))


def attention_sweep(measured: Mapping[str, Mapping[int, tuple[Stats, int]]], heads: int,
                    head_dim: int, m_sram: float, m_sram_source: str, note: str,
                    machine: Machine) -> AttentionSweep:
    """``{form: {T: (stats, calls)}}`` against :func:`.predict.predict_attention`; each point's
    overhead term is t_call × the calls the form made."""
    m = machine
    forms: dict[str, tuple[Point, ...]] = {}
    for mode, runs in measured.items():
        points = []
        for t, (stats, calls) in runs.items():
            f, q, pred = predict_attention(mode, t, heads, head_dim, m_sram, m.p_peak, m.beta,
                                           m.t_call, calls, m.dtype)
            uncal = predict_attention(mode, t, heads, head_dim, m_sram, m.p_peak,
                                      m.beta_uncalibrated, m.t_call, calls, m.dtype)[2]
            overhead = m.t_call * calls
            points.append(Point(T=t, flops=f, bytes=q, predicted=pred, overhead=overhead,
                                measured=stats, no_overlap=overhead + f / m.p_peak + q / m.beta,
                                uncalibrated=uncal))
        forms[mode] = tuple(points)
    return AttentionSweep(heads=heads, head_dim=head_dim, m_sram=m_sram,
                          m_sram_source=m_sram_source, note=note, forms=forms)


def _default_tokens(quick: bool) -> list[int]:
    return [4**i for i in range(6)] if quick else [2**i for i in range(13)]


def validate(hw: Any, quick: bool = False, progress_bar: bool = False,
             tokens: Sequence[int] | None = None, width: int | None = None,
             attn_tokens: Sequence[int] | None = None, heads: int = 4, head_dim: int = 64,
             repeats: int = 5, budget_s: float | None = None) -> Validation:
    """Run the projection and attention sweeps and compare them with the model for ``hw`` (a
    loaded :class:`roofline.specs.hardware.Hardware`). Sizes default to this machine's caches."""
    levels = cache_levels()
    llc, private = last_level_cache(levels), per_core_cache(levels)
    if width is None:
        d, sizing = projection_width(llc.size if llc else None, memory_bytes()[1])
    else:
        d, sizing = width, f"width {width} given by the caller"
    tokens = list(tokens or _default_tokens(quick))
    attn_tokens = list(attn_tokens or ([128, 256, 512] if quick else
                                       [128, 256, 512, 1024, 2048, 4096]))
    budget = budget_s if budget_s is not None else (3.0 if quick else 12.0)
    if hw.sram_per_sm:
        m_sram, m_source = float(hw.sram_per_sm), f"hardware file on_chip.sram_per_sm ({hw.path})"
    elif private:
        m_sram, m_source = float(private.size), private.source
    else:
        raise RuntimeError("no per-core cache size: neither the hardware file nor sysfs has one")
    hw.peak("fp32")  # a file without the fp32 peak fails before any timing
    bar = Progress(len(tokens) + 2 * len(attn_tokens) + 1, enabled=progress_bar)
    load_before = load_average()
    try:
        t_call = call_overhead()
        bar.step("per-call overhead")
        proj = run_projection(tokens, d, d, repeats, budget, bar)
        attn = run_attention(attn_tokens, heads, head_dim, block_sizes(head_dim, m_sram),
                             repeats, budget, bar)
    finally:
        bar.close()
    machine = Machine.from_hardware(hw, "fp32", t_call, (load_before, load_average()))
    return Validation(
        machine=machine, projection=projection_sweep(proj, d, d, sizing, machine),
        attention=attention_sweep(attn, heads, head_dim, m_sram, m_source,
                                  attention_note(heads, head_dim, m_sram, m_source), machine))
