"""Hardware files: parse (tomllib) → validate → a frozen :class:`Hardware`.

The format is described in ``hardware/README.md``. Every quantity is an inline table
``{ value = "3.35 TB/s", source = "..." }``; the loader rejects unknown keys at every level,
missing keys, values that are not positive finite numbers, unknown units, units of the wrong
dimension, values outside a plausible range (:data:`PLAUSIBLE`), unknown data types and two files
with one name. Names match exactly, never approximately.

The memory levels of ``[on_chip]`` (per-SM SRAM, L2, L3) are held to rules of their own
(:func:`roofline.specs.hardware_levels.check_levels`): a level's bandwidth needs the level, an L3 needs an L2, and no cache is
larger than the memory behind it (errors); a level slower than a level further from the compute
units is a :class:`UserWarning`, since a measured or unusual part may really be so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import InputError, SpecError, UnknownNameError
from ._shipped import shipped_files
from .dtypes import COMPUTE_DTYPES
from .files import check_printable, parse_toml, read_text, unique_names
from .hardware_levels import check_levels
from .units import check_number, check_range, parse_quantity

__all__ = ["Hardware", "KINDS", "PLAUSIBLE", "ESTIMATE_KEYS", "load_hardware", "list_hardware", "read_hardware"]

KINDS = ("gpu", "tpu", "accelerator", "cpu")
_TOP = {"name", "vendor", "kind", "notes", "peak_flops", "memory", "on_chip", "interconnect",
        "efficiency", "estimate", "provenance"}
_QUANTITY_KEYS = {"value", "source", "note", "min", "max"}
# section → key → the unit of its value ("count": a positive integer; "fraction": in (0, 1]).
_SECTIONS: dict[str, dict[str, str]] = {
    "peak_flops": {dtype: "FLOP/s" for dtype in COMPUTE_DTYPES},
    "memory": {"bandwidth": "bytes/s", "capacity": "bytes"},
    "on_chip": {"sram_per_sm": "bytes", "sram_bandwidth": "bytes/s", "sm_count": "count",
                "l2": "bytes", "l2_bandwidth": "bytes/s", "l3": "bytes", "l3_bandwidth": "bytes/s"},
    "interconnect": {"bandwidth": "bytes/s", "latency": "s", "directions": "count",
                     "devices_per_node": "count"},
    "efficiency": {"flops": "fraction", "bandwidth": "fraction"},
    # the estimate beside the bound (never the bound itself): roofline.evaluate.estimate
    "estimate": {"launch": "s", "host_step": "s", "gemm_tile_m": "count",
                 "gemm_tile_n": "count", "attention_tile": "count", "ctas_per_sm": "count",
                 "flops": "fraction", "bandwidth": "fraction"},
}
# every key of [estimate] is needed for an estimate: a device gives all of them or none
ESTIMATE_KEYS = tuple(_SECTIONS["estimate"])
_REQUIRED = {"memory": ("bandwidth", "capacity")}
# section.key (or section for all its keys) → (lowest, highest) plausible value in SI base units.
# Not figures of any device: bounds wide enough for any chip from a microcontroller-class CPU to
# a far-future accelerator, narrow enough that a typo of prefix or exponent is caught. They are
# documented in hardware/README.md ("Plausible ranges"); min and max are held to them too.
PLAUSIBLE: dict[str, tuple[float, float]] = {
    "peak_flops": (1e6, 1e20),  # FLOP/s: 1 MFLOP/s to 100 EFLOP/s
    "memory.bandwidth": (1e6, 1e16),  # bytes/s: 1 MB/s to 10 PB/s
    "memory.capacity": (1e6, 1e15),  # bytes: 1 MB to 1 PB
    "on_chip.sram_per_sm": (2**10, 2**30),  # bytes: 1 KiB to 1 GiB
    "on_chip.sm_count": (1, 10**6),  # SMs, compute units, cores
    "on_chip.l2": (2**10, 2**34),  # bytes: 1 KiB to 16 GiB
    "on_chip.l3": (2**10, 2**36),  # bytes: 1 KiB to 64 GiB
    # bytes/s, whole device: 1 MB/s to 1 EB/s (on-chip levels outrun any memory, 10 PB/s at most)
    "on_chip.sram_bandwidth": (1e6, 1e18),
    "on_chip.l2_bandwidth": (1e6, 1e18),
    "on_chip.l3_bandwidth": (1e6, 1e18),
    "interconnect.bandwidth": (1e6, 1e16),  # bytes/s
    "interconnect.latency": (1e-9, 1e-2),  # s per message: 1 ns to 10 ms
    "interconnect.directions": (1, 2),  # the bandwidth counts one direction, or both
    "interconnect.devices_per_node": (1, 10**6),  # devices the interconnect joins (a node, a pod)
    "estimate.launch": (1e-8, 1e-2),  # s per kernel: 10 ns to 10 ms
    "estimate.host_step": (1e-7, 1.0),  # s per engine step: 100 ns to 1 s
    "estimate.gemm_tile_m": (1, 4096),  # a tile's rows, columns: 1 to 4,096
    "estimate.gemm_tile_n": (1, 4096),
    "estimate.attention_tile": (1, 4096),
    "estimate.ctas_per_sm": (1, 64),  # thread blocks resident on one SM
}


def _frozen(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Hardware:
    """One device, every quantity in SI base units (FLOP/s, bytes/s, bytes)."""

    name: str
    path: Path
    vendor: str
    kind: str
    peak_flops: Mapping[str, float] = field(hash=False)  # dtype → dense FLOP/s
    memory_bandwidth: float  # bytes/s
    memory_capacity: float  # bytes
    sram_per_sm: float | None = None  # bytes: FlashAttention's M
    sm_count: int | None = None
    l2_bytes: float | None = None  # bytes
    # The memory levels between the SMs and the memory; None where the file gives none.
    sram_bandwidth: float | None = None  # bytes/s: shared memory / LDS / VMEM, whole device
    l2_bandwidth: float | None = None  # bytes/s: L2 -> SMs read, whole device
    l3_bytes: float | None = None  # bytes: a level beyond L2 (AMD's Infinity Cache)
    l3_bandwidth: float | None = None  # bytes/s: L3 -> L2 read, whole device
    interconnect_bandwidth: float | None = None  # bytes/s, as the vendor quotes it
    interconnect_latency: float | None = None  # s per message (one step of a collective)
    interconnect_directions: int = 1  # 2: the bandwidth figure counts both directions
    devices_per_node: int | None = None  # devices the interconnect joins; beyond: the network
    flops_efficiency: float = 1.0  # achievable fraction of peak FLOP/s
    bandwidth_efficiency: float = 1.0  # achievable fraction of peak bandwidth
    # [estimate]: key → value in SI units (ESTIMATE_KEYS), all of them or empty (no estimate)
    estimate: Mapping[str, float] = field(default_factory=_frozen, hash=False)
    # "memory.bandwidth" → the source text, for every quantity given
    sources: Mapping[str, str] = field(default_factory=_frozen, hash=False)
    notes: str = ""
    provenance: Mapping[str, str] = field(default_factory=_frozen, hash=False)
    quantity_notes: Mapping[str, str] = field(default_factory=_frozen, hash=False)
    ranges: Mapping[str, tuple[float | None, float | None]] = field(default_factory=_frozen,
                                                                    hash=False)

    def peak(self, dtype: str) -> float:
        """Achievable peak FLOP/s in ``dtype``: the dense peak × ``flops_efficiency``."""
        if dtype not in self.peak_flops:
            have = ", ".join(sorted(self.peak_flops))
            raise InputError("dtype", f"{self.name} has no {dtype}; it has: {have}", dtype)
        return self.peak_flops[dtype] * self.flops_efficiency

    def bandwidth(self) -> float:
        """Achievable memory bandwidth in bytes/s: the peak × ``bandwidth_efficiency``."""
        return self.memory_bandwidth * self.bandwidth_efficiency

    def link_bandwidth(self) -> float | None:
        """Interconnect bytes/s per device in one direction (``beta_link``): the quoted figure
        over the directions it counts; None without an interconnect."""
        if self.interconnect_bandwidth is None:
            return None
        return self.interconnect_bandwidth / self.interconnect_directions

    def link_latency(self) -> float:
        """Seconds per message (``alpha_link``); 0 where the file gives none (the time is then
        still a lower bound)."""
        return self.interconnect_latency or 0.0

    def ridge(self, dtype: str) -> float:
        """Ridge intensity in FLOP/byte: achievable peak FLOP/s over achievable bandwidth."""
        return self.peak(dtype) / self.bandwidth()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the path read, every quantity in SI base units, and its source."""
        return {
            "name": self.name, "path": str(self.path), "vendor": self.vendor, "kind": self.kind,
            "notes": self.notes,
            "peak_flops": {dtype: value for dtype, value in self.peak_flops.items()},
            "peak_flops_unit": "FLOP/s",
            "memory_bandwidth": self.memory_bandwidth, "memory_bandwidth_unit": "bytes/s",
            "memory_capacity": self.memory_capacity, "memory_capacity_unit": "bytes",
            "sram_per_sm": self.sram_per_sm, "sm_count": self.sm_count,
            "sram_bandwidth": self.sram_bandwidth,
            "l2_bytes": self.l2_bytes, "l2_bandwidth": self.l2_bandwidth,
            "l3_bytes": self.l3_bytes, "l3_bandwidth": self.l3_bandwidth,
            "interconnect_bandwidth": self.interconnect_bandwidth,
            "interconnect_latency": self.interconnect_latency,
            "interconnect_directions": self.interconnect_directions,
            "devices_per_node": self.devices_per_node,
            "flops_efficiency": self.flops_efficiency,
            "bandwidth_efficiency": self.bandwidth_efficiency,
            "estimate": dict(self.estimate),
            "sources": dict(self.sources), "quantity_notes": dict(self.quantity_notes),
            "ranges": {k: list(v) for k, v in self.ranges.items()},
            "provenance": dict(self.provenance),
        }


def read_hardware(path: str | Path) -> Hardware:
    """Parse and validate one hardware file."""
    path = Path(path)
    data = parse_toml(read_text(path, "hardware file"), str(path))
    return _validate(data, path)


def list_hardware(directory: str | Path | None = None) -> list[Hardware]:
    """Every hardware file in ``directory`` (default: the shipped ones), sorted by name.

    Two files with one name are a :class:`SpecError`."""
    files = (shipped_files("hardware", ".toml") if directory is None
             else sorted(Path(directory).glob("*.toml")))
    return unique_names(map(read_hardware, files))


def load_hardware(name_or_path: str | Path, directory: str | Path | None = None) -> Hardware:
    """A shipped device by its exact name, or a user's file: anything with a ``/`` or ending
    ``.toml`` is a path."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or "\\" in text or text.endswith(".toml"):
        return read_hardware(text)
    if directory is None:  # a shipped file is named after its device: read only that one
        by_name = {f.stem: f for f in shipped_files("hardware", ".toml")}
        if text not in by_name:
            raise UnknownNameError("hardware", text, by_name)
        return read_hardware(by_name[text])
    devices = {hw.name: hw for hw in list_hardware(directory)}
    if text not in devices:
        raise UnknownNameError("hardware", text, devices)
    return devices[text]


# --- validation ------------------------------------------------------------------------------
def _check_keys(table: Mapping[str, Any], allowed: set[str] | Mapping[str, Any], where: str,
                what: str) -> None:
    for key in table:
        if key not in allowed:
            valid = ", ".join(sorted(allowed))
            raise SpecError(f"{where}{key}", f"unknown {what}; allowed: {valid}", key)


def _string(data: Mapping[str, Any], key: str, where: str, required: bool = True,
            lines: bool = False) -> str:
    """A string of the file, printable (line breaks too where ``lines``: notes, sources)."""
    if key not in data:
        if required:
            raise SpecError(f"{where}: {key}", "missing required key")
        return ""
    value = data[key]
    if not isinstance(value, str) or (required and not value.strip()):
        raise SpecError(f"{where}: {key}", "must be a non-empty string", value)
    return check_printable(value, f"{where}: {key}", lines)


def _table(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, dict):
        raise SpecError(f"{where}: {key}", "must be a table", value)
    return value


def _quantity(entry: Any, unit: str, where: str,
              plausible: tuple[float, float]) -> tuple[float, str, str, tuple | None]:
    """(value in SI base units, source, note, (min, max) or None) of one quantity entry, each
    number within ``plausible``."""
    if not isinstance(entry, dict):
        raise SpecError(where, "must be an inline table { value = ..., source = \"...\" }", entry)
    _check_keys(entry, _QUANTITY_KEYS, f"{where}.", "key of a quantity")
    if "value" not in entry:
        raise SpecError(f"{where}.value", "missing required key")
    source = _string(entry, "source", where, lines=True)
    note = _string(entry, "note", where, required=False, lines=True)

    def number(raw: Any, key: str) -> float:
        at = f"{where}.{key}" if key != "value" else where
        if unit == "count":
            count = check_number(raw, at, integer=True)
            low, high = plausible
            if not low <= count <= high:
                raise SpecError(at, f"must be an integer in the plausible range "
                                f"[{low:,}, {high:,}]", count if count < 10**30 else
                                f"an integer of {len(str(count)):,} digits")
            return count
        if unit == "fraction":  # an achievable fraction of a peak: measured ones are 0.3-0.95
            fraction = float(check_number(raw, at, at_most_one=True))
            if fraction < _LEAST_FRACTION:
                raise SpecError(at, f"must be at least {_LEAST_FRACTION} (a plausible achievable "
                                "fraction of a peak)", fraction)
            return fraction
        return check_range(parse_quantity(raw, unit, at), *plausible, unit, at, raw)

    value = number(entry["value"], "value")
    bounds = None
    if "min" in entry or "max" in entry:
        low = number(entry["min"], "min") if "min" in entry else None
        high = number(entry["max"], "max") if "max" in entry else None
        if (low is not None and low > value) or (high is not None and high < value):
            raise SpecError(where, "min ≤ value ≤ max must hold",
                            {k: entry[k] for k in ("min", "value", "max") if k in entry})
        bounds = (low, high)
    return value, source, note, bounds


def _validate(data: Mapping[str, Any], path: Path) -> Hardware:
    file = str(path)
    _check_keys(data, _TOP, f"{file}: ", "top-level key")
    name = _string(data, "name", file)
    vendor = _string(data, "vendor", file)
    kind = _string(data, "kind", file)
    if kind not in KINDS:
        raise SpecError(f"{file}: kind", f"must be one of {', '.join(KINDS)}", kind)
    notes = _string(data, "notes", file, required=False, lines=True)

    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    quantity_notes: dict[str, str] = {}
    ranges: dict[str, tuple] = {}
    for section, units in _SECTIONS.items():
        table = _table(data, section, file)
        if table is None:
            if section in ("peak_flops", "memory"):
                raise SpecError(f"{file}: {section}", "missing required table")
            continue
        what = "data type" if section == "peak_flops" else f"key of [{section}]"
        _check_keys(table, units, f"{file}: {section}.", what)
        for key in _REQUIRED.get(section, ()):
            if key not in table:
                raise SpecError(f"{file}: {section}.{key}", "missing required key")
        if section == "peak_flops" and not table:
            raise SpecError(f"{file}: peak_flops",
                            f"needs at least one data type of: {', '.join(COMPUTE_DTYPES)}")
        for key, entry in table.items():
            dotted = f"{section}.{key}"
            plausible = PLAUSIBLE.get(dotted, PLAUSIBLE.get(section, (0.0, 1.0)))
            value, source, note, bounds = _quantity(entry, units[key], f"{file}: {dotted}",
                                                    plausible)
            values[dotted], sources[dotted] = value, source
            if note:
                quantity_notes[dotted] = note
            if bounds is not None:
                ranges[dotted] = bounds

    check_levels(values, data.get("on_chip") or {}, file)
    for key in ("latency", "directions", "devices_per_node"):
        if f"interconnect.{key}" in values and "interconnect.bandwidth" not in values:
            raise SpecError(f"{file}: interconnect.{key}",
                            "needs interconnect.bandwidth, the link it describes",
                            (data["interconnect"][key] or {}).get("value"))

    given = [k for k in ESTIMATE_KEYS if f"estimate.{k}" in values]
    if given and len(given) < len(ESTIMATE_KEYS):
        missing = ", ".join(k for k in ESTIMATE_KEYS if k not in given)
        raise SpecError(f"{file}: estimate", "gives all its keys or none (an estimate needs "
                        f"each); missing: {missing}", ", ".join(given))
    if given and "on_chip.sm_count" not in values:
        raise SpecError(f"{file}: estimate", "needs on_chip.sm_count (its waves run over the "
                        "SMs)", ", ".join(given))

    provenance = _table(data, "provenance", file) or {}
    for key, value in provenance.items():
        if not isinstance(value, str):
            raise SpecError(f"{file}: provenance.{key}", "must be a string", value)
        check_printable(value, f"{file}: provenance.{key}", lines=True)

    return Hardware(
        name=name, path=path, vendor=vendor, kind=kind,
        peak_flops=_frozen({k.split(".", 1)[1]: v for k, v in values.items()
                            if k.startswith("peak_flops.")}),
        memory_bandwidth=values["memory.bandwidth"],
        memory_capacity=values["memory.capacity"],
        sram_per_sm=values.get("on_chip.sram_per_sm"),
        sm_count=values.get("on_chip.sm_count"),
        l2_bytes=values.get("on_chip.l2"),
        sram_bandwidth=values.get("on_chip.sram_bandwidth"),
        l2_bandwidth=values.get("on_chip.l2_bandwidth"),
        l3_bytes=values.get("on_chip.l3"),
        l3_bandwidth=values.get("on_chip.l3_bandwidth"),
        interconnect_bandwidth=values.get("interconnect.bandwidth"),
        interconnect_latency=values.get("interconnect.latency"),
        interconnect_directions=int(values.get("interconnect.directions", 1)),
        devices_per_node=values.get("interconnect.devices_per_node"),
        flops_efficiency=values.get("efficiency.flops", 1.0),
        bandwidth_efficiency=values.get("efficiency.bandwidth", 1.0),
        estimate=_frozen({k: values[f"estimate.{k}"] for k in given}),
        sources=_frozen(sources), notes=notes, provenance=_frozen(provenance),
        quantity_notes=_frozen(quantity_notes), ranges=_frozen(ranges),
    )


_LEAST_FRACTION = 0.01  # below 1 % of a peak no published kernel runs: a typo or a unit slip
