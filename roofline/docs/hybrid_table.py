"""The step table of ``derivations/hybrid.md``: each published engine step and chunked prefill
(``published/hybrid.toml``) against the roofline's bound of the same step
(:func:`roofline.serving.hybrid.step`, :func:`~roofline.serving.hybrid.chunked_prompt`), with how
tight the bound is and what the rows say about piggybacked decodes and the cost of chunking."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from .markdown import folded, md, table

__all__ = ["HybridCheck", "hybrid_checks", "hybrid_table"]

_KINDS = {"decodes": "decodes alone", "chunk": "prefill alone", "hybrid": "chunk beside decodes",
          "chunked_prefill": "prompt in chunks"}


@dataclass(frozen=True)
class HybridCheck:
    measurement: object  # a HybridMeasurement
    bound_s: float  # the step (or the chunked prompt's steps) at the roofline

    @property
    def holds(self) -> bool:
        return self.bound_s <= self.measurement.time_s  # type: ignore[attr-defined]

    @property
    def tightness(self) -> float:
        """Bound over measured time: 1 where the engine reaches the roofline."""
        return self.bound_s / self.measurement.time_s  # type: ignore[attr-defined]

    @property
    def kind(self) -> str:
        m = self.measurement
        if m.metric == "chunked_prefill":  # type: ignore[attr-defined]
            return "chunked_prefill"
        if not m.chunk:  # type: ignore[attr-defined]
            return "decodes"
        return "hybrid" if m.decodes else "chunk"  # type: ignore[attr-defined]


def hybrid_checks() -> list[HybridCheck]:
    """Every shipped hybrid-step row against its bound: the engine's element-wise operations
    fused (its residual-add RMSNorm and SiLU-and-multiply kernels), the more permissive bound."""
    from ..api import setting
    from ..serving.hybrid import chunked_prompt, step
    from ..specs.published_hybrid import load_hybrid_measurements

    out = []
    for m in load_hybrid_measurements():
        s = setting(m.device, m.model, dtype=m.dtype, tp=m.tp, fusion="elementwise")
        if m.metric == "chunked_prefill":
            bound = chunked_prompt(s, m.prompt, m.chunk, 0, 1).total_s
        else:
            bound = step(s, m.chunk, m.done, m.decodes, m.context or 1).time_s
        out.append(HybridCheck(m, bound))
    return out


def _ratio(checks: list[HybridCheck], a: dict[str, int], b: dict[str, int]) -> tuple[float, float]:
    """Measured and bound time of the row matching ``a`` over the row matching ``b``."""
    def find(want: dict[str, int]) -> HybridCheck:
        return next(c for c in checks
                    if all(getattr(c.measurement, k) == v for k, v in want.items()))
    x, y = find(a), find(b)
    return (x.measurement.time_s / y.measurement.time_s,  # type: ignore[attr-defined]
            x.bound_s / y.bound_s)


def _span(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f} (one row)"
    return f"{min(values):.2f}–{max(values):.2f} (median {median(values):.2f}, {len(values)} rows)"


def _decode_slope(checks: list[HybridCheck]) -> list[str]:
    """The decodes-alone rows of one context: time per added sequence, measured and bound."""
    rows = sorted((c for c in checks if c.kind == "decodes"),
                  key=lambda c: c.measurement.decodes)  # type: ignore[attr-defined]
    same = [c for c in rows if c.measurement.context == rows[0].measurement.context] \
        if rows else []  # type: ignore[attr-defined]
    if len(same) < 3:
        return []
    a, b = same[0], same[-1]
    added = b.measurement.decodes - a.measurement.decodes  # type: ignore[attr-defined]
    measured = (b.measurement.time_s - a.measurement.time_s) / added  # type: ignore[attr-defined]
    bound = (b.bound_s - a.bound_s) / added
    return ["", (
        f"Decodes alone (Figure 2): from {a.measurement.decodes:,} to "  # type: ignore
        f"{b.measurement.decodes:,} sequences at {a.measurement.context:,} tokens "  # type: ignore
        f"the engine's step grows by {measured * 1e3:.2f} ms a sequence and the bound's by "
        f"{bound * 1e3:.3f} ms (one sequence's KV cache read, its share on one device): the "
        "bound of a decode step is the weights' read, and the engine spends per sequence many "
        "times what the cache's bytes cost at the memory's bandwidth, so the bound is loosest "
        "where the batch is largest.")]


def _findings(checks: list[HybridCheck]) -> list[str]:
    """What the rows say beyond the bound holding: each from the rows themselves."""
    lines = []
    by_kind = {k: [c.tightness for c in checks if c.kind == k] for k in _KINDS}
    spans = "; ".join(f"{_KINDS[k]} {_span(v)}" for k, v in by_kind.items() if v)
    lines.append((f"Bound over measured time by kind of step: {spans}."))
    try:
        hm, hb = _ratio(checks, {"chunk": 1021, "decodes": 3}, {"chunk": 1024, "decodes": 0})
        lines += ["", (
            f"Piggybacked decodes (Sarathi-Serve's Table 2): a step of 1,021 prompt tokens and 3 "
            f"decodes takes {hm:.4f} times the 1,024-token prefill alone, measured, and "
            f"{hb:.4f} times at the roofline: both say that decodes beside a chunk of this size "
            "cost almost nothing, since the chunk has already made the step compute-bound and "
            "the decodes add 3 rows to its GEMMs and a read of their KV caches.")]
    except StopIteration:
        pass
    chunked = [c for c in checks if c.kind == "chunked_prefill"]
    pairs = [(c, o) for c in chunked for o in chunked
             if c.measurement.prompt == o.measurement.prompt  # type: ignore[attr-defined]
             and c.measurement.chunk == 512  # type: ignore[attr-defined]
             and o.measurement.chunk >= o.measurement.prompt]  # type: ignore[attr-defined]
    if pairs:
        measured = [c.measurement.time_s / o.measurement.time_s  # type: ignore[attr-defined]
                    for c, o in pairs]
        bound = [c.bound_s / o.bound_s for c, o in pairs]
        lines += ["", (
            f"The cost of chunking (Figure 9a): a prompt in chunks of 512 takes "
            f"{min(measured):.3f}–{max(measured):.3f} times the prompt in one chunk, measured, "
            f"and {min(bound):.4f}–{max(bound):.4f} times at the roofline. The roofline charges "
            "chunking only what it moves: each chunk's read of the weights and of the KV cache "
            "of the chunks before it, little beside a compute-bound chunk of 512 tokens. What "
            "the engine loses beyond that (smaller GEMMs and attention over a paged cache "
            "running below their peak) is not traffic, so the bound does not see it: an "
            "estimate of it needs the achievable fractions of `roofline estimate`, not the "
            "roofline.")]
    return lines + _decode_slope(checks)


def hybrid_table() -> list[str]:
    """Markdown lines: what the rows show, then the table (folded)."""
    checks = hybrid_checks()
    beaten = [c for c in checks if not c.holds]
    low, high = min(c.tightness for c in checks), max(c.tightness for c in checks)
    rows = [[md(m.engine + " " + m.version), md(m.device), md(m.model), m.dtype, str(m.tp),
             _KINDS[c.kind], md(m.shape), f"{m.time_ms:,.1f}", f"{c.bound_s * 1e3:,.1f}",
             f"{c.tightness:.2f}", m.confidence]
            for c in checks for m in (c.measurement,)]
    head = ["engine", "device", "model", "dtype", "TP", "kind", "step", "measured ms", "bound ms",
            "bound/measured", "confidence"]
    return ["", '<a id="step-table"></a>', "", "## Engine steps against published measurements",
            "",
            (f"{len(checks)} published times of engine steps and chunked prefills "
               "(published/hybrid.toml, from Sarathi-Serve's artifact): each held against "
               "`roofline hybrid` at the same step and tensor-parallel degree, the element-wise "
               "operations fused (the engine's fused kernels: the more permissive bound); a "
               "prompt in chunks against the sum of its chunks' steps. "
               + (f"{len(beaten)} rows beat the bound" if beaten else "No row beats its bound")
               + f"; bound/measured runs from {low:.2f} to {high:.2f}."),
            "", *_findings(checks),
            *folded("The rows", table(head, rows))]
