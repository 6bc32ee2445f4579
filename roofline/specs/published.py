"""Published measurements: parse (tomllib) → validate → frozen records.

Two of the shipped files, each described by its header and by ``published/README.md`` (the
third, ``published/gemm.toml``, is :mod:`.published_gemm`'s):

- ``published/attention.toml``: forward attention. Each ``[[measurement]]`` is one figure a
  public source prints for one kernel, device, data type and shape (:class:`Measurement`).
- ``published/parallel.toml``: time to first token (or prefill) of a whole model on N devices
  in tensor parallel. Each ``[[measurement]]`` is one time a public source prints for one
  engine, device, model, data type, degree, batch and prompt length
  (:class:`ParallelMeasurement`).

:mod:`roofline.evaluate.published` holds each against the roofline's bound for the same setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import SpecError
from ._shipped import shipped_dir
from .dtypes import COMPUTE_DTYPES
from .files import parse_toml, read_text

_Row = TypeVar("_Row")  # what a file's parser makes of one row

__all__ = ["Measurement", "CONVENTIONS", "CONFIDENCE", "load_measurements", "read_measurements",
           "ParallelMeasurement", "METRICS", "TOKENS", "load_parallel_measurements",
           "read_parallel_measurements", "measurement_rows", "check_row"]

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


def measurement_rows(path: Path) -> list[Any]:
    """The ``[[measurement]]`` tables of one file, which must hold nothing else."""
    data = parse_toml(read_text(path, "measurements file"), str(path))
    extra = set(data) - {"measurement"}
    if extra:
        raise SpecError(f"{path}: {sorted(extra)[0]}", "unknown key; the file holds "
                        "[[measurement]] tables only")
    rows = data.get("measurement", [])
    if not isinstance(rows, list) or not rows:
        raise SpecError(f"{path}: measurement", "needs at least one [[measurement]] table")
    return rows


def parsed_rows(path: str | Path, parse: Callable[[Any, str], _Row]) -> list[_Row]:
    """Each ``[[measurement]]`` of the file at ``path`` through ``parse(row, where)``, ``where``
    naming the file and the entry for its one-line errors."""
    path = Path(path)
    return [parse(row, f"{path}: measurement[{i}]")
            for i, row in enumerate(measurement_rows(path))]


def check_row(row: Any, where: str, keys: set[str], integers: tuple[str, ...],
              strings: tuple[str, ...], optional: frozenset[str] = frozenset()) -> None:
    """A table with exactly ``keys`` (``note`` and ``optional`` may be left out), positive
    integers and non-empty strings (``note`` may be empty) where they belong."""
    if not isinstance(row, Mapping):
        raise SpecError(where, "must be a table")
    unknown = set(row) - keys
    if unknown:
        raise SpecError(f"{where}.{sorted(unknown)[0]}", "unknown key")
    missing = sorted(keys - {"note"} - optional - set(row))
    if missing:
        raise SpecError(f"{where}.{missing[0]}", "missing required key")
    for key in integers:
        if key not in row:
            continue
        v = row[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise SpecError(f"{where}.{key}", "must be a positive integer", v)
    for key in (*strings, "note"):
        if key in row and not (isinstance(row[key], str) and (row[key].strip() or key == "note")):
            raise SpecError(f"{where}.{key}", "must be a non-empty string", row[key])
    if row["confidence"] not in CONFIDENCE:
        raise SpecError(f"{where}.confidence", f"must be one of {', '.join(CONFIDENCE)}",
                        row["confidence"])


def read_measurements(path: str | Path) -> list[Measurement]:
    """The attention measurements of one file; a :class:`SpecError` naming the file, the entry
    and the rule for anything malformed."""
    return parsed_rows(path, _measurement)


def load_measurements() -> list[Measurement]:
    """The shipped measurements (``published/attention.toml``)."""
    return read_measurements(shipped_dir("published") / "attention.toml")


def _measurement(row: Mapping[str, Any], where: str) -> Measurement:
    check_row(row, where, _KEYS, _INTEGERS, _STRINGS)
    if not isinstance(row["causal"], bool):
        raise SpecError(f"{where}.causal", "must be true or false", row["causal"])
    tflops = row["tflops"]
    if isinstance(tflops, bool) or not isinstance(tflops, int | float) \
            or not 0 < tflops < 1e6:
        raise SpecError(f"{where}.tflops", "must be a number in (0, 10⁶) TFLOP/s", tflops)
    if row["convention"] not in CONVENTIONS:
        raise SpecError(f"{where}.convention", f"must be one of {', '.join(CONVENTIONS)}",
                        row["convention"])
    if row["heads"] % row["kv_heads"]:
        raise SpecError(f"{where}.kv_heads", "must divide heads", row["kv_heads"])
    return Measurement(**{**row, "tflops": float(tflops)})


# --- time to first token on N devices (published/parallel.toml) ------------------------------
# what a measured time covers: the first output token of a batch run alone (prefill, the first
# sampling and the host's overhead; no queueing), or the prefill's execution alone
METRICS = ("first_token", "prefill")
# what the prompt holds: one token id at every position (every token then takes the same route
# through a mixture of experts), distinct tokens, or not said
TOKENS = ("repeated", "varied", "unstated")
_P_INTEGERS = ("tp", "batch", "prompt_tokens", "ep", "pp")
_P_STRINGS = ("engine", "version", "device", "model", "dtype", "metric", "tokens", "source",
              "read", "confidence", "network")
_P_KEYS = {*_P_INTEGERS, *_P_STRINGS, "time_ms", "note"}
_P_OPTIONAL = frozenset({"ep", "pp", "network"})  # 1, 1 and none: inside one node
# the keys that name a setting: two rows alike in all of them are one measurement twice
_P_SETTING = ("engine", "version", "device", "model", "dtype", "tp", "ep", "pp", "network",
              "batch", "prompt_tokens", "metric", "tokens")


@dataclass(frozen=True)
class ParallelMeasurement:
    """One published time to first token (or prefill) of a model on ``tp`` devices in tensor
    parallel, with its setting and source."""

    engine: str
    version: str
    device: str  # a shipped hardware file's name
    model: str  # a shipped model preset's name
    dtype: str  # the compute data type (weights, activations and KV cache in it)
    tp: int  # tensor-parallel degree N_tp
    batch: int  # sequences prefilled together, B (each expert-parallel rank's own)
    prompt_tokens: int  # tokens per sequence, T
    time_ms: float  # as the source reports it (converted to ms where it gives seconds)
    metric: str  # one of METRICS
    tokens: str  # one of TOKENS
    source: str
    read: str
    confidence: str  # one of CONFIDENCE
    note: str = ""
    ep: int = 1  # expert-parallel degree N_ep
    pp: int = 1  # pipeline stages N_pp
    network: str = ""  # the network between nodes (hardware/network/) where they span several

    @property
    def time_s(self) -> float:
        """The measured time in seconds."""
        return self.time_ms / 1e3

    @property
    def split(self) -> str:
        """The degrees in words: "TP 8", "TP 8 × PP 2", "EP 32"."""
        parts = [f"{k} {n}" for k, n in (("TP", self.tp), ("PP", self.pp), ("EP", self.ep))
                 if n > 1 or k == "TP" and self.ep == 1]
        return " × ".join(parts)


def read_parallel_measurements(path: str | Path) -> list[ParallelMeasurement]:
    """The tensor-parallel measurements of one file; a :class:`SpecError` naming the file, the
    entry and the rule for anything malformed, or the two entries of one setting."""
    path = Path(path)
    out: list[ParallelMeasurement] = []
    seen: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(measurement_rows(path)):
        where = f"{path}: measurement[{i}]"
        m = _parallel(row, where)
        key = tuple(getattr(m, k) for k in _P_SETTING)
        if key in seen:
            raise SpecError(where, f"repeats the setting of measurement[{seen[key]}] "
                            f"({', '.join(_P_SETTING)})")
        seen[key] = i
        out.append(m)
    return out


def load_parallel_measurements() -> list[ParallelMeasurement]:
    """The shipped tensor-parallel measurements (``published/parallel.toml``)."""
    return read_parallel_measurements(shipped_dir("published") / "parallel.toml")


def _parallel(row: Mapping[str, Any], where: str) -> ParallelMeasurement:
    check_row(row, where, _P_KEYS, _P_INTEGERS, _P_STRINGS, _P_OPTIONAL)
    time_ms = row["time_ms"]
    if isinstance(time_ms, bool) or not isinstance(time_ms, int | float) \
            or not 0 < time_ms < 1e7:
        raise SpecError(f"{where}.time_ms", "must be a number of milliseconds in (0, 10⁷)",
                        time_ms)
    if row["dtype"] not in COMPUTE_DTYPES:
        raise SpecError(f"{where}.dtype", f"must be one of {', '.join(COMPUTE_DTYPES)}",
                        row["dtype"])
    if row["metric"] not in METRICS:
        raise SpecError(f"{where}.metric", f"must be one of {', '.join(METRICS)}",
                        row["metric"])
    if row["tokens"] not in TOKENS:
        raise SpecError(f"{where}.tokens", f"must be one of {', '.join(TOKENS)}", row["tokens"])
    return ParallelMeasurement(**{**row, "time_ms": float(time_ms)})
