"""Measure the machine this runs on, for a hardware file in the project's format.

What is measured (``roofline measure``):

- attainable FLOP/s of a large numpy matrix product (``n×n @ n×n``, 2·n³ FLOPs) in fp32 and fp64.
  Half precision is not measured: numpy has no bfloat16 type and computes float16 products in a
  non-BLAS loop, so neither would be a native rate (stated in the file's notes);
- memory bandwidth of two streaming kernels, on arrays far larger than the last-level cache (LLC),
  run by one thread per core (numpy releases the GIL inside its loops):
  ``copy`` (a = b, counted 16 bytes per element) and ``triad`` (a = b + s·c, 24 bytes per
  element), the STREAM conventions (McCalpin, STREAM benchmark): write-allocate traffic is not
  counted. The triad is computed in chunks that fit the per-core cache, so the intermediate s·c
  never goes to memory and the kernel moves exactly its three arrays;
- the achievable bandwidth of a BLAS product with few rows streaming a weight matrix larger than
  the LLC (a "GEMM weight stream", :mod:`.calibrate`), written as the fraction
  ``[efficiency] bandwidth`` of the triad;
- each kernel is run after a warm-up, repeatedly; minimum, median and maximum are kept and the
  file's value is the median (its ``min``/``max`` the slowest and fastest run).

No hardware number is written in this module: every size is derived from the cache and memory
sizes read at run time (:mod:`.system`). The kernels are :mod:`.kernels`, the GEMM weight stream
:mod:`.calibrate`; the file's number formats and TOML are :mod:`.hwfile`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .calibrate import GEMM_ROWS, Calibration, gemm_shape, measure_gemm_stream
from .hwfile import format_bytes, format_rate, toml_document
from .kernels import measure_matmul, measure_stream
from .system import (CacheLevel, cache_levels, cores, last_level_cache, memory_bytes,
                     per_core_cache, provenance)
from .timing import Progress, Stats, summarize

__all__ = ["Plan", "plan", "Measurement", "measure", "HALF_SKIPPED", "HEADER"]

HEADER = "Written by `roofline measure`; format: hardware/README.md"  # the file's first line


# --- the plan: sizes derived from this machine's caches and memory ------------------------------
@dataclass(frozen=True)
class Plan:
    """Sizes and repeats of one measurement."""

    matmul_n: int
    matmul_repeats: int
    stream_elements: int  # per array, fp64
    stream_repeats: int
    chunk: int  # elements per streaming chunk
    threads: int
    why: str  # how the stream size was chosen, in words
    gemm_d_in: int = 64  # GEMM weight stream: W is gemm_d_in × gemm_d_out fp32
    gemm_d_out: int = 256
    gemm_repeats: int = 2


def plan(quick: bool = False, levels: Sequence[CacheLevel] | None = None,
         available: int | None = None, n_threads: int | None = None) -> Plan:
    """Default: 4096³ matmuls ×5, stream arrays 4× the LLC ×10, GEMM weight stream (W ≥ 2× the
    LLC) ×10; quick: 2048³ ×3, 2× LLC ×3, GEMM weight stream ×3.

    Stream arrays are capped so the three fit in 40% of available memory.
    """
    levels = cache_levels() if levels is None else levels
    llc, private = last_level_cache(levels), per_core_cache(levels)
    if available is None:
        available = memory_bytes()[1] or 0
    factor = 2 if quick else 4
    if llc is not None:
        per_array = factor * llc.size
        why = f"each array {factor}x the last-level cache (L{llc.level}, {format_bytes(llc.size)})"
    else:
        per_array = available // 16 if available else 2**28
        why = "last-level cache size unknown: each array 1/16 of available memory"
    if available and 3 * per_array > 0.4 * available:
        per_array = int(0.4 * available / 3)
        why += f"; capped at 40% of available memory ({format_bytes(available)}) for three arrays"
    chunk = max(1024, (private.size // 4 if private else 2**18) // 8)
    d_in, d_out = gemm_shape(llc.size if llc else None, available)
    return Plan(matmul_n=2048 if quick else 4096, matmul_repeats=3 if quick else 5,
                stream_elements=max(per_array // 8, chunk), stream_repeats=3 if quick else 10,
                chunk=chunk, threads=n_threads or cores(), why=why, gemm_d_in=d_in,
                gemm_d_out=d_out, gemm_repeats=3 if quick else 10)


# --- the measurement -------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Measurement:
    """Everything one run measured, with the plan it followed."""

    plan: Plan
    flops: dict[str, Stats]  # dtype ("fp32", "fp64") → FLOP/s stats
    stream: dict[str, Stats]  # "copy", "triad" → bytes/s stats
    levels: list[CacheLevel]
    memory_total: int | None
    provenance: dict[str, str]
    skipped: dict[str, str] = field(default_factory=dict)  # what was not measured → why
    gemm: dict[str, Stats] = field(default_factory=dict)  # "gemm", "gemv" → bytes/s stats

    def document(self, name: str = "this-machine") -> dict[str, Any]:
        """The hardware file as a nested dict (see ``hardware/README.md``)."""
        p = self.plan
        peak = {}
        for dtype, s in self.flops.items():
            peak[dtype] = {
                "value": format_rate(s.median, "FLOP/s"),
                "source": f"roofline measure: numpy matmul {p.matmul_n}^3 {dtype}, "
                          f"median of {s.runs} after a warm-up",
                "min": format_rate(s.min, "FLOP/s"), "max": format_rate(s.max, "FLOP/s")}
        triad, copy = self.stream["triad"], self.stream["copy"]
        size = format_bytes(8 * p.stream_elements)
        memory: dict[str, Any] = {"bandwidth": {
            "value": format_rate(triad.median, "B/s"),
            "source": f"roofline measure: triad a = b + s*c, 3 fp64 arrays of {size}, "
                      f"{p.threads} threads, 24 bytes/element, median of {triad.runs}",
            "min": format_rate(triad.min, "B/s"), "max": format_rate(triad.max, "B/s"),
            "note": f"copy: {format_rate(copy.median, 'B/s')} median "
                    f"({format_rate(copy.min, 'B/s')} to {format_rate(copy.max, 'B/s')}), "
                    f"16 bytes/element; {p.why}"}}
        if self.memory_total:
            memory["capacity"] = {"value": format_bytes(self.memory_total),
                                  "source": "/proc/meminfo MemTotal"}
        else:
            raise RuntimeError("memory capacity unknown: /proc/meminfo has no MemTotal")
        on_chip: dict[str, Any] = {}
        private, llc = per_core_cache(self.levels), last_level_cache(self.levels)
        if private is not None:
            on_chip["sram_per_sm"] = {
                "value": format_bytes(private.size),
                "source": f"per-core L{private.level} from {private.source} (the on-chip level a "
                          "blocked attention tile lives in)"}
        on_chip["sm_count"] = {"value": int(self.provenance.get("cores", cores())),
                               "source": "os.sched_getaffinity (cores this process may use)"}
        if llc is not None:
            on_chip["l2"] = {"value": format_bytes(llc.size),
                             "source": f"{llc.source} (last level, L{llc.level}, shared by "
                                       f"{llc.shared_cpus or 'unknown'} CPUs)"}
        vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(
            self.provenance.get("cpu_vendor", ""), self.provenance.get("cpu_vendor") or "unknown")
        notes = "Measured by `roofline measure` on this machine."
        if self.skipped:
            notes += " Not measured: " + "; ".join(f"{k}: {v}" for k, v in self.skipped.items())
        prov = {k: v for k, v in self.provenance.items() if k != "cpu_vendor"}
        doc = {"name": name, "vendor": vendor, "kind": "cpu", "notes": notes,
               "peak_flops": peak, "memory": memory, "on_chip": on_chip}
        if self.gemm:
            cal = Calibration(p.gemm_d_in, p.gemm_d_out, GEMM_ROWS, self.gemm["gemm"],
                              self.gemm["gemv"], triad.median)
            where = (f"{4 * p.gemm_d_in * p.gemm_d_out / llc.size:.3g}× the L{llc.level}"
                     if llc else "last-level cache unknown")
            doc["efficiency"] = {"bandwidth": cal.entry(where)}
        return {**doc, "provenance": prov}

    def toml(self, name: str = "this-machine") -> str:
        """The hardware file's text (:meth:`document` as TOML)."""
        return toml_document(self.document(name), header=HEADER)


HALF_SKIPPED = ("numpy has no bfloat16 type and computes float16 products in a non-BLAS loop "
                "(not a native rate)")


def measure(quick: bool = False, progress_bar: bool = False, the_plan: Plan | None = None,
            dtypes: Sequence[str] = ("fp32", "fp64")) -> Measurement:
    """Run the kernels of ``the_plan`` (default: :func:`plan`) and collect the results."""
    levels = cache_levels()
    p = the_plan or plan(quick, levels)
    total = (len(dtypes) * (p.matmul_repeats + 1) + 2 * (p.stream_repeats + 1)
             + 2 * (p.gemm_repeats + 1))
    bar = Progress(total, enabled=progress_bar)
    names = {"fp32": "float32", "fp64": "float64"}
    flops: dict[str, Stats] = {}
    try:
        for dtype in dtypes:
            work, times = measure_matmul(names[dtype], p.matmul_n, p.matmul_repeats, bar)
            flops[dtype] = summarize(times).rate(work)
        stream = {k: summarize(times).rate(work) for k, (work, times)
                  in measure_stream(p.stream_elements, p.stream_repeats, p.chunk, p.threads,
                                    bar).items()}
        gemm = {k: summarize(times).rate(work) for k, (work, times)
                in measure_gemm_stream(p.gemm_d_in, p.gemm_d_out, p.gemm_repeats,
                                       progress=bar).items()}
    finally:
        bar.close()
    return Measurement(plan=p, flops=flops, stream=stream, levels=levels,
                       memory_total=memory_bytes()[0], provenance=provenance(),
                       skipped={"bf16, fp16": HALF_SKIPPED}, gemm=gemm)
