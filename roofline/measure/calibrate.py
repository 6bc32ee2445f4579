"""Calibrate the roofline's bandwidth: the rate a BLAS product with few rows streams its weights.

The roofline's memory term Q/β assumes a kernel moves its bytes at the bandwidth of a pure stream
(``roofline measure`` records the STREAM triad as ``memory.bandwidth``). A projection with a thin
X (few prompt tokens) is bound by reading W once, and a BLAS library need not read it that fast:
OpenBLAS's GEMM copies ("packs") W into cache-sized panels before its kernel runs, so a thin
product moves W through the core more than once and reaches a fraction of the triad. That fraction
is measured here and written as ``[efficiency] bandwidth`` (hardware/README.md:
``Hardware.bandwidth()`` = ``memory.bandwidth`` × ``efficiency.bandwidth``).

The measurement, a "GEMM weight stream": ``X (rows×d_in) @ W (d_in×d_out)`` in fp32 with
``rows`` = 8 and W an MLP up-projection shape, d_out = 4·d_in, at least twice the last-level
cache (a different shape from the square one ``roofline validate`` checks, so the check is not
fitted to itself). Bytes are counted as the model counts them (``projection.hbm_bytes``:
b_w·d_in·d_out + b_a·rows·(d_in + d_out)). The same W with one row of X is timed too: numpy then
takes BLAS's matrix–vector (GEMV) path, which reads W without packing it; its rate goes in the
note (the model keeps one bandwidth for every T, so T = 1 is a known miss, not a second fit).

No hardware number is written here: the shape is derived from the cache size read at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .hwfile import format_bytes, format_rate
from .timing import Stats, time_call

__all__ = ["GEMM_ROWS", "ASPECT", "gemm_shape", "stream_bytes", "measure_gemm_stream",
           "Calibration"]

GEMM_ROWS = 8  # rows of X: few prompt tokens, a thin GEMM (not GEMV)
ASPECT = 4  # d_out = ASPECT·d_in (an MLP up-projection), unlike validate's square W
_FP32 = 4


def gemm_shape(llc_bytes: int | None, available: int | None, factor: int = 2) -> tuple[int, int]:
    """(d_in, d_out = 4·d_in): the smallest power-of-two d_in ≥ 256 whose fp32 W is at least
    ``factor``× the last-level cache (64 MiB assumed if unknown), halved while W exceeds a
    quarter of ``available`` memory.

    >>> gemm_shape(480 * 2**20, 24 * 2**30)  # 1 GiB ≥ 2 × 480 MiB
    (8192, 32768)
    >>> gemm_shape(480 * 2**20, 2**31)  # 2 GiB available: W ≤ 512 MiB
    (4096, 16384)
    """
    target = factor * (llc_bytes or 2**26)
    d = 256
    while _FP32 * ASPECT * d * d < target:
        d *= 2
    while available and _FP32 * ASPECT * d * d > available / 4 and d > 256:
        d //= 2
    return d, ASPECT * d


def stream_bytes(rows: int, d_in: int, d_out: int, elem: int = _FP32) -> float:
    """Bytes of one ``X @ W``: ``roofline.derive.projection.hbm_bytes`` with b_w = b_a = elem,
    evaluated by the evaluation core.

    >>> stream_bytes(8, 3, 5)  # 4·3·5 + 4·8·(3 + 5)
    316.0
    """
    from .. import evaluate
    from ..derive import projection

    shape = {"T": rows, "d_in": d_in, "d_out": d_out, "b_w": elem, "b_a": elem}
    return evaluate.scalar(projection.hbm_bytes(), shape)


def measure_gemm_stream(d_in: int, d_out: int, repeats: int, rows: int = GEMM_ROWS,
                        progress: Any = None) -> dict[str, tuple[float, list[float]]]:
    """``{"gemm": (bytes, times), "gemv": (bytes, times)}``: ``X[:rows] @ W`` and ``X[:1] @ W``
    in fp32, each after a warm-up call; bytes from :func:`stream_bytes`."""
    import numpy as np

    w = np.full((d_in, d_out), 0.5, np.float32)  # constant: every page touched, sums exact
    x = np.full((rows, d_in), 0.25, np.float32)
    y = np.empty((rows, d_out), np.float32)
    out: dict[str, tuple[float, list[float]]] = {}
    for name, n in (("gemm", rows), ("gemv", 1)):
        xn, yn = x[:n], y[:n]

        def run(xn: Any = xn, yn: Any = yn, n: int = n) -> None:
            np.matmul(xn, w, out=yn)
            if progress:
                progress.step(f"GEMM weight stream, {n} row(s)")

        out[name] = (stream_bytes(n, d_in, d_out), time_call(run, repeats))
        if yn[0, 0] != np.float32(0.125 * d_in):  # a sum of d_in exact terms
            raise RuntimeError(f"the GEMM weight stream computed a wrong result ({name})")
    return out


@dataclass(frozen=True)
class Calibration:
    """The GEMM and GEMV weight-stream rates (bytes/s) against the triad's median (bytes/s)."""

    d_in: int
    d_out: int
    rows: int
    gemm: Stats
    gemv: Stats
    triad: float

    @property
    def ratio(self) -> float:
        """GEMM weight stream / triad, unclamped."""
        return self.gemm.median / self.triad

    @property
    def efficiency(self) -> float:
        """The ratio to 4 significant digits, clamped to (0, 1].

        >>> s = Stats(1.0, 2.0, 3.0, 3)
        >>> Calibration(8, 32, 8, s, s, 4.0).efficiency, Calibration(8, 32, 8, s, s, 1.5).efficiency
        (0.5, 1.0)
        """
        return min(1.0, float(f"{self.ratio:.4g}"))

    def entry(self, llc: str) -> dict[str, Any]:
        """The ``[efficiency] bandwidth`` inline table; ``llc`` names the cache, in words."""
        g, v = self.gemm, self.gemv

        def rate(x: float) -> str:
            return format_rate(x, "B/s")

        note = (f"GEMM weight stream: {rate(g.median)} median ({rate(g.min)}–{rate(g.max)}) "
                f"over {g.runs} runs, triad {rate(self.triad)}; X {self.rows}×{self.d_in} @ "
                f"W {self.d_in}×{self.d_out} fp32 (W {format_bytes(_FP32 * self.d_in * self.d_out)}"
                f", {llc}), bytes = projection.hbm_bytes. GEMV (1 row, the matrix–vector path, "
                f"not used by the model): {rate(v.median)} median ({rate(v.min)}–{rate(v.max)})")
        if self.ratio > 1:
            note += (f". The GEMM stream was faster than the triad (ratio {self.ratio:.3g}): "
                     "recorded as 1")
        return {"value": self.efficiency,
                "source": "roofline measure: GEMM weight stream / triad (achievable fraction of "
                          "the triad bandwidth for a BLAS product streaming its weights), "
                          f"medians of {g.runs} after a warm-up",
                "note": note}
