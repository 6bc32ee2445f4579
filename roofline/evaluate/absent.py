"""Why a crossover has no value, or what to note beside the one it has: where it lies past the
model's context, where its regime ends, and, where no root exists, the reason in words (the
weights alone exceed the memory, the intensity's limit below the ridge, a window that stops
the growth, the decodes alone over their objective)."""

from __future__ import annotations

import math
from typing import Any

from ..codegen import names
from .setting import Setting

__all__ = ["beyond", "ends_note", "never"]


def beyond(c: dict[str, Any], x: float, setting: Setting) -> str:
    """A note where a crossover in tokens lies past the model's context ("" within it)."""
    context = setting.model.max_position
    if c["unknown"] not in ("T", "T_ctx") or x <= context:
        return ""
    return f"beyond {setting.model.name}'s context of {context:,} tokens"


def ends_note(c: dict[str, Any], ends: float) -> str:
    """Where the regime that the crossover opens closes again (the second root)."""
    if c["kind"] == "intensity":
        return f"memory-bound again from {ends:,.0f} {c['unit']}"
    return f"the two sides are equal again at {ends:,.0f} {c['unit']}"


def never(c: dict[str, Any], vals: dict[str, Any], folding: Any,
           setting: Setting) -> str:
    x = c["unknown"]
    grows, other = folding.one(c["grows"]), folding.one(c["other"])
    window = _window_reason(c, vals)
    if c["kind"] == "memory":
        if grows(0) >= other(0):
            held = "one device's share of the weights" if setting.parallel else \
                "the weights alone"
            return (f"never fits: {held} ({grows(0) / 1e9:.4g} GB) exceed the device memory "
                    f"({other(0) / 1e9:.4g} GB)")
        if window:
            return (f"never: {window}, so the memory in use stops growing at "
                    f"{grows(1e15) / 1e9:.4g} GB: it always fits")
        return "never: it always fits"
    if c["kind"] == "hidden":  # one side ahead at every prompt length
        if grows(1e15) < other(1e15):
            return ("never: the communication takes longer than the compute at every prompt "
                    "length, so overlapped it is never hidden")
        return ("always: the compute takes longer than the communication at every prompt "
                "length, so overlapped it is always hidden")
    if c["kind"] == "deadline":
        return (f"never: a step with a chunk of one token takes {grows(1) * 1e3:.4g} ms, over "
                f"the TPOT objective of {other(1) * 1e3:.4g} ms")
    if c["kind"] == "overhead":
        return (f"never: the roofline time ({grows(1) * 1e3:.4g} ms at one token) already "
                f"exceeds the overhead ({other(1) * 1e3:.4g} ms)")
    if c["kind"] == "cache":
        if window:
            return f"never: {window}, so the working set stays within the cache"
        return "never: the working set stays within the cache"
    try:
        ratio = grows(1e15) / other(1e15)
    except ZeroDivisionError:
        ratio = math.inf
    if c["kind"] == "intensity":
        level = _binding_level(c, folding, 1e15)
        if level != "HBM":
            return (f"never: its {level} traffic binds: as {x} → ∞ it reaches "
                    f"{ratio * setting.peak / 1e12:,.4g} TFLOP/s, {ratio:.0%} of the peak")
        return (f"never: the intensity tends to {ratio * setting.ridge:.4g} FLOP/byte as "
                f"{x} → ∞, below the ridge {setting.ridge:.4g} FLOP/byte")
    if window:
        return f"never: {window}, and stays below (ratio {ratio:.3g} as {x} → ∞)"
    return f"never: the left side stays below the right (ratio {ratio:.3g} as {x} → ∞)"


_LEVEL_NAMES = (("beta_sram", "SRAM"), ("beta_l2", "L2"), ("beta_l3", "L3"), ("beta_hbm", "HBM"))


def _binding_level(c: dict[str, Any], folding: Any, at: float) -> str:
    """The memory level whose time is the largest where the unknown is ``at`` in the
    crossover's memory time (the Max over levels' bytes/bandwidth), by its name: "HBM" where
    there is no other."""
    for atom in c["atoms"]:
        args = atom["args"]
        used = [_names_of(a) for a in args]
        if atom["kind"] == "Max" and len(args) > 1 \
                and all(any(n.startswith("beta_") for n in u) for u in used):
            values = [float(folding.at(a, at)) for a in args]
            slowest = used[values.index(max(values))]
            return next(name for symbol, name in _LEVEL_NAMES if symbol in slowest)
    return "HBM"


def _window_reason(c: dict[str, Any], vals: dict[str, Any]) -> str:
    """Why a sliding window can remove a crossover, in words; "" without a window in it."""
    if "W" not in vals or "W" not in _names_of(c["grows"]):
        return ""
    w = vals["W"]
    if c["kind"] == "memory":
        return f"the sliding window keeps at most W = {w:,} tokens per windowed layer"
    return (f"beyond the sliding window W = {w:,} tokens a windowed layer's attention grows "
            "only as W·T, linearly like the projections")


def _names_of(form: Any) -> tuple[str, ...]:
    return names(form) if callable(form) else ()
