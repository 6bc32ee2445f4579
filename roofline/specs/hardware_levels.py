"""The rules between a device file's memory levels (hardware/README.md, "Memory levels"):
a level's bandwidth needs the level, an L3 needs an L2, no cache is larger than the memory behind
it (errors), and a level slower than one further from the compute units is a warning."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import SpecError
from ..tables import si

__all__ = ["check_levels"]


# --- memory levels ---------------------------------------------------------------------------
# Each level's bandwidth and the key of the level it belongs to.
_LEVEL_OF = {"sram_bandwidth": "sram_per_sm", "l2_bandwidth": "l2", "l3_bandwidth": "l3"}
# Bandwidths from the compute units outwards: each is expected to be at least every one after it.
_OUTWARDS = ("on_chip.sram_bandwidth", "on_chip.l2_bandwidth", "on_chip.l3_bandwidth",
             "memory.bandwidth")


def check_levels(values: Mapping[str, float], on_chip: Mapping[str, Any], file: str) -> None:
    """The rules between the memory levels (hardware/README.md, "Memory levels").

    Errors: a bandwidth without its level; an L3 without an L2; a cache larger than the memory
    capacity. Warnings: a level slower than one further from the compute units."""
    def raw(key: str) -> object:
        entry = on_chip.get(key)
        return entry.get("value") if isinstance(entry, dict) else entry

    for bandwidth, level in _LEVEL_OF.items():
        if f"on_chip.{bandwidth}" in values and f"on_chip.{level}" not in values:
            raise SpecError(f"{file}: on_chip.{bandwidth}",
                            f"needs on_chip.{level}, the level it is the bandwidth of",
                            raw(bandwidth))
    if "on_chip.l3" in values and "on_chip.l2" not in values:
        raise SpecError(f"{file}: on_chip.l3",
                        "needs on_chip.l2: levels are numbered from the compute units "
                        "outwards, so a device with one cache level gives it as l2", raw("l3"))
    sram, l2, l3 = (values.get(f"on_chip.{k}") for k in ("sram_per_sm", "l2", "l3"))
    if sram is not None and l2 is not None and sram > l2:
        raise SpecError(f"{file}: on_chip.sram_per_sm",
                        f"is larger than on_chip.l2 ({si(l2, 'B')}), the cache all the SMs "
                        "share; check the figure and its unit", raw("sram_per_sm"))
    if l2 is not None and l3 is not None and l3 < l2:
        raise SpecError(f"{file}: on_chip.l3",
                        f"is smaller than on_chip.l2 ({si(l2, 'B')}): a cache further from the "
                        "compute units holds more, not less", raw("l3"))
    capacity = values["memory.capacity"]
    for cache in ("l2", "l3"):
        size = values.get(f"on_chip.{cache}")
        if size is not None and size > capacity:
            raise SpecError(f"{file}: on_chip.{cache}",
                            f"is larger than memory.capacity ({si(capacity, 'B')}); a cache "
                            "holds a part of the memory behind it, never more", raw(cache))
    given = [key for key in _OUTWARDS if key in values]
    for i, inner in enumerate(given):
        for outer in given[i + 1:]:
            if values[inner] < values[outer]:
                warnings.warn(
                    f"{file}: {inner} ({si(values[inner], 'B/s')}) is below {outer} "
                    f"({si(values[outer], 'B/s')}): a level nearer the compute units is "
                    "expected to be at least as fast as the levels behind it; check the figure "
                    "and its unit", UserWarning, stacklevel=4)
