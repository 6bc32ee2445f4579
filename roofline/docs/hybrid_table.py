"""The step table of ``derivations/hybrid.md``: each published engine step and chunked prefill
(``published/hybrid.toml``) against the roofline's bound of the same step
(:func:`roofline.serving.hybrid.step`, :func:`~roofline.serving.hybrid.chunked_prompt`), with how
tight the bound is and what the rows say about piggybacked decodes and the cost of chunking."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from .markdown import folded, md, table
from .throughput_table import BoundCheck

__all__ = ["HybridCheck", "hybrid_checks", "hybrid_table"]

_KINDS = {"decodes": "decodes alone", "chunk": "prefill alone", "hybrid": "chunk beside decodes",
          "chunked_prefill": "prompt in chunks"}


@dataclass(frozen=True)
class HybridCheck(BoundCheck):
    """An engine step (or a chunked prompt's steps) at the roofline against its published
    time."""

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
            bound = chunked_prompt(s, m.prompt, m.chunk, 0, 0).total_s
        else:
            bound = step(s, m.chunk, m.done, m.decodes, m.context).time_s
        out.append(HybridCheck(m, bound))
    return out


def _rows(checks: list[HybridCheck], **want: object) -> list[HybridCheck]:
    """The checks whose measurement has every attribute of ``want``."""
    return [c for c in checks if all(getattr(c.measurement, k) == v for k, v in want.items())]


def _span(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f} (one row)"
    return f"{min(values):.2f}–{max(values):.2f} (median {median(values):.2f}, {len(values)} rows)"


def _tightness(checks: list[HybridCheck]) -> str:
    """Bound over measured time by kind of step, the high-confidence rows; the others named."""
    sure = [c for c in checks if c.measurement.confidence == "high"]  # type: ignore[attr-defined]
    spans = "; ".join(f"{words} {_span([c.tightness for c in sure if c.kind == kind])}"
                      for kind, words in _KINDS.items() if any(c.kind == kind for c in sure))
    others = [f"{c.measurement.shape} {c.tightness:.2f}"  # type: ignore[attr-defined]
              for c in checks if c not in sure]
    return (f"Bound over measured time by kind of step, the rows of high confidence: {spans}."
            + (f" The rows of lower confidence (see their notes): {'; '.join(others)}."
               if others else ""))


def _piggyback(checks: list[HybridCheck]) -> list[str]:
    """Table 2: the chunk beside decodes against the prefill of as many rows, in both."""
    hybrid = _rows(checks, metric="step", chunk=1021, decodes=3)
    alone = _rows(checks, metric="step", chunk=1024, decodes=0)
    if not hybrid or not alone:
        return []
    h, a = hybrid[0], alone[0]
    measured = h.measurement.time_s / a.measurement.time_s  # type: ignore[attr-defined]
    times = sorted(c.measurement.time_ms for c in alone)  # type: ignore[attr-defined]
    spread = (f" The same 1,024-token prefill measures {times[0]:,.1f} and {times[-1]:,.1f} ms "
              "in two files of the artifact, so the measured difference is within their "
              "spread." if len(times) > 1 else "")
    return ["", f"Piggybacked decodes (Sarathi-Serve's Table 2): a step of 1,021 prompt tokens "
            f"beside 3 decodes takes {measured:.3f} times a 1,024-token prefill alone, measured, "
            f"and {h.bound_s / a.bound_s:.3f} times at the roofline. The two steps have the "
            "same 1,024 rows in their GEMMs; what the decodes add at the roofline is the read "
            "of their KV caches and the LM head for their logits (this step form charges no "
            "LM head for the chunk's own last token: a bound may leave work out, never add "
            f"it), {(h.bound_s - a.bound_s) * 1e3:.2f} ms of {h.bound_s * 1e3:,.1f}. Both say "
            f"that decodes beside a chunk of this size cost almost nothing.{spread}"]


def _chunking(checks: list[HybridCheck]) -> list[str]:
    """Figure 9a: each prompt in chunks against the same prompt in one chunk, in both."""
    rows = _rows(checks, metric="chunked_prefill")
    whole = {c.measurement.prompt: c for c in rows  # type: ignore[attr-defined]
             if c.measurement.chunk >= c.measurement.prompt}  # type: ignore[attr-defined]
    if len(whole) < 2:
        return []
    longest = max(whole)

    def ratios(size: int, prompts: list[int]) -> tuple[list[float], list[float]]:
        pairs = [(c, whole[c.measurement.prompt]) for c in rows  # type: ignore[attr-defined]
                 if c.measurement.chunk == size  # type: ignore[attr-defined]
                 and c.measurement.prompt in prompts]  # type: ignore[attr-defined]
        return ([c.measurement.time_s / w.measurement.time_s for c, w in pairs],  # type: ignore
                [c.bound_s / w.bound_s for c, w in pairs])
    shorter = sorted(p for p in whole if p != longest)
    sizes = sorted({c.measurement.chunk for c in rows  # type: ignore[attr-defined]
                    if c.measurement.chunk < c.measurement.prompt})  # type: ignore[attr-defined]
    parts, bounds, small = [], [], []
    for size in sizes:
        measured, bound = ratios(size, [p for p in shorter if p > size])
        bounds += bound + ratios(size, [longest])[1]
        if measured:
            parts.append(f"chunks of {size:,}: {min(measured):.2f}–{max(measured):.2f}")
        if size < 2048:
            small += measured
    at_longest = "; ".join(f"{size:,}: {ratios(size, [longest])[0][0]:.2f}" for size in sizes
                           if ratios(size, [longest])[0])
    step = _rows(checks, metric="step", chunk=longest + 1, decodes=0)
    reference = (f" (its one chunk takes {whole[longest].measurement.time_ms:,.1f} ms, "  # type: ignore
                 f"Figure 2's prefill of {longest + 1:,} tokens "
                 f"{step[0].measurement.time_ms:,.1f} ms)" if step else "")  # type: ignore
    return ["", f"The cost of chunking (Figure 9a), each prompt in chunks over the same prompt "
            f"in one chunk. Measured, for the prompts of {', '.join(f'{p:,}' for p in shorter)} "
            f"tokens: {'; '.join(parts)}; for {longest:,} tokens ({at_longest}) the ratios are "
            f"at most 1{reference}. At the roofline every one is "
            f"{min(bounds):.4f}–{max(bounds):.4f}: it charges chunking only what it moves, "
            "each chunk's read of the weights and of the KV cache of the chunks before it, "
            "little beside a compute-bound chunk of 512 tokens or more. The "
            f"{min(small) - 1:.0%}–{max(small) - 1:.0%} that chunks below 2,048 tokens cost the "
            "engine beyond one chunk is not traffic the roofline charges, so the bound does not "
            "see it; it holds for every row."]


def _decode_slope(checks: list[HybridCheck]) -> list[str]:
    """The decodes-alone rows of one context: time per added sequence, measured and bound."""
    rows = sorted(_rows(checks, metric="step", chunk=0), key=lambda c: c.measurement.decodes)  # type: ignore
    same = [c for c in rows if c.measurement.context == rows[-1].measurement.context] \
        if rows else []  # type: ignore[attr-defined]
    if len(same) < 3:
        return []
    a, b = same[0], same[-1]
    added = b.measurement.decodes - a.measurement.decodes  # type: ignore[attr-defined]
    measured = (b.measurement.time_s - a.measurement.time_s) / added  # type: ignore[attr-defined]
    bound = (b.bound_s - a.bound_s) / added
    return ["", f"Decodes alone (Figure 2): from {a.measurement.decodes:,} to "  # type: ignore
            f"{b.measurement.decodes:,} sequences at {a.measurement.context:,} tokens the "  # type: ignore
            f"engine's step grows by {measured * 1e3:.2f} ms a sequence and the bound's by "
            f"{bound * 1e3:.3f} ms (mostly the read of one sequence's KV cache, its share on "
            "one device). The bound of a decode step is the weights' read; the engine spends "
            "per sequence many times what the cache's bytes cost at the memory's bandwidth, so "
            "the bound is loosest where the batch is largest."]


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
               "operations fused (the engine's fused kernels: the more permissive bound) and the "
               "all-reduces after the GEMMs they reduce, as Sarathi-Serve runs them (an engine "
               "that overlaps them could beat this bound by up to their time); a prompt in "
               "chunks against the sum of its chunks' steps. "
               + (f"{len(beaten)} rows beat the bound" if beaten else "No row beats its bound")
               + f"; bound/measured runs from {low:.2f} to {high:.2f}."),
            "", _tightness(checks), *_piggyback(checks), *_chunking(checks),
            *_decode_slope(checks),
            *folded("The rows", table(head, rows))]
