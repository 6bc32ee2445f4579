"""Network files: the link between nodes, parse (tomllib) → validate → a frozen :class:`Network`.

A collective whose devices span more than one node (a device file's
``interconnect.devices_per_node``) is timed at the network's α–β instead of the device's
interconnect (:mod:`roofline.evaluate.links`). The format is described in ``hardware/README.md``
("Networks between nodes"): top-level ``name``, ``vendor``, ``notes`` and a ``[link]`` table of
``bandwidth`` and ``latency`` (required) and ``directions`` (optional, 1 or 2), each an inline
table ``{ value = "50 GB/s", source = "..." }`` read by the hardware files' grammar and held to
their plausible ranges. Unknown keys, missing keys, bad units and two files of one name are one
:class:`SpecError` line each; names match exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import SpecError, UnknownNameError
from ._shipped import shipped_dir
from .files import parse_toml, read_text, unique_names
from .hardware import PLAUSIBLE, _check_keys, _quantity, _string

__all__ = ["Network", "read_network", "list_networks", "load_network", "FOLDER"]

FOLDER = "network"  # under the shipped hardware folder
_TOP = {"name", "vendor", "notes", "link"}
_LINK = {"bandwidth": "bytes/s", "latency": "s", "directions": "count"}


@dataclass(frozen=True)
class Network:
    """A network between nodes, in SI base units; ``bandwidth`` per device as quoted."""

    name: str
    path: Path
    vendor: str
    bandwidth: float  # bytes/s, per device (one port per device), as the file quotes it
    latency: float  # s per message (one step of a collective)
    directions: int = 1  # 2: the bandwidth figure counts both directions
    notes: str = ""
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}),
                                       hash=False, compare=False)

    def link_bandwidth(self) -> float:
        """Bytes/s per device in one direction (the β of a collective across nodes)."""
        return self.bandwidth / self.directions

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "vendor": self.vendor,
                "bandwidth": self.bandwidth, "bandwidth_unit": "bytes/s",
                "latency": self.latency, "latency_unit": "s", "directions": self.directions,
                "notes": self.notes, "sources": dict(self.sources)}


def read_network(path: str | Path) -> Network:
    """Parse and validate one network file."""
    path = Path(path)
    data = parse_toml(read_text(path, "network file"), str(path))
    file = str(path)
    _check_keys(data, _TOP, f"{file}: ", "top-level key")
    name, vendor = _string(data, "name", file), _string(data, "vendor", file)
    notes = _string(data, "notes", file, required=False, lines=True)
    link = data.get("link")
    if not isinstance(link, dict):
        raise SpecError(f"{file}: link", "missing required table" if link is None
                        else "must be a table", link)
    _check_keys(link, _LINK, f"{file}: link.", "key of [link]")
    values, sources = {}, {}
    for key in ("bandwidth", "latency"):
        if key not in link:
            raise SpecError(f"{file}: link.{key}", "missing required key")
    for key, entry in link.items():
        plausible = PLAUSIBLE[f"interconnect.{key}"]
        value, source, _, _ = _quantity(entry, _LINK[key], f"{file}: link.{key}", plausible)
        values[key], sources[f"link.{key}"] = value, source
    return Network(name, path, vendor, values["bandwidth"], values["latency"],
                   int(values.get("directions", 1)), notes, MappingProxyType(sources))


def _shipped_files() -> list[Path]:
    folder = shipped_dir("hardware") / FOLDER
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def list_networks(directory: str | Path | None = None) -> list[Network]:
    """Every network file in ``directory`` (default: the shipped ones), sorted by name; two
    files with one name are a :class:`SpecError`."""
    files = _shipped_files() if directory is None else sorted(Path(directory).glob("*.toml"))
    return unique_names(map(read_network, files))


def load_network(name_or_path: str | Path) -> Network:
    """A shipped network by its exact name (``hardware/network/<name>.toml``), or a user's file
    (anything with a ``/`` or ending ``.toml``)."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or "\\" in text or text.endswith(".toml"):
        return read_network(text)
    by_name = {f.stem: f for f in _shipped_files()}
    if text not in by_name:
        raise UnknownNameError("network", text, by_name)
    return read_network(by_name[text])
