"""Published engine steps of prefill beside decode (``published/hybrid.toml``): parse (tomllib) →
validate → frozen records.

Each ``[[measurement]]`` is one time a public source prints for one engine, device, model, data
type and tensor-parallel degree, of one of two kinds (``metric``):

- ``step``: one engine step holding a prefill chunk of ``chunk`` tokens, after ``done`` tokens
  of its prompt, beside ``decodes`` decode sequences at ``context`` cached tokens (a chunk of 0:
  the decodes alone; no decodes: the chunk alone). :func:`roofline.serving.hybrid.step` bounds it.
- ``chunked_prefill``: a prompt of ``prompt`` tokens prefilled in chunks of ``chunk``, one a
  step and nothing beside them: the sum of its steps, which
  :func:`roofline.serving.hybrid.chunked_prompt` bounds.

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

__all__ = ["HybridMeasurement", "read_hybrid_measurements", "load_hybrid_measurements"]

_STRINGS = ("engine", "version", "device", "model", "dtype", "metric", "source", "read",
            "confidence")
_KEYS = {*_STRINGS, "tp", "chunk", "done", "decodes", "context", "prompt", "time_ms", "note"}
# each metric's keys beyond the common ones: (required, optional)
_SHAPE = {"step": ({"chunk", "decodes"}, {"done", "context"}),
          "chunked_prefill": ({"prompt", "chunk"}, set())}


@dataclass(frozen=True)
class HybridMeasurement:
    """One published engine step (or chunked prefill), with its setting and source."""

    engine: str
    version: str
    device: str  # a shipped hardware file's name
    model: str  # a shipped model preset's name
    dtype: str
    tp: int
    metric: str  # step | chunked_prefill
    chunk: int  # the chunk's tokens (step: 0 where the decodes run alone)
    time_ms: float
    source: str
    read: str
    confidence: str
    done: int = 0  # tokens of the chunk's prompt before it
    decodes: int = 0
    context: int = 0  # the decodes' cached tokens
    prompt: int = 0  # chunked_prefill: the prompt's tokens
    note: str = ""

    @property
    def time_s(self) -> float:
        return self.time_ms / 1e3

    @property
    def shape(self) -> str:
        """The step or prompt in words, for a table's cell."""
        if self.metric == "chunked_prefill":
            return f"{self.prompt:,}-token prompt in chunks of {self.chunk:,}"
        parts = []
        if self.chunk:
            parts.append(f"chunk {self.chunk:,}" + (f" after {self.done:,}" if self.done else ""))
        if self.decodes:
            parts.append(f"{self.decodes:,} decode{'s' if self.decodes > 1 else ''} at "
                         f"{self.context:,}")
        return " + ".join(parts)


def read_hybrid_measurements(path: str | Path) -> list[HybridMeasurement]:
    """The measurements of one file; a :class:`SpecError` naming the file, the entry and the
    rule for anything malformed."""
    return parsed_rows(path, _row)


def load_hybrid_measurements() -> list[HybridMeasurement]:
    """The shipped hybrid-step measurements (``published/hybrid.toml``)."""
    return read_hybrid_measurements(shipped_dir("published") / "hybrid.toml")


def _row(row: Mapping[str, Any], where: str) -> HybridMeasurement:
    metric = row.get("metric") if isinstance(row, Mapping) else None
    if metric not in _SHAPE:
        raise SpecError(f"{where}.metric", f"must be one of {', '.join(_SHAPE)}", metric)
    required, optional = _SHAPE[metric]
    counts = ("chunk", "done", "decodes")  # zero or more: a step may lack a chunk or decodes
    check_row(row, where, {*_STRINGS, "tp", "time_ms", "note", *required, *optional},
              ("tp", "context", "prompt"), _STRINGS, frozenset(optional))
    for key in counts:
        v = row.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise SpecError(f"{where}.{key}", "must be an integer ≥ 0", v)
    if metric == "step":
        if row["chunk"] == 0 and row["decodes"] == 0:
            raise SpecError(f"{where}.chunk", "a step holds a chunk or decodes: give one of "
                            "chunk and decodes above 0", 0)
        if (row["decodes"] > 0) != ("context" in row):
            raise SpecError(f"{where}.context", "is the decodes' cached tokens: give it where "
                            "decodes is above 0, and only there", row.get("context"))
        if row["chunk"] == 0 and row.get("done", 0):
            raise SpecError(f"{where}.done", "places a chunk: give it with a chunk above 0",
                            row["done"])
    elif row["chunk"] == 0:
        raise SpecError(f"{where}.chunk", "a prompt is prefilled in chunks of at least one "
                        "token", 0)
    t = row["time_ms"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t < 1e9:
        raise SpecError(f"{where}.time_ms", "must be a number in (0, 10⁹) ms", t)
    if row["dtype"] not in COMPUTE_DTYPES:
        raise SpecError(f"{where}.dtype", f"must be one of {', '.join(COMPUTE_DTYPES)}",
                        row["dtype"])
    return HybridMeasurement(**{**row, "time_ms": float(t)})
