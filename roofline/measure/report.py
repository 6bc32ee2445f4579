"""Write the report of ``roofline validate``: ``validation.md`` and its figures.

:func:`markdown` turns a :class:`.validation.Validation` into the report's text: the setup
(hardware file, P_peak and beta_hbm, calibrated or not, the per-call overhead), one table per
projection or attention form (F, Q, bound, predicted, no-overlap bound, measured, ratio), the
summary against the targets (median absolute error ≤ 25%, measured knee within a factor of 2 of
the predicted crossover), the regimes, and where the model misses and why. :func:`write_report`
writes it with its figures (:mod:`roofline.plot.validate`) into a folder, each file atomically.

Measuring and predicting are :mod:`.validation` and :mod:`.predict`; this module only formats
what they found (a point's regime is ``roofline.evaluate.bound``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..output import write_atomic
from .hwfile import format_bytes, format_rate
from .predict import element_bytes
from .validation import KNEE_MIN_T, Machine, Point, ProjectionSweep, Validation, median_abs_error

__all__ = ["markdown", "write_report"]


def _s(x: float) -> str:
    """Seconds, readably: 3 significant digits in s, ms or µs.

    >>> _s(0.0123), _s(2.5e-6), _s(float("nan"))
    ('12.3 ms', '2.5 µs', '–')
    """
    if not math.isfinite(x):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def _bound(p: Point, m: Machine) -> str:
    from ..evaluate import bound

    return bound(p.flops, p.bytes, m.p_peak, m.beta)


def _table(points: Sequence[Point], m: Machine) -> list[str]:
    extra = m.calibrated  # the uncalibrated prediction in two more columns
    rows = ["| T | FLOPs | bytes | bound | overhead term | predicted | no-overlap bound "
            "| measured median (min–max) | measured/predicted |"
            + (" uncalibrated predicted | measured/uncalibrated |" if extra else ""),
            "|---:|---:|---:|:--|---:|---:|---:|---:|---:|" + ("---:|---:|" if extra else "")]
    for p in points:
        t = p.measured
        rows.append(f"| {p.T} | {p.flops:.3g} | {format_bytes(p.bytes)} | {_bound(p, m)} | "
                    f"{_s(p.overhead)} | {_s(p.predicted)} | {_s(p.no_overlap)} | {_s(t.median)} "
                    f"({_s(t.min)}–{_s(t.max)}) | {p.ratio:.2f} |"
                    + (f" {_s(p.uncalibrated)} | {t.median / p.uncalibrated:.2f} |"
                       if extra else ""))
    return rows


def _calibration_lines(m: Machine) -> list[str]:
    """The bandwidth lines of the setup: calibrated and uncalibrated beta, the calibration note."""
    if not m.calibrated:
        return [f"- P_peak ({m.dtype}): {format_rate(m.p_peak, 'FLOP/s')}; beta_hbm: "
                f"{format_rate(m.beta, 'B/s')}; ridge {m.p_peak / m.beta:.1f} FLOP/byte",
                *([f"- bandwidth calibration: {m.calibration}"] if m.calibration else [])]
    b0 = m.beta_uncalibrated or m.beta
    return [f"- P_peak ({m.dtype}): {format_rate(m.p_peak, 'FLOP/s')}; beta_hbm (calibrated) = "
            f"memory.bandwidth {format_rate(b0, 'B/s')} × efficiency.bandwidth "
            f"{m.beta / b0:.4g} = **{format_rate(m.beta, 'B/s')}**; ridge "
            f"{m.p_peak / m.beta:.1f} FLOP/byte (uncalibrated: {m.p_peak / b0:.1f})",
            *([f"- bandwidth calibration (hardware file's note): {m.calibration}"]
              if m.calibration else [])]


def _crossover_lines(s: ProjectionSweep, m: Machine) -> list[str]:
    cross = f"{s.crossover:.1f}" if s.crossover else "none (never compute-bound)"
    line = (f"- Predicted crossover (intensity(T) = P_peak/beta_hbm for this projection, solved "
            f"by the derivation layer): **T = {cross}**")
    if m.calibrated:
        c0 = s.crossover_uncalibrated
        line += f" (uncalibrated: T = {c0:.1f})" if c0 else " (uncalibrated: none)"
    return [line + "."]


def _regimes(points: Sequence[Point], m: Machine) -> list[str]:
    out = []
    for regime in ("memory", "compute"):
        sel = [p for p in points if _bound(p, m) == regime]
        if sel:
            ratios = sorted(p.ratio for p in sel)
            out.append(f"- {regime}-bound points (T = {sel[0].T}…{sel[-1].T}): measured/predicted "
                       f"{ratios[0]:.2f}–{ratios[-1]:.2f}, median error "
                       f"{median_abs_error(sel):.0%}.")
    misses = [p for p in points if p.error > 0.25]
    if misses:
        out.append("- Points off by more than 25%: " + ", ".join(
            f"T={p.T} (×{p.ratio:.2f})" for p in misses) + ".")
    return out


def markdown(v: Validation, figure: str | None = "validation.png", level: int = 1,
             gpu_figure: str | None = "validation-gpu.png") -> str:
    """``validation.md``: the setup, the tables, the summary against the targets; the GPU's run,
    if any, as a section of its own (its figure ``gpu_figure``)."""
    h = "#" * level
    m, s = v.machine, v.projection
    km, kp = s.knee, s.knee_predicted
    knee_ratio = (km.knee / s.crossover) if km and s.crossover else None
    lines = [
        f"{h} Validation on {m.name}", "",
        "Generated by `roofline validate`. Prediction per point: "
        "t = t_call·calls + max(F/P_peak, Q/beta_hbm), F and Q from the project's exact "
        f"derivations with {m.dtype} (b_w = b_a = {element_bytes(m.dtype)} bytes) substituted; "
        "the no-overlap bound t_call·calls + F/P_peak + Q/beta_hbm is shown beside it.", "",
        f"- hardware file: `{m.hardware_path}`",
        *_calibration_lines(m),
        f"- per-call overhead t_call (measured, explicit term): {_s(m.t_call)}",
        *([f"- load average before / after the run: {m.load[0]} / {m.load[1]} (other work on "
           "the machine slows the measured times)"] if any(m.load) else []),
        "", f"{h}# Projection", "",
        f"X (T×{s.d_in}) @ W ({s.d_in}×{s.d_out}), {m.dtype}; {s.sizing}. "
        "Median of repeats after one warm-up call.", "",
        *_table(s.points, m), "",
        f"- **Median absolute error** |predicted/measured − 1| over T = "
        f"{s.points[0].T}…{s.points[-1].T}: **{s.mae:.1%}** (target ≤ 25%: "
        f"{'met' if s.mae <= 0.25 else 'missed'})"
        + (f"; uncalibrated (beta_hbm = memory.bandwidth): {s.mae_uncalibrated:.1%}."
           if m.calibrated else "."),
        *_crossover_lines(s, m),
        (f"- Measured knee (hinge fit t = max(a, b·T) in log–log on {_knee_domain(s)}; plateau "
         f"{_s(km.plateau)}, {_s(km.slope)} per token): **T = {km.knee:.1f}**") if km else
        f"- Measured knee: no fit (fewer than four points with T ≥ {KNEE_MIN_T})",
    ]
    if knee_ratio is not None:
        lines.append(f"- Knee / crossover = {knee_ratio:.2f} (target within a factor of 2: "
                     f"{'met' if 0.5 <= knee_ratio <= 2 else 'missed'}).")
    if kp:
        lines.append(f"- The same hinge fit on the predicted times gives T = {kp.knee:.1f} "
                     "(a check of the fitting method against the exact crossover).")
    lines += _regimes(s.points, m)
    if v.attention:
        lines += ["", f"{h}# Attention (causal)", "", v.attention.note, ""]
        for mode, points in v.attention.forms.items():
            lines += [f"{h}## {mode}", "", *_table(points, m), "",
                      f"- median absolute error: {median_abs_error(points):.0%}", ""]
    if level == 1:
        lines += ["", "## Where the model misses, and why", "", *_why(v), ""]
    if v.gpu is not None or v.gpu_skipped:
        lines += ["", f"{h}# GPU", ""]
        if v.gpu is None:
            lines.append(f"GPU part skipped: {v.gpu_skipped}")
        else:
            lines.append(markdown(v.gpu, gpu_figure, level + 1, None))
        lines.append("")
    if figure:
        lines += [f"![measured against predicted]({figure})", ""]
    return "\n".join(lines)


def _why(v: Validation) -> list[str]:
    """The misses, in words, with the T = 1 ratio of this run."""
    m = v.machine
    one = next((p for p in v.projection.points if p.T == 1), None)
    first = ("- Small T (memory-bound): the time is the weights' stream, W read once per call. "
             "OpenBLAS's GEMM packs W into cache-sized panels before its kernel runs, so a thin "
             "product reaches a fraction of the triad bandwidth; "
             + ("the prediction uses that fraction, measured by `roofline measure` on a "
                "different shape (the GEMM weight stream, X 8×d @ W d×4d; "
                "`efficiency.bandwidth`)." if m.calibrated else
                "this run's prediction uses `memory.bandwidth` alone (no "
                "`efficiency.bandwidth` below 1 in the hardware file), so it is optimistic "
                "there."))
    gemv = ("- T = 1: numpy's one-row product takes BLAS's matrix–vector (GEMV) path, which "
            "reads W without packing it and runs faster than the thin GEMM"
            + (" (the calibration note above gives both rates on the calibration shape)"
               if "GEMV" in m.calibration else "")
            + ". The model keeps one "
            "bandwidth for every T and does not special-case it: T = 1 is predicted slower "
            "than it runs" + (f" (measured/predicted {one.ratio:.2f} here)" if one else "")
            + f"; the measured knee is therefore fitted on T ≥ {KNEE_MIN_T} only.")
    return [first, gemv, _around_crossover, _large_t(m), _attention_why, _cache_why]


def _knee_domain(s: ProjectionSweep) -> str:
    """Which points the knee was fitted on, and why T = 1 is left out (if it was measured)."""
    pts = s.knee_points
    where = f"T = {pts[0].T}…{pts[-1].T}" if pts else f"T ≥ {KNEE_MIN_T}"
    if len(pts) == len(s.points):
        return where
    return (f"{where}; T = 1 is left out: it takes the matrix–vector (GEMV) path, which the "
            "model does not cover")


def _peak_shape(source: str) -> str | None:
    """``'2048³'`` from a source such as ``roofline measure: numpy matmul 2048^3 fp32, …``.

    >>> _peak_shape("roofline measure: numpy matmul 2048^3 fp32, median of 3"), _peak_shape("x")
    ('2048³', None)
    """
    import re

    found = re.search(r"matmul (\d+)\^3", source)
    return f"{found.group(1)}³" if found else None


def _large_t(m: Machine) -> str:
    """The compute-bound miss, quoting the shape P_peak was measured on."""
    shape = _peak_shape(m.peak_source)
    rate = (f"the rate of a square {shape} product (the hardware file's source: "
            f"\"{m.peak_source}\")" if shape else
            f"the hardware file's {m.dtype} peak"
            + (f" (its source: \"{m.peak_source}\")" if m.peak_source else ""))
    return (f"- Large T (compute-bound): P_peak is {rate}; a T×d by d×d product with T ≪ d "
            "packs and blocks differently and may run below it.")


_around_crossover = (
    "- Around the crossover: the roofline's max(F/P, Q/β) assumes perfect overlap of compute and "
    "traffic; a real kernel is slower there (up to the sum F/P + Q/β, a factor ≤ 2).")
_attention_why = (
    "- Attention: numpy's element-wise passes (scale, mask, max, exp, sum, divide) run on one "
    "core and cost more than their traffic (exp is not free, and the FLOP count leaves softmax "
    "out, as the FlashAttention-2 paper does); the naive schedule makes about ten passes over "
    "the T×T scores where Algorithm 0 counts four; the blocked form adds Python loop overhead "
    "(the t_call term counts it) and small, less efficient matrix products. Its β is the "
    "hardware file's one bandwidth (calibrated on a BLAS weight stream when the file has "
    "`efficiency.bandwidth`), not a rate measured on element-wise passes.")
_cache_why = (
    "- Cache: the machine's last-level cache is shared with other tenants on a virtual machine; "
    "the weights are sized ≥ 2× its size so that they stream from memory.")


def write_report(v: Validation, directory: str | Path) -> list[Path]:
    """Write ``validation.md`` and ``validation.png`` (and ``validation-gpu.png`` with a GPU
    part) into ``directory``, each atomically (:func:`roofline.output.write_atomic`; an
    operating-system error names ``output``); returns the paths written."""
    import io

    from ..plot.validate import figure as make_figure

    directory = Path(directory)
    written = []
    figures = [(v, "validation.png")]
    if v.gpu is not None:
        figures.append((v.gpu, "validation-gpu.png"))
    for val, name in figures:
        png = io.BytesIO()
        make_figure(val).savefig(png, format="png", dpi=110)
        written.append(write_atomic(directory / name, png.getvalue(), argument="output"))
    written.insert(0, write_atomic(directory / "validation.md", markdown(v), argument="output"))
    return written
