"""The closing table of ``levels.md``: every published attention measurement against the bound.

Each row is one measurement of ``published/attention.toml`` (:mod:`roofline.specs.published`)
held against the default attention mode's bound for the same device, data type and shape
(:mod:`roofline.evaluate.published`), and against the same schedule with every byte it moves
charged to HBM, as the FlashAttention papers count and the first release did.
"""

from __future__ import annotations

from statistics import median

from ..derive.architecture import DEFAULT_ATTENTION
from ..evaluate.published import Check, check
from ..specs.hardware import load_hardware
from ..specs.published import load_measurements
from .markdown import folded, md, table

__all__ = ["validation_table", "checks"]


def checks(mode: str = DEFAULT_ATTENTION) -> list[Check]:
    """Every shipped measurement against the bound of ``mode``."""
    devices = {}
    out = []
    for m in load_measurements():
        hw = devices.setdefault(m.device, load_hardware(m.device))
        out.append(check(m, hw, mode))
    return out


def validation_table() -> list[str]:
    """Markdown lines: the summary, then the table of every measurement (folded)."""
    rows = checks()
    fractions = [c.fraction for c in rows]
    beaten = [c for c in rows if not c.holds]
    uncached = [c for c in rows if not c.uncached_holds]
    kernels = sorted({c.measurement.kernel for c in rows})
    devices = sorted({c.measurement.device for c in rows})
    lines = ["", '<a id="validation-table"></a>', "",
             "## Published measurements against the bound", "",
             f"{len(rows)} published forward-attention measurements ({md(', '.join(kernels))}; "
             f"on {md(', '.join(devices))}), each held against the roofline time of the same "
             f"pass in the default `{DEFAULT_ATTENTION}` mode behind the device's caches: the "
             "exact FLOPs over the peak, and each memory level's bytes over its bandwidth. "
             "The measured time is the source's own FLOP count (its convention, in "
             "`published/attention.toml`) over the FLOP/s it reports; the bound is shown as "
             "FLOP/s in the same convention, so the two columns compare directly.", "",
             f"- **Beaten by a measurement: {len(beaten)} of {len(rows)}.** The measured "
             "throughput never exceeds the bound's.",
             f"- **How tight:** the measurements reach {min(fractions):.0%} to "
             f"{max(fractions):.0%} of the bound's throughput (median {median(fractions):.0%}).",
             f"- **The SRAM-only count** (the same schedule with every re-read charged to HBM, "
             f"no cache: the first release's default) is beaten by {len(uncached)} of "
             f"{len(rows)}: on these devices the L2 serves the K and V re-reads.", ""]
    head = ["kernel", "device", "dtype", "d", "T", "batch × heads (kv)", "causal",
            "measured TFLOP/s", "bound TFLOP/s", "measured / bound", "binds", "no-cache bound",
            "confidence"]
    body = []
    for c in sorted(rows, key=lambda c: (c.measurement.device, c.measurement.kernel,
                                         c.measurement.dtype, c.measurement.head_dim,
                                         c.measurement.causal, c.measurement.seq_len)):
        m = c.measurement
        bound = m.flops / c.bound_s / 1e12
        body.append([md(m.kernel), md(m.device), m.dtype, str(m.head_dim), f"{m.seq_len:,}",
                     f"{m.batch} × {m.heads} ({m.kv_heads})", "yes" if m.causal else "no",
                     f"{m.tflops:,.1f}", f"{bound:,.1f}", f"{c.fraction:.0%}", c.level,
                     "holds" if c.uncached_holds else "**beaten**", m.confidence])
    lines += folded(f"All {len(rows)} measurements, with their bounds", table(head, body))
    lines += ["", "Sources of the measurements, and how each was read, are in "
              "`published/attention.toml` beside each row."]
    return lines
