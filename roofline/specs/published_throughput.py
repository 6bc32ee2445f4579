"""Published throughput of whole requests (``published/throughput.toml``): parse (tomllib) →
validate → frozen records.

Each ``[[measurement]]`` is one output-token throughput a public source prints for one engine,
device, model, data type, batch, prompt length and output length. A static batch of B requests
generates B·output tokens in B·output/throughput seconds (:attr:`ThroughputMeasurement.time_s`),
which holds its prefill and every decode step; :mod:`roofline.serving.request` bounds that time.
The format is described in ``published/README.md``; malformed rows are one-line
:class:`SpecError` s naming the file and the entry, as :mod:`roofline.specs.published` makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ._shipped import shipped_dir
from .dtypes import COMPUTE_DTYPES
from .published import check_row, parsed_rows

__all__ = ["ThroughputMeasurement", "read_throughput_measurements",
           "load_throughput_measurements"]

_INTEGERS = ("batch", "prompt_tokens", "output_tokens")
_STRINGS = ("engine", "version", "device", "model", "dtype", "source", "read", "confidence")
_KEYS = {*_INTEGERS, *_STRINGS, "output_tokens_per_s", "note"}


@dataclass(frozen=True)
class ThroughputMeasurement:
    """One published throughput of a static batch of requests, with its setting and source."""

    engine: str
    version: str
    device: str  # a shipped hardware file's name
    model: str  # a shipped model preset's name
    dtype: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    output_tokens_per_s: float  # of one device
    source: str
    read: str
    confidence: str
    note: str = ""

    @property
    def time_s(self) -> float:
        """The batch's time: its B·output tokens over the throughput."""
        return self.batch * self.output_tokens / self.output_tokens_per_s


def read_throughput_measurements(path: str | Path) -> list[ThroughputMeasurement]:
    """The measurements of one file; a :class:`SpecError` naming the file, the entry and the
    rule for anything malformed."""
    return parsed_rows(path, _row)


def load_throughput_measurements() -> list[ThroughputMeasurement]:
    """The shipped throughput measurements (``published/throughput.toml``)."""
    return read_throughput_measurements(shipped_dir("published") / "throughput.toml")


def _row(row: Mapping[str, Any], where: str) -> ThroughputMeasurement:
    check_row(row, where, _KEYS, _INTEGERS, _STRINGS)
    rate = row["output_tokens_per_s"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < 1e9:
        raise SpecError(f"{where}.output_tokens_per_s", "must be a number in (0, 10⁹) tokens/s",
                        rate)
    if row["dtype"] not in COMPUTE_DTYPES:
        raise SpecError(f"{where}.dtype", f"must be one of {', '.join(COMPUTE_DTYPES)}",
                        row["dtype"])
    return ThroughputMeasurement(**{**row, "output_tokens_per_s": float(rate)})
