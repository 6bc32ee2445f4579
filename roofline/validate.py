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

where F and Q are the project's exact derivations (``roofline.derive.projection``,
``roofline.derive.attention``) with b_w = b_a = 4 bytes substituted, P_peak (fp32) and beta_hbm
come from the hardware file (``Hardware.peak``, ``Hardware.bandwidth``: beta_hbm is the calibrated
bandwidth, ``memory.bandwidth`` × ``efficiency.bandwidth``, the fraction ``roofline measure``
finds a thin BLAS product streaming its weights at; :mod:`roofline.calibrate`). The uncalibrated
prediction, with ``memory.bandwidth`` alone, is reported beside it. t_call is a measured, explicit per-call overhead (the median
time of a 1×1 numpy matmul, i.e. the Python and numpy dispatch cost), times the numpy calls the
implementation makes.

The error of a prediction is |predicted/measured − 1|; the projection's summary is its median
over T. The knee of a time-vs-T curve is found by fitting a roofline-shaped hinge
t(T) = max(a, b·T) in log–log space (least squares over every split of the sorted points into a
flat part and a slope-one part, at least two points each): the knee is T = a/b, where the flat
memory-bound plateau meets the compute-bound line. The fit uses the points the model covers,
T ≥ 2 (``KNEE_MIN_T``): at T = 1 numpy takes BLAS's matrix–vector (GEMV) path, which reads W
without packing it and runs several times faster than the thin GEMM the model describes, so it
would drag the plateau down and the knee with it. The predicted crossover
``projection_compute_bound_tokens`` is SymPy's solution of intensity(T) = P_peak/beta_hbm for one
projection (solved here: ``roofline.derive.crossovers`` holds the layer-level crossover).

The report of a run (``validation.md`` and its figures) is written by
:mod:`roofline.validation_report`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .hwfile import format_bytes
from .measure import (Progress, Stats, cache_levels, last_level_cache, load_average, memory_bytes,
                      per_core_cache, summarize, time_call)

__all__ = ["Point", "Validation", "Knee", "projection_width", "predict_projection",
           "projection_crossover", "predict_attention", "fit_knee", "median_abs_error",
           "call_overhead", "naive_attention", "blocked_attention", "run_projection",
           "run_attention", "validate"]

FP32 = 4  # bytes per fp32 element
KNEE_MIN_T = 2  # the knee is fitted on T ≥ 2: T = 1 takes BLAS's GEMV path, off the model


@dataclass(frozen=True)
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


@dataclass
class Validation:
    """The result of one validation run (CPU; the GPU part, if any, in ``gpu``)."""

    machine: str
    hardware_path: str
    p_peak: float  # FLOP/s, fp32
    beta: float  # bytes/s
    t_call: float  # seconds per numpy call
    d_in: int
    d_out: int
    sizing: str  # why d_in, d_out were chosen
    projection: list[Point]
    crossover: float | None  # predicted projection_compute_bound_tokens
    heads: int
    head_dim: int
    m_sram: float  # bytes: the cache level chosen as FlashAttention's M
    m_sram_source: str
    attention: dict[str, list[Point]] = field(default_factory=dict)
    gpu: dict[str, Any] = field(default_factory=dict)  # {"skipped": why} or {"validation": ...}
    dtype: str = "fp32"
    attention_note: str = ""  # how the attention forms were run, in words
    load: tuple[str, str] = ("", "")  # load averages before and after the run
    beta_uncalibrated: float | None = None  # bytes/s: memory.bandwidth without the efficiency
    crossover_uncalibrated: float | None = None  # the crossover at beta_uncalibrated
    calibration: str = ""  # the hardware file's efficiency.bandwidth note, if any
    peak_source: str = ""  # the hardware file's source of P_peak (it names the matmul shape)

    @property
    def calibrated(self) -> bool:
        """Whether beta differs from memory.bandwidth (an efficiency below 1 was applied)."""
        return self.beta_uncalibrated is not None and self.beta_uncalibrated != self.beta

    @property
    def mae(self) -> float:
        return median_abs_error(self.projection)

    @property
    def mae_uncalibrated(self) -> float:
        """The median absolute error of the predictions with beta_uncalibrated."""
        return median_abs_error([_uncalibrated(p) for p in self.projection])

    @property
    def knee_points(self) -> list[Point]:
        """The projection points the knee is fitted on: T ≥ ``KNEE_MIN_T``."""
        return [p for p in self.projection if p.T >= KNEE_MIN_T]

    @property
    def knee_measured(self) -> Knee | None:
        """The hinge fit of the measured medians over :attr:`knee_points`."""
        pts = self.knee_points
        return fit_knee([p.T for p in pts], [p.measured.median for p in pts])

    @property
    def knee_predicted(self) -> Knee | None:
        """The same fit on the predicted times (a check of the method)."""
        pts = self.knee_points
        return fit_knee([p.T for p in pts], [p.predicted for p in pts])


# --- predictions (exact SymPy, numbers substituted once) ---------------------------------------
def projection_width(llc_bytes: int | None, available: int | None, factor: int = 2) -> tuple[int, str]:
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


def _numbers(expr: Any, values: dict[str, float]) -> float:
    from .symbols import CATALOGUE

    return float(expr.subs({CATALOGUE[k].symbol: v for k, v in values.items()}))


def predict_projection(T: int, d_in: int, d_out: int, p_peak: float, beta: float,
                       t_call: float = 0.0, elem: int = FP32) -> tuple[float, float, float]:
    """(F, Q, t): exact FLOPs and bytes of ``roofline.derive.projection`` with b_w = b_a = elem
    (4: fp32), and t = t_call + max(F/P, Q/β).

    >>> predict_projection(2, 3, 5, 1e9, 1e9)
    (60.0, 124.0, 1.24e-07)
    """
    from .derive import projection

    shape = {"T": T, "d_in": d_in, "d_out": d_out, "b_w": elem, "b_a": elem}
    f = _numbers(projection.flops(), shape)
    q = _numbers(projection.hbm_bytes(), shape)
    return f, q, t_call + max(f / p_peak, q / beta)


def projection_crossover(d_in: int, d_out: int, p_peak: float, beta: float,
                         elem: int = FP32) -> float | None:
    """Solve intensity(T) = P_peak/beta_hbm for T with SymPy, then substitute the numbers;
    None where the intensity never reaches the ridge (2·β·d_in·d_out ≤ P·b_a·(d_in + d_out)).

    >>> round(projection_crossover(4096, 4096, 320e9, 20e9), 3)
    32.508
    """
    from sympy import Symbol, solve

    from .derive import projection
    from .symbols import CATALOGUE, P_peak, beta_hbm

    rows = Symbol("rows", positive=True)
    roots = solve(projection.intensity(rows) - P_peak / beta_hbm, rows)
    values = {"d_in": d_in, "d_out": d_out, "b_w": elem, "b_a": elem, "P_peak": p_peak,
              "beta_hbm": beta}
    subs = {CATALOGUE[k].symbol: v for k, v in values.items()}
    for root in roots:
        x = float(root.subs(subs))
        if x > 0 and math.isfinite(x):
            return x
    if 2 * beta * d_in * d_out <= p_peak * elem * (d_in + d_out):
        return None
    raise ArithmeticError("SymPy found no positive crossover where one exists")  # pragma: no cover


def predict_attention(mode: str, T: int, heads: int, head_dim: int, m_sram: float, p_peak: float,
                      beta: float, t_call: float = 0.0, calls: int = 0,
                      elem: int = FP32) -> tuple[float, float, float]:
    """(F, Q, t) of causal attention: ``naive`` = Algorithm 0 (all T² scores computed),
    ``blocked`` or ``sdpa`` = Algorithm 1 (``tiled_bytes(causal=True)``, M = ``m_sram`` bytes)."""
    from .derive import attention

    values = {"T": T, "B": 1, "n_q": heads, "n_kv": heads, "H": head_dim, "b_a": elem,
              "M_sram": m_sram}
    if mode == "naive":
        f, q = attention.flops(causal=False), attention.naive_bytes()
    elif mode in ("blocked", "sdpa"):
        f, q = attention.flops(causal=True), attention.tiled_bytes(causal=True, smooth=False)
    else:
        raise ValueError(f"unknown attention form {mode!r}; valid: naive, blocked, sdpa")
    f, q = _numbers(f, values), _numbers(q, values)
    return f, q, t_call * calls + max(f / p_peak, q / beta)


def block_sizes(head_dim: int, m_sram: float) -> tuple[int, int]:
    """(B_c, B_r) = (⌈M/(4d)⌉, min(B_c, d)), M = m_sram/4 fp32 elements (FlashAttention Alg. 1).

    >>> block_sizes(64, 2 * 2**20)
    (2048, 64)
    """
    from sympy import Integer

    from .derive import attention
    from .symbols import H, M_sram, b_a

    b_c, b_r = attention.block_sizes()
    subs = {H: Integer(head_dim), M_sram: Integer(int(m_sram)), b_a: Integer(FP32)}
    return int(b_c.subs(subs)), int(b_r.subs(subs))


# --- comparison ------------------------------------------------------------------------------
def _uncalibrated(p: Point) -> Point:
    """``p`` with its uncalibrated prediction as the prediction."""
    return Point(p.T, p.flops, p.bytes, p.uncalibrated, p.overhead, p.measured)


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


# --- the kernels -----------------------------------------------------------------------------
def call_overhead(repeats: int = 200) -> float:
    """Median time of one tiny numpy matmul (1×1 @ 1×1): the fixed cost of a numpy call."""
    import numpy as np

    a = np.ones((1, 1), np.float32)
    out = np.empty((1, 1), np.float32)
    return summarize(time_call(lambda: np.matmul(a, a, out=out), repeats, warmup=10)).median


def naive_attention(q: Any, k: Any, v: Any, mask: Any) -> tuple[Any, int]:
    """Causal softmax(Q Kᵀ/√d + mask) V with the scores materialised; (output, numpy calls).

    ``q, k, v``: (heads, T, d) fp32; ``mask``: (T, T) with 0 on and below the diagonal, −inf above.
    """
    import numpy as np

    s = np.matmul(q, k.transpose(0, 2, 1))  # (heads, T, T): the full score matrix
    s *= np.float32(1 / math.sqrt(q.shape[-1]))
    s += mask
    m = s.max(axis=-1, keepdims=True)
    s -= m
    np.exp(s, out=s)
    denom = s.sum(axis=-1, keepdims=True)
    s /= denom
    return np.matmul(s, v), 9


def blocked_attention(q: Any, k: Any, v: Any, b_c: int, b_r: int) -> tuple[Any, int]:
    """Causal attention in FlashAttention's Algorithm 1 order, one head at a time: outer loop over
    K_j, V_j blocks of ``b_c`` rows, inner loop over Q_i blocks of ``b_r`` rows at or below the
    diagonal; online softmax with row statistics m, ℓ. Never holds more than a b_r×b_c tile of
    scores. Returns (output, numpy calls made)."""
    import numpy as np

    heads, n, d = q.shape
    scale = np.float32(1 / math.sqrt(d))
    out = np.zeros_like(q)
    calls = 0
    for h in range(heads):
        qh, kh, vh, oh = q[h] * scale, k[h], v[h], out[h]
        m = np.full(n, -np.inf, np.float32)
        ell = np.zeros(n, np.float32)
        calls += 3
        for j0 in range(0, n, b_c):
            j1 = min(j0 + b_c, n)
            kt, vj = kh[j0:j1].T, vh[j0:j1]
            first_row = (j0 // b_r) * b_r  # rows above j0 see none of this block
            for i0 in range(first_row, n, b_r):
                i1 = min(i0 + b_r, n)
                s = qh[i0:i1] @ kt  # (b_r, b_c) tile
                calls += 1
                if j1 - 1 > i0:  # the tile reaches above the diagonal: mask it
                    rows = np.arange(i0, i1)[:, None]
                    cols = np.arange(j0, j1)[None, :]
                    s[cols > rows] = -np.inf
                    calls += 4
                m_tile = s.max(axis=1)
                m_new = np.maximum(m[i0:i1], m_tile)
                s -= m_new[:, None]
                np.exp(s, out=s)
                alpha = np.exp(m[i0:i1] - m_new)
                ell[i0:i1] = alpha * ell[i0:i1] + s.sum(axis=1)
                oh[i0:i1] = alpha[:, None] * oh[i0:i1] + s @ vj
                m[i0:i1] = m_new
                calls += 15
        oh /= ell[:, None]
        calls += 1
    return out, calls


# --- runs ------------------------------------------------------------------------------------
def _default_tokens(quick: bool) -> list[int]:
    return [4**i for i in range(6)] if quick else [2**i for i in range(13)]


def run_projection(tokens: Sequence[int], d_in: int, d_out: int, repeats: int,
                   budget_s: float, progress: Progress | None = None) -> dict[int, Stats]:
    """Median-of-repeats timings of X[:T] @ W for each T (fp32), W of d_in×d_out."""
    import numpy as np

    rng = np.random.default_rng(0)
    w = rng.random((d_in, d_out), dtype=np.float32)
    x = rng.random((max(tokens), d_in), dtype=np.float32)
    y = np.empty((max(tokens), d_out), np.float32)
    out: dict[int, Stats] = {}
    for t in tokens:
        xt, yt = x[:t], y[:t]
        out[t] = summarize(time_call(lambda: np.matmul(xt, w, out=yt), repeats,
                                     budget_s=budget_s))
        if progress:
            progress.step(f"projection T={t}")
    return out


def run_attention(tokens: Sequence[int], heads: int, head_dim: int, m_sram: float,
                  repeats: int, budget_s: float, progress: Progress | None = None,
                  ) -> dict[str, dict[int, tuple[Stats, int]]]:
    """{"naive"|"blocked": {T: (stats, numpy calls)}}; checks both agree at every T."""
    import numpy as np

    b_c, b_r = block_sizes(head_dim, m_sram)
    rng = np.random.default_rng(1)
    out: dict[str, dict[int, tuple[Stats, int]]] = {"naive": {}, "blocked": {}}
    for t in tokens:
        q, k, v = (rng.standard_normal((heads, t, head_dim), dtype=np.float32) for _ in range(3))
        mask = np.triu(np.full((t, t), -np.inf, np.float32), 1)
        ref, n_naive = naive_attention(q, k, v, mask)
        got, n_blocked = blocked_attention(q, k, v, b_c, b_r)
        if not np.allclose(ref, got, rtol=1e-3, atol=1e-4):
            raise RuntimeError(f"blocked attention disagrees with naive at T={t}")
        del ref, got
        for name, fn, calls in (("naive", lambda: naive_attention(q, k, v, mask), n_naive),
                                ("blocked", lambda: blocked_attention(q, k, v, b_c, b_r),
                                 n_blocked)):
            out[name][t] = (summarize(time_call(fn, repeats, warmup=0, budget_s=budget_s)), calls)
            if progress:
                progress.step(f"attention {name} T={t}")
    return out


def attention_note(v_heads: int, head_dim: int, m_sram: float, m_source: str) -> str:
    """How the CPU attention forms were run and predicted, in words."""
    return (f"{v_heads} heads of dimension {head_dim}, one sequence, fp32. `naive`: FlashAttention "
            "Algorithm 0 in numpy (scores materialised; the model counts all T² scores and "
            "4·T² + 4·T·H elements of traffic per head). `blocked`: Algorithm 1 with "
            f"M = {format_bytes(m_sram)} ({m_source}), block sizes (B_c, B_r) = "
            f"{block_sizes(head_dim, m_sram)}; traffic from `tiled_bytes(causal=True)`. "
            "Overhead term: t_call × the numpy calls the implementation makes.")


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
    p_peak, beta, beta0 = hw.peak("fp32"), hw.bandwidth(), hw.memory_bandwidth
    bar = Progress(len(tokens) + 2 * len(attn_tokens) + 1, enabled=progress_bar)
    load_before = load_average()
    try:
        t_call = call_overhead()
        bar.step("per-call overhead")
        proj = run_projection(tokens, d, d, repeats, budget, bar)
        attn = run_attention(attn_tokens, heads, head_dim, m_sram, repeats, budget, bar)
    finally:
        bar.close()
    points = []
    for t, stats in proj.items():
        f, q, pred = predict_projection(t, d, d, p_peak, beta, t_call)
        points.append(Point(t, f, q, pred, t_call, stats, t_call + f / p_peak + q / beta,
                            predict_projection(t, d, d, p_peak, beta0, t_call)[2]))
    attention: dict[str, list[Point]] = {}
    for mode, runs in attn.items():
        attention[mode] = []
        for t, (stats, calls) in runs.items():
            f, q, pred = predict_attention(mode, t, heads, head_dim, m_sram, p_peak, beta,
                                           t_call, calls)
            attention[mode].append(Point(
                t, f, q, pred, t_call * calls, stats, t_call * calls + f / p_peak + q / beta,
                predict_attention(mode, t, heads, head_dim, m_sram, p_peak, beta0, t_call,
                                  calls)[2]))
    return Validation(hw.name, str(hw.path), p_peak, beta, t_call, d, d, sizing, points,
                      projection_crossover(d, d, p_peak, beta), heads, head_dim, m_sram,
                      m_source, attention,
                      attention_note=attention_note(heads, head_dim, m_sram, m_source),
                      load=(load_before, load_average()), beta_uncalibrated=beta0,
                      crossover_uncalibrated=projection_crossover(d, d, p_peak, beta0),
                      calibration=hw.quantity_notes.get("efficiency.bandwidth", ""),
                      peak_source=getattr(hw, "sources", {}).get("peak_flops.fp32", ""))
