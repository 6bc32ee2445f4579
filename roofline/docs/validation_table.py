"""The closing tables of ``levels.md`` and ``tensor_parallel.md``: published measurements
against the bound.

``levels.md``: each row is one measurement of ``published/attention.toml``
(:mod:`roofline.specs.published`) held against the default attention mode's bound for the same
device, data type and shape (:mod:`roofline.evaluate.published`), and against the same schedule
with every byte it moves charged to HBM, as the FlashAttention papers count and the first
release did.

``tensor_parallel.md``: each row is one time to first token (or prefill time) of
``published/parallel.toml`` held against the prefill the evaluation core gives for the same
device, model, data type, degrees, network, batch and prompt length, with the collectives after
the compute (the default) and hidden under it.
"""

from __future__ import annotations

import re

from statistics import median

from ..derive.architecture import DEFAULT_ATTENTION
from ..evaluate.published import Check, ParallelCheck, check, check_parallel
from ..specs.hardware import load_hardware
from ..specs.model import load_model
from ..specs.published import load_measurements, load_parallel_measurements
from .markdown import folded, md, table

__all__ = ["validation_table", "checks", "parallel_table", "parallel_checks"]


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


def parallel_checks() -> list[ParallelCheck]:
    """Every shipped time to first token on N devices against the prefill's bound."""
    devices, models = {}, {}
    out = []
    for m in load_parallel_measurements():
        hw = devices.setdefault(m.device, load_hardware(m.device))
        model = models.setdefault(m.model, load_model(m.model))
        out.append(check_parallel(m, hw, model))
    return out


def _range(ratios: list[float]) -> str:
    return f"{min(ratios):.2f} to {max(ratios):.2f} (median {median(ratios):.2f})"


def parallel_table() -> list[str]:
    """Markdown lines: the summary, then the table of every measurement (folded)."""
    rows = parallel_checks()
    ratios = [c.ratio for c in rows]
    beaten = [c for c in rows if not c.holds]
    overlapped = [c.measurement.time_s / c.overlapped_s for c in rows]
    engines = sorted({f"{c.measurement.engine} {c.measurement.version}" for c in rows})
    devices = sorted({c.measurement.device for c in rows})
    models = sorted({c.measurement.model for c in rows})
    splits = sorted({c.measurement.split for c in rows},
                    key=lambda t: [int(w) if w.isdigit() else w
                                   for w in re.findall(r"[A-Z]+|\d+", t)])
    by_degree = "; ".join(
        f"{n}: {_range([c.ratio for c in rows if c.measurement.split == n])}, "
        f"{sum(c.measurement.split == n for c in rows)} rows" for n in splits)
    routed = [c for c in rows if c.spread_s != c.bound_s]
    spread_beaten = [c for c in routed if c.measurement.time_s < c.spread_s]
    lines = ["", '<a id="validation-table"></a>', "",
             "## Published times to first token against the bound", "",
             f"{len(rows)} published times to first token and prefill times at "
             f"{', '.join(splits)} ({md(', '.join(engines))}; {md(', '.join(models))}; "
             f"on {md(', '.join(devices))}), each held against the prefill that "
             "`roofline.prefill(device, model, [T], dtype=..., batch=..., tp=..., ep=..., "
             "network=...)` gives for the same setting: one device's share of every operation, "
             "its collectives after the compute (the default: tensor parallelism's two ring "
             "all-reduces a layer, expert parallelism's dispatch and combine as DeepEP sends "
             "them, the logits gathered). A first token takes at least the prefill (it adds the "
             "first sampling and the host's overhead), so the bound must not exceed it. A "
             "throughput per node is converted to one device's prefill of its own batch: B·T "
             "tokens over the throughput per device. Sources, and how each number was read, are "
             "in `published/parallel.toml` beside each row.", "",
             f"- **Beaten by a measurement: {len(beaten)} of {len(rows)}.**",
             f"- **How tight:** measured / bound from {_range(ratios)}; by degree: "
             f"{by_degree}. With the collectives hidden under the compute (`--overlap`, the "
             f"more permissive bound): {_range(overlapped)}.",
             f"- **Mixture of experts:** {len(routed)} rows of "
             f"{md(', '.join(sorted({c.measurement.model for c in routed})))}: "
             f"{_held_as_one_route(routed)}. In each, a MoE layer is held at n\\_a experts' "
             "weights: the bound is that of the model with n\\_e = n\\_a. With every expert that may receive a token read (the "
             "model's count for a prompt of varied tokens) the bound is beaten by "
             f"{len(spread_beaten)} of them"
             + (": " + "; ".join(
                 f"{md(c.measurement.model)} on {md(c.measurement.device)}, "
                 f"{c.measurement.split}, T = {c.measurement.prompt_tokens}: "
                 f"{c.measurement.time_ms:g} ms measured, {c.spread_s * 1e3:.2f} ms bound"
                 for c in spread_beaten) if spread_beaten else "") + ".", ""]
    head = ["engine", "device", "model", "dtype", "degrees", "B", "T", "measured", "bound",
            "measured / bound", "communication", "binds", "overlapped bound", "every expert read",
            "confidence"]
    body = []
    for c in sorted(rows, key=lambda c: (c.measurement.engine, c.measurement.version,
                                         c.measurement.device, c.measurement.model,
                                         c.measurement.tp, c.measurement.ep,
                                         c.measurement.prompt_tokens)):
        m = c.measurement
        spread = "–" if c.spread_s == c.bound_s else (
            f"{c.spread_s * 1e3:,.2f} ms" + ("" if m.time_s >= c.spread_s else " **beaten**"))
        body.append([md(f"{m.engine} {m.version}"), md(m.device), md(m.model), m.dtype,
                     m.split, str(m.batch), f"{m.prompt_tokens:,}", f"{m.time_ms:,g} ms",
                     f"{c.bound_s * 1e3:,.2f} ms", f"{c.ratio:.2f}",
                     f"{c.communication_s / c.bound_s:.0%}", c.point.bound,
                     f"{c.overlapped_s * 1e3:,.2f} ms", spread, m.confidence])
    lines += folded(f"All {len(rows)} measurements, with their bounds", table(head, body))
    lines += ["", "Communication: the share of the bound spent in the collectives (the "
              "all-reduces, the all-to-alls, the logits' gather). Binds: whether the prefill's FLOPs over the peak or its bytes "
              "over the bandwidth are the larger."]
    return lines


def _held_as_one_route(routed: list) -> str:
    """Why the routed rows are held at n_a experts a layer: a prompt of one token id repeated
    (every token takes the same route), or one the source does not describe (the fewest experts
    any prompt reaches: the more permissive reading)."""
    repeated = sum(c.measurement.tokens == "repeated" for c in routed)
    unstated = len(routed) - repeated
    parts = ([f"{repeated} from a benchmark whose prompt is one token id repeated, so every "
              "token takes the same route"] if repeated else []) \
        + ([f"{unstated} whose source does not say what its prompt holds, held at the fewest "
            "experts any prompt reaches (the more permissive reading)"] if unstated else [])
    return "; ".join(parts)
