"""Figures of ``roofline validate``: measured against predicted time, log–log.

matplotlib is imported inside the functions. Each Axes-level function takes ``ax=None`` and
returns the Axes; :func:`figure` returns a Figure with the projection and attention panels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..validate import Point, Validation

__all__ = ["plot_projection", "plot_attention", "figure"]


def _axes(ax: Axes | None) -> Axes:
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    return ax


def _series(ax: Axes, points: Sequence[Point], label: str, color: str) -> None:
    ts = [p.T for p in points]
    med = [p.measured.median for p in points]
    low = [p.measured.median - p.measured.min for p in points]
    high = [p.measured.max - p.measured.median for p in points]
    ax.errorbar(ts, med, yerr=[low, high], fmt="o", ms=4, color=color, capsize=2,
                label=f"{label}: measured (median, min–max)")
    ax.plot(ts, [p.predicted for p in points], "-", color=color,
            label=f"{label}: predicted max(F/P, Q/β) + overhead")


def plot_projection(v: Validation, ax: Axes | None = None) -> Axes:
    """Projection time per call against T: measured (median, min–max bars), the roofline
    prediction (calibrated β when the file has one; the uncalibrated one as a thin grey line),
    its no-overlap bound, the predicted crossover and the measured knee."""
    ax = _axes(ax)
    _series(ax, v.projection, "projection", "C0")
    if v.calibrated:
        ax.plot([p.T for p in v.projection], [p.uncalibrated for p in v.projection], "-",
                color="C7", lw=0.8, label="uncalibrated prediction (β = memory.bandwidth)")
    ax.plot([p.T for p in v.projection], [p.no_overlap for p in v.projection], ":", color="C0",
            alpha=0.7, label="no-overlap bound F/P + Q/β")
    if v.crossover:
        ax.axvline(v.crossover, color="C3", ls="--", lw=1,
                   label=f"predicted crossover T = {v.crossover:.0f}")
    knee = v.knee_measured
    if knee:
        ax.axvline(knee.knee, color="C2", ls="-.", lw=1, label=f"measured knee T = {knee.knee:.0f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens T (rows of X)")
    ax.set_ylabel("time per call (s)")
    error = f"median error {v.mae:.0%}"
    if v.calibrated:
        error += f"; uncalibrated {v.mae_uncalibrated:.0%}"
    ax.set_title(f"projection {v.d_in}×{v.d_out} {v.dtype} ({error})", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def plot_attention(v: Validation, ax: Axes | None = None) -> Axes:
    """Causal attention time against T: naive and blocked, measured and predicted."""
    ax = _axes(ax)
    for (mode, points), color in zip(v.attention.items(), ("C1", "C4", "C5")):
        _series(ax, points, mode, color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens T")
    ax.set_ylabel("time per call (s)")
    ax.set_title(f"causal attention, {v.heads} heads × H = {v.head_dim}, fp32", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def figure(v: Validation, **kwargs: Any) -> Figure:
    """Both panels side by side, titled with the machine."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=kwargs.pop("figsize", (12, 5)), layout="constrained", **kwargs)
    left, right = fig.subplots(1, 2)
    plot_projection(v, left)
    if v.attention:
        plot_attention(v, right)
    else:
        right.set_visible(False)
    beta = f"β = {v.beta / 1e9:.3g} GB/s"
    if v.calibrated and v.beta_uncalibrated:
        beta += (f" = {v.beta_uncalibrated / 1e9:.3g} GB/s × {v.beta / v.beta_uncalibrated:.2f}"
                 " calibrated")
    fig.suptitle(f"{v.machine}: measured vs predicted (P = {v.p_peak / 1e9:.0f} GFLOP/s "
                 f"{v.dtype}, {beta})", fontsize=11)
    return fig
