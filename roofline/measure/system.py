"""What the system says about itself: caches, memory, cores, load, CPU and BLAS provenance.

Cache sizes come from ``/sys/devices/system/cpu/cpu0/cache/index*/`` (fallback:
``os.sysconf("SC_LEVEL*_CACHE_SIZE")``), memory from ``/proc/meminfo``, the CPU from
``/proc/cpuinfo``, the BLAS from numpy's build configuration, threadpoolctl (optional) or an
OpenBLAS query through ctypes. Read at run time, never at import; numpy is imported where used.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CacheLevel", "cache_levels", "last_level_cache", "per_core_cache", "memory_bytes",
           "cores", "load_average", "provenance"]

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


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


def cpu_name() -> str:
    """This machine's CPU model, as ``roofline measure`` records it (``provenance.cpu``)."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def provenance() -> dict[str, str]:
    """CPU model, cores, numpy and its BLAS (name, version, kernel, threads), date: strings."""
    import numpy as np

    out = {
        "cpu": cpu_name(),
        "cpu_vendor": _cpuinfo().get("vendor_id", ""),
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
