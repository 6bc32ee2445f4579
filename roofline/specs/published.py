"""Published measurements of forward attention: parse (tomllib) → validate → frozen records.

The shipped file is ``published/attention.toml`` (its header describes the fields and the FLOP
conventions of the sources). Each ``[[measurement]]`` is one figure a public source prints for
one kernel, device, data type and shape; :mod:`roofline.evaluate.published` holds it against
the roofline's bound for the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ._shipped import shipped_dir
from .files import parse_toml, read_text

__all__ = ["Measurement", "CONVENTIONS", "CONFIDENCE", "load_measurements", "read_measurements"]

# FLOP convention → FLOPs of one forward pass as the source counts them, given the shape.
CONVENTIONS = {
    # FlashAttention-2 (arXiv 2307.08691) §4.1 and FlashAttention-3 (arXiv 2407.08608) §4.1:
    # 4·seqlen²·head dimension·heads, halved with a causal mask
    "flashattention": lambda m: 4 * m.seq_len**2 * m.head_dim * m.heads * m.batch
    / (2 if m.causal else 1),
    # tritonbench's flash_attention operator: 4·batch·heads·seqlen²·head dimension, no mask
    "non-causal": lambda m: 4 * m.seq_len**2 * m.head_dim * m.heads * m.batch,
}
CONFIDENCE = ("high", "medium", "low")
_INTEGERS = ("head_dim", "seq_len", "batch", "heads", "kv_heads")
_STRINGS = ("kernel", "version", "device", "dtype", "convention", "source", "read", "confidence")
_KEYS = {*_INTEGERS, *_STRINGS, "causal", "tflops", "note"}


@dataclass(frozen=True)
class Measurement:
    """One published forward-attention throughput, with its shape and source."""

    kernel: str
    version: str
    device: str  # a shipped hardware file's name
    dtype: str
    head_dim: int
    seq_len: int
    batch: int
    heads: int  # query heads
    kv_heads: int
    causal: bool
    tflops: float  # as the source reports it, under ``convention``
    convention: str  # a key of CONVENTIONS
    source: str
    read: str
    confidence: str  # one of CONFIDENCE
    note: str = ""

    @property
    def flops(self) -> float:
        """The FLOPs of the pass as the source counts them."""
        return CONVENTIONS[self.convention](self)

    @property
    def time_s(self) -> float:
        """The measured time of the pass: its FLOPs under the source's convention over the
        reported FLOP/s."""
        return self.flops / (self.tflops * 1e12)


def read_measurements(path: str | Path) -> list[Measurement]:
    """The measurements of one file; a :class:`SpecError` naming the file, the entry and the
    rule for anything malformed."""
    path = Path(path)
    data = parse_toml(read_text(path, "measurements file"), str(path))
    extra = set(data) - {"measurement"}
    if extra:
        raise SpecError(f"{path}: {sorted(extra)[0]}", "unknown key; the file holds "
                        "[[measurement]] tables only")
    rows = data.get("measurement", [])
    if not isinstance(rows, list) or not rows:
        raise SpecError(f"{path}: measurement", "needs at least one [[measurement]] table")
    return [_measurement(row, f"{path}: measurement[{i}]") for i, row in enumerate(rows)]


def load_measurements() -> list[Measurement]:
    """The shipped measurements (``published/attention.toml``)."""
    return read_measurements(shipped_dir("published") / "attention.toml")


def _measurement(row: Mapping[str, Any], where: str) -> Measurement:
    if not isinstance(row, Mapping):
        raise SpecError(where, "must be a table")
    unknown = set(row) - _KEYS
    if unknown:
        raise SpecError(f"{where}.{sorted(unknown)[0]}", "unknown key")
    missing = sorted(_KEYS - {"note"} - set(row))
    if missing:
        raise SpecError(f"{where}.{missing[0]}", "missing required key")
    for key in _INTEGERS:
        v = row[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise SpecError(f"{where}.{key}", "must be a positive integer", v)
    for key in (*_STRINGS, "note"):
        if key in row and not (isinstance(row[key], str) and (row[key].strip() or key == "note")):
            raise SpecError(f"{where}.{key}", "must be a non-empty string", row[key])
    if not isinstance(row["causal"], bool):
        raise SpecError(f"{where}.causal", "must be true or false", row["causal"])
    tflops = row["tflops"]
    if isinstance(tflops, bool) or not isinstance(tflops, int | float) \
            or not 0 < tflops < 1e6:
        raise SpecError(f"{where}.tflops", "must be a number in (0, 10⁶) TFLOP/s", tflops)
    if row["convention"] not in CONVENTIONS:
        raise SpecError(f"{where}.convention", f"must be one of {', '.join(CONVENTIONS)}",
                        row["convention"])
    if row["confidence"] not in CONFIDENCE:
        raise SpecError(f"{where}.confidence", f"must be one of {', '.join(CONFIDENCE)}",
                        row["confidence"])
    if row["heads"] % row["kv_heads"]:
        raise SpecError(f"{where}.kv_heads", "must divide heads", row["kv_heads"])
    return Measurement(**{**row, "tflops": float(tflops)})
