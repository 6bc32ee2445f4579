"""The closing table of ``overhead.md``: the bound and the estimate against published
measurements.

Two sets of rows, kept apart. Whole models: every time to first token of
``published/parallel.toml`` on a device whose file gives an ``[estimate]``, held against the
prefill's bound and the estimate for the same setting (:func:`roofline.evaluate.published.
check_parallel`); none of the estimate's numbers was fitted to these rows (the device files'
``[estimate]`` values come from microbenchmarks and kernel tables, each with its source), so
all are rows the estimate is checked on. Kernels: every GEMM timing of ``published/gemm.toml``
(:func:`roofline.evaluate.published.check_gemm`), its ``use`` column saying which rows the
achievable FLOP fractions were read from (``fit``) and which only check them (``check``).
"""

from __future__ import annotations

from statistics import median
from typing import Any

from .markdown import folded, md, table
from .validation_table import parallel_checks

__all__ = ["estimate_table", "gemm_checks", "errors"]


def gemm_checks() -> list[Any]:
    """Every shipped GEMM timing against its bound and the estimate."""
    from ..evaluate.published import check_gemm
    from ..specs.hardware import load_hardware
    from ..specs.published_gemm import load_gemm_measurements

    devices: dict[str, Any] = {}
    return [check_gemm(m, devices.setdefault(m.device, load_hardware(m.device)))
            for m in load_gemm_measurements()]


def errors(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(median, worst) absolute relative error of estimates against measurements, from
    (estimate, measured) pairs."""
    e = [abs(est - meas) / meas for est, meas in pairs]
    return median(e), max(e)


def _summary(what: str, pairs: list[tuple[float, float]]) -> str:
    if not pairs:
        return f"{what}: no rows"
    mid, worst = errors(pairs)
    return f"{what} ({len(pairs)} rows): median {mid:.0%}, worst {worst:.0%}"


def estimate_table() -> list[str]:
    """Markdown lines: the summary, then both tables (folded)."""
    whole = parallel_checks()
    models = [c for c in whole if c.estimate_s is not None]
    kernels = gemm_checks()
    beaten = [c for c in whole if not c.holds] + [g for g in kernels
                                                   if g.measured_s < g.bound_s]
    model_pairs = [(c.estimate_s, c.measurement.time_s) for c in models]
    single = [(c.estimate_s, c.measurement.time_s) for c in models
              if c.measurement.tp * c.measurement.ep * c.measurement.pp == 1]
    fit = [(g.estimate_s, g.measured_s) for g in kernels
           if g.estimate_s is not None and g.measurement.use == "fit"]
    check = [(g.estimate_s, g.measured_s) for g in kernels
             if g.estimate_s is not None and g.measurement.use == "check"]
    lines = ["", '<a id="estimate-table"></a>', "",
             "## The bound and the estimate against published measurements", "",
             "The bound is the roofline: no measurement may beat it. The estimate adds what it "
             "leaves out (`roofline.evaluate.estimate`): tile and wave quantization of each GEMM "
             "and attention kernel, the device's achievable fractions of its peaks, a launch "
             "latency per kernel and one engine step's host overhead, each from the device "
             "file's `[estimate]` with its source. Its error is (estimate − measured) / measured.",
             "",
             f"- **Beaten by a measurement: {len(beaten)} of {len(whole) + len(kernels)}** "
             f"({len(whole)} whole-model times of `published/parallel.toml`, {len(kernels)} GEMM "
             "timings of `published/gemm.toml`).",
             f"- **The estimate's error on whole models, none fitted to:** "
             f"{_summary('every row with an estimate', model_pairs)}; "
             f"{_summary('one device', single)}.",
             f"- **On GEMMs:** {_summary('the rows the achievable fractions were read from', fit)};"
             f" {_summary('the rows only checked', check)}.", ""]
    head = ["engine", "device", "model", "dtype", "degrees", "B", "T", "metric", "measured",
            "bound", "estimate", "error"]
    body = [[md(f"{c.measurement.engine} {c.measurement.version}"), md(c.measurement.device),
             md(c.measurement.model), c.measurement.dtype, c.measurement.split,
             str(c.measurement.batch),
             f"{c.measurement.prompt_tokens:,}", md(c.measurement.metric),
             f"{c.measurement.time_ms:,g} ms",
             f"{c.bound_s * 1e3:,.2f} ms", f"{c.estimate_s * 1e3:,.2f} ms",
             f"{(c.estimate_s - c.measurement.time_s) / c.measurement.time_s:+.0%}"]
            for c in models]
    lines += folded(f"All {len(models)} whole-model times with an estimate", table(head, body))
    head = ["kernel", "device", "dtype", "m × n × k", "use", "measured", "bound", "shape",
            "estimate", "error"]
    body = [[md(f"{g.measurement.kernel} {g.measurement.version}"), md(g.measurement.device),
             g.measurement.dtype, f"{g.measurement.m} × {g.measurement.n} × {g.measurement.k}",
             g.measurement.use, f"{g.measured_s * 1e6:,.1f} µs", f"{g.bound_s * 1e6:,.1f} µs",
             f"{g.shape:.3f}", "–" if g.estimate_s is None else f"{g.estimate_s * 1e6:,.1f} µs",
             "–" if g.estimate_s is None else
             f"{(g.estimate_s - g.measured_s) / g.measured_s:+.0%}"] for g in kernels]
    lines += [""] + folded(f"All {len(kernels)} GEMM timings", table(head, body))
    lines += ["", "Shape: the GEMM's tile and wave efficiency on the device at the best of the "
              "library's tiles (`roofline.derive.shapes.library_efficiency`: the device file's "
              "B_m × B_n, B_m × B_n/2 and B_m/2 × B_n/2). A whole "
              "model's estimate of a mixture of experts inherits the bound's routing (each token "
              "to n_a experts; a repeated prompt's tokens on one route), which engines do not "
              "reach: those rows are the estimate's worst."]
    return lines
