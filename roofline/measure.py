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
  the LLC (a "GEMM weight stream", :mod:`roofline.calibrate`), written as the fraction
  ``[efficiency] bandwidth`` of the triad;
- each kernel is run after a warm-up, repeatedly; minimum, median and maximum are kept and the
  file's value is the median (its ``min``/``max`` the slowest and fastest run).

Cache sizes come from ``/sys/devices/system/cpu/cpu0/cache/index*/`` (fallback:
``os.sysconf("SC_LEVEL*_CACHE_SIZE")``). No hardware number is written in this module: every
size is derived from the cache and memory sizes read at run time. Writing the file (number
formats, TOML, the atomic write, the checks of the target and of the text) is
:mod:`roofline.hwfile`.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .hwfile import format_bytes, format_rate, toml_document

__all__ = ["Stats", "CacheLevel", "Plan", "Measurement", "summarize", "time_call",
           "cache_levels", "last_level_cache", "load_average", "per_core_cache", "memory_bytes", "provenance",
           "plan", "measure", "measure_matmul", "measure_stream", "Progress"]

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


# --- statistics and timing -------------------------------------------------------------------
@dataclass(frozen=True)
class Stats:
    """Minimum, median and maximum of repeated timings, in seconds."""

    min: float
    median: float
    max: float
    runs: int

    def rate(self, work: float) -> Stats:
        """``work`` per second: the median rate, the slowest rate as ``min``, fastest as ``max``.

        >>> Stats(1.0, 2.0, 4.0, 3).rate(8.0)
        Stats(min=2.0, median=4.0, max=8.0, runs=3)
        """
        return Stats(work / self.max, work / self.median, work / self.min, self.runs)


def summarize(times: Sequence[float]) -> Stats:
    """Min, median, max of ``times`` (at least one, each positive and finite).

    >>> summarize([3.0, 1.0, 2.0])
    Stats(min=1.0, median=2.0, max=3.0, runs=3)
    """
    if not times or not all(math.isfinite(t) and t > 0 for t in times):
        raise ValueError(f"timings must be positive and finite, got {list(times)!r}")
    return Stats(min(times), statistics.median(times), max(times), len(times))


def time_call(fn: Callable[[], Any], repeats: int, warmup: int = 1,
              budget_s: float | None = None) -> list[float]:
    """Wall times of ``fn()`` (``time.perf_counter``) after ``warmup`` untimed calls.

    With ``budget_s``, stops early once that much time was spent, but keeps at least three runs
    (or ``repeats``, if fewer)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    spent = 0.0
    for i in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        spent += times[-1]
        if budget_s is not None and spent > budget_s and i + 1 >= min(3, repeats):
            break
    return times


# --- what the system says about itself -------------------------------------------------------
@dataclass(frozen=True)
class CacheLevel:
    """One cache of cpu0: level, type (Data, Instruction, Unified), size in bytes, CPUs sharing it."""

    level: int
    type: str
    size: int
    shared_cpus: int
    source: str


def _parse_size(text: str) -> int:
    """sysfs sizes: ``48K``, ``2048K``, ``32M`` (binary multiples).

    >>> _parse_size("491520K") == 480 * 2**20
    True
    """
    text = text.strip()
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def _count_cpus(cpu_list: str) -> int:
    """CPUs in a sysfs list such as ``0-3,8``.

    >>> _count_cpus("0-3,8")
    5
    """
    n = 0
    for part in cpu_list.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            n += int(hi) - int(lo) + 1
        elif part:
            n += 1
    return n


def cache_levels(root: Path = SYSFS_CACHE) -> list[CacheLevel]:
    """The caches of cpu0 from sysfs; without sysfs, ``os.sysconf`` (glibc); else ``[]``."""
    out: list[CacheLevel] = []
    for index in sorted(root.glob("index*")):
        try:
            read = lambda name: (index / name).read_text().strip()  # noqa: E731
            shared = read("shared_cpu_list") if (index / "shared_cpu_list").exists() else "0"
            out.append(CacheLevel(int(read("level")), read("type"), _parse_size(read("size")),
                                  _count_cpus(shared), f"sysfs cpu0/cache/{index.name}"))
        except (OSError, ValueError):
            continue
    if out:
        return out
    for level, kind, key in ((1, "Data", "SC_LEVEL1_DCACHE_SIZE"), (2, "Unified", "SC_LEVEL2_CACHE_SIZE"),
                             (3, "Unified", "SC_LEVEL3_CACHE_SIZE")):
        try:
            size = os.sysconf(key)
        except (ValueError, OSError, AttributeError):
            continue
        if size and size > 0:
            out.append(CacheLevel(level, kind, int(size), 0, f"os.sysconf({key})"))
    return out


def last_level_cache(levels: Iterable[CacheLevel]) -> CacheLevel | None:
    """The highest-level data or unified cache."""
    usable = [c for c in levels if c.type != "Instruction"]
    return max(usable, key=lambda c: (c.level, c.size)) if usable else None


def per_core_cache(levels: Iterable[CacheLevel]) -> CacheLevel | None:
    """The largest data/unified cache private to one core (shared by ≤ 1 CPU), e.g. L2."""
    private = [c for c in levels if c.type != "Instruction" and c.shared_cpus <= 1]
    return max(private, key=lambda c: c.size) if private else None


def memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes from ``/proc/meminfo``; None where unknown."""
    values: dict[str, int] = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                values[key] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return values.get("MemTotal"), values.get("MemAvailable")


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (other work on the machine skews a measurement)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"
    except OSError:
        return ""


def _cpuinfo() -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            out.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return out


def _openblas() -> tuple[str | None, int | None]:
    """(core name, threads) of the OpenBLAS numpy loaded, via ctypes; (None, None) if unknown."""
    import ctypes

    import numpy as np

    base = Path(np.__file__).parent
    for lib in [*base.parent.glob("numpy.libs/*openblas*"), *base.glob(".dylibs/*openblas*")]:
        try:
            handle = ctypes.CDLL(str(lib))
        except OSError:
            continue
        core = threads = None
        for prefix, suffix in (("scipy_openblas_", "64_"), ("scipy_openblas_", ""),
                               ("openblas_", "64_"), ("openblas_", "")):
            fn = getattr(handle, f"{prefix}get_corename{suffix}", None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                core = fn().decode()
                nt = getattr(handle, f"{prefix}get_num_threads{suffix}", None)
                if nt is not None:
                    nt.restype = ctypes.c_int
                    threads = int(nt())
                return core, threads
    return None, None


def provenance() -> dict[str, str]:
    """CPU model, cores, numpy and its BLAS (name, version, kernel, threads), date: strings."""
    import numpy as np

    info = _cpuinfo()
    out = {
        "cpu": info.get("model name") or platform.processor() or platform.machine(),
        "cpu_vendor": info.get("vendor_id", ""),
        "cores": str(cores()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "load_average": load_average(),
    }
    blas = ""
    try:
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = " ".join(str(cfg.get(k, "")) for k in ("name", "version")).strip()
        if cfg.get("openblas configuration"):
            out["blas_build"] = str(cfg["openblas configuration"])
    except Exception:  # noqa: BLE001 - older numpy: no dict form of the configuration
        pass
    threads: str | None = None
    try:
        import threadpoolctl  # optional

        pools = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            blas = blas or f"{pools[0].get('internal_api')} {pools[0].get('version')}"
            out["blas_kernel"] = str(pools[0].get("architecture", ""))
            threads = str(pools[0].get("num_threads"))
    except ImportError:
        pass
    if "blas_kernel" not in out:
        try:
            core, n = _openblas()
        except Exception:  # noqa: BLE001 - best effort: the loaded library may not be OpenBLAS
            core, n = None, None
        if core:
            out["blas_kernel"] = core
        if n and threads is None:
            threads = str(n)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if threads is None and os.environ.get(var):
            threads = os.environ[var]
    out["blas"] = blas or "unknown"
    out["threads"] = threads or "unknown (no threadpoolctl, no OpenBLAS query)"
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var):
            out[f"env_{var}"] = os.environ[var]
    return {k: v for k, v in out.items() if v}


# --- progress --------------------------------------------------------------------------------
class Progress:
    """A text progress bar on stderr: ``[#####.....]  50%  triad 3/7``. No dependency.

    Drawn only on a terminal (``tty``: default ``stream.isatty()``); redirected to a file or a
    pipe it writes nothing, so a log does not get one very long line of carriage returns."""

    def __init__(self, total: int, enabled: bool = True, width: int = 30, stream: Any = None,
                 tty: bool | None = None):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.enabled = enabled and tty
        self._lock = threading.Lock()

    def step(self, label: str = "", n: int = 1) -> None:
        with self._lock:
            self.done = min(self.done + n, self.total)
            if self.enabled:
                filled = round(self.width * self.done / self.total)
                bar = "#" * filled + "." * (self.width - filled)
                pct = 100 * self.done / self.total
                self.stream.write(f"\r[{bar}] {pct:3.0f}%  {label:<40.40}")
                self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


# --- kernels ---------------------------------------------------------------------------------
def measure_matmul(dtype: str, n: int, repeats: int, progress: Progress | None = None,
                   rng_seed: int = 0) -> tuple[float, list[float]]:
    """(FLOPs = 2·n³, wall times) of ``a @ b`` for n×n arrays of ``dtype`` (numpy's name)."""
    import numpy as np

    rng = np.random.default_rng(rng_seed)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype)

    def run() -> None:
        np.matmul(a, b, out=out)
        if progress:
            progress.step(f"matmul {dtype} {n}^3")

    return 2.0 * n**3, time_call(run, repeats)


def measure_stream(elements: int, repeats: int, chunk: int, threads: int,
                   progress: Progress | None = None) -> dict[str, tuple[float, list[float]]]:
    """``{"copy": (bytes, times), "triad": (bytes, times)}`` over fp64 arrays of ``elements``.

    Each of ``threads`` threads streams its contiguous part in chunks of ``chunk`` elements.
    Bytes counted the STREAM way: copy 16, triad 24 per element."""
    import numpy as np

    a, b, c = (np.empty(elements) for _ in range(3))
    for x, v in ((a, 0.0), (b, 1.0), (c, 2.0)):  # touch every page before timing
        x.fill(v)
    scalar = 3.0
    bounds = [elements * i // threads for i in range(threads + 1)]
    tmps = [np.empty(chunk) for _ in range(threads)]

    def copy_part(i: int) -> None:
        for s in range(bounds[i], bounds[i + 1], chunk):
            e = min(s + chunk, bounds[i + 1])
            np.copyto(a[s:e], b[s:e])

    def triad_part(i: int) -> None:
        tmp = tmps[i]
        for s in range(bounds[i], bounds[i + 1], chunk):
            e = min(s + chunk, bounds[i + 1])
            t = tmp[: e - s]
            np.multiply(c[s:e], scalar, out=t)
            np.add(b[s:e], t, out=a[s:e])

    def parallel(part: Callable[[int], None], label: str) -> Callable[[], None]:
        def run() -> None:
            workers = [threading.Thread(target=part, args=(i,)) for i in range(1, threads)]
            for w in workers:
                w.start()
            part(0)
            for w in workers:
                w.join()
            if progress:
                progress.step(label)
        return run

    out = {"copy": (16.0 * elements, time_call(parallel(copy_part, "stream copy"), repeats)),
           "triad": (24.0 * elements, time_call(parallel(triad_part, "stream triad"), repeats))}
    if not np.allclose(a[:: max(1, elements // 97)], 1.0 + scalar * 2.0):
        raise RuntimeError("stream triad computed a wrong result")
    return out


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
    from .calibrate import gemm_shape

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
@dataclass
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
            from .calibrate import GEMM_ROWS, Calibration

            cal = Calibration(p.gemm_d_in, p.gemm_d_out, GEMM_ROWS, self.gemm["gemm"],
                              self.gemm["gemv"], triad.median)
            where = (f"{4 * p.gemm_d_in * p.gemm_d_out / llc.size:.3g}× the L{llc.level}"
                     if llc else "last-level cache unknown")
            doc["efficiency"] = {"bandwidth": cal.entry(where)}
        return {**doc, "provenance": prov}

    def toml(self, name: str = "this-machine") -> str:
        return toml_document(self.document(name),
                             header="Written by `roofline measure`; format: hardware/README.md")


HALF_SKIPPED = ("numpy has no bfloat16 type and computes float16 products in a non-BLAS loop "
                "(not a native rate)")


def measure(quick: bool = False, progress_bar: bool = False, the_plan: Plan | None = None,
            dtypes: Sequence[str] = ("fp32", "fp64")) -> Measurement:
    """Run the kernels of ``the_plan`` (default: :func:`plan`) and collect the results."""
    from .calibrate import measure_gemm_stream

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
    return Measurement(p, flops, stream, levels, memory_bytes()[0], provenance(),
                       {"bf16, fp16": HALF_SKIPPED}, gemm)
