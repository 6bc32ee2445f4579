"""Published GEMM timings (``published/gemm.toml``): parse (tomllib) → validate → frozen records.

Each ``[[measurement]]`` is one throughput a public source prints for one GEMM kernel, device,
data type and shape: C (m × n) = A (m × k) · B (k × n), counted as 2·m·n·k FLOPs. Rows marked
``use = "fit"`` are the large, well-shaped ones that set a device's achievable compute fraction
(``[estimate].flops`` of its hardware file); every other row (``"check"``) is only held against
the estimate. No row may beat the roofline bound of its GEMM (``tests/test_published_gemm.py``).
The format is described in ``published/README.md``; it is validated as
:mod:`roofline.specs.published` validates the other published files: unknown and missing keys,
non-positive numbers and values outside their lists are one-line :class:`SpecError` s naming the
file and the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ._shipped import shipped_dir
from .published import check_row, parsed_rows

__all__ = ["GemmMeasurement", "GEMM_DTYPES", "USES", "read_gemm_measurements",
           "load_gemm_measurements"]

GEMM_DTYPES = ("bf16", "fp16", "fp8")  # the compute data types a row may name
# "fit": a row an achievable fraction of the estimate is taken from; "check": held against it only
USES = ("fit", "check")
_INTEGERS = ("m", "n", "k")
_STRINGS = ("kernel", "version", "device", "dtype", "use", "source", "read", "confidence")
_KEYS = {*_INTEGERS, *_STRINGS, "tflops", "note"}


@dataclass(frozen=True)
class GemmMeasurement:
    """One published GEMM throughput, with its shape and source."""

    kernel: str
    version: str
    device: str  # a shipped hardware file's name
    dtype: str  # one of GEMM_DTYPES
    m: int  # rows (tokens)
    n: int  # output columns
    k: int  # reduction
    tflops: float  # as the source reports it, under 2·m·n·k FLOPs
    use: str  # one of USES
    source: str
    read: str
    confidence: str  # one of CONFIDENCE
    note: str = ""

    @property
    def flops(self) -> int:
        """2·m·n·k, the FLOPs the throughput is counted under."""
        return 2 * self.m * self.n * self.k

    @property
    def time_s(self) -> float:
        """The measured time of the GEMM: its FLOPs over the reported FLOP/s."""
        return self.flops / (self.tflops * 1e12)

    @property
    def input_bytes(self) -> int:
        """Bytes per element of A and B: 1 for fp8, 2 for bf16 and fp16."""
        return 1 if self.dtype == "fp8" else 2


def read_gemm_measurements(path: str | Path) -> list[GemmMeasurement]:
    """The GEMM measurements of one file; a :class:`SpecError` naming the file, the entry and
    the rule for anything malformed."""
    return parsed_rows(path, _gemm)


def load_gemm_measurements() -> list[GemmMeasurement]:
    """The shipped GEMM measurements (``published/gemm.toml``)."""
    return read_gemm_measurements(shipped_dir("published") / "gemm.toml")


def _gemm(row: Mapping[str, Any], where: str) -> GemmMeasurement:
    check_row(row, where, _KEYS, _INTEGERS, _STRINGS)
    tflops = row["tflops"]
    if isinstance(tflops, bool) or not isinstance(tflops, int | float) \
            or not 0 < tflops < 1e6:
        raise SpecError(f"{where}.tflops", "must be a number in (0, 10⁶) TFLOP/s", tflops)
    for key, allowed in (("dtype", GEMM_DTYPES), ("use", USES)):
        if row[key] not in allowed:
            raise SpecError(f"{where}.{key}", f"must be one of {', '.join(allowed)}", row[key])
    return GemmMeasurement(**{**row, "tflops": float(tflops)})
