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

    from ..measure.validation import Point, Validation

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
    m, s = v.machine, v.projection
    _series(ax, s.points, "projection", "C0")
    if m.calibrated:
        ax.plot([p.T for p in s.points], [p.uncalibrated for p in s.points], "-",
                color="C7", lw=0.8, label="uncalibrated prediction (β = memory.bandwidth)")
    ax.plot([p.T for p in s.points], [p.no_overlap for p in s.points], ":", color="C0",
            alpha=0.7, label="no-overlap bound F/P + Q/β")
    if s.crossover:
        ax.axvline(s.crossover, color="C3", ls="--", lw=1,
                   label=f"predicted crossover T = {s.crossover:.0f}")
    knee = s.knee
    if knee:
        ax.axvline(knee.knee, color="C2", ls="-.", lw=1, label=f"measured knee T = {knee.knee:.0f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens T (rows of X)")
    ax.set_ylabel("time per call (s)")
    error = f"median error {s.mae:.0%}"
    if m.calibrated:
        error += f"; uncalibrated {s.mae_uncalibrated:.0%}"
    ax.set_title(f"projection {s.d_in}×{s.d_out} {m.dtype} ({error})", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return ax


def plot_attention(v: Validation, ax: Axes | None = None) -> Axes:
    """Causal attention time against T: each form run (naive, blocked or sdpa), measured and
    predicted."""
    ax = _axes(ax)
    a = v.attention
    if a is None:
        return ax
    for (mode, points), color in zip(a.forms.items(), ("C1", "C4", "C5")):
        _series(ax, points, mode, color)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens T")
    ax.set_ylabel("time per call (s)")
    ax.set_title(f"causal attention, {a.heads} heads × H = {a.head_dim}, {v.machine.dtype}",
                 fontsize=10)
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
    m = v.machine
    beta = f"β = {m.beta / 1e9:.3g} GB/s"
    if m.calibrated:
        beta += (f" = {m.beta_uncalibrated / 1e9:.3g} GB/s × {m.beta / m.beta_uncalibrated:.2f}"
                 " calibrated")
    fig.suptitle(f"{m.name}: measured vs predicted (P = {m.p_peak / 1e9:.0f} GFLOP/s "
                 f"{m.dtype}, {beta})", fontsize=11)
    return fig
