"""The validation table of ``derivations/hybrid.md``: each published request throughput
(``published/throughput.toml``) against the roofline's bound of the same batch
(:func:`roofline.serving.request.request`), with how tight the bound is."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .markdown import folded, md, table

__all__ = ["BoundCheck", "ThroughputCheck", "throughput_checks", "throughput_table"]


@dataclass(frozen=True)
class BoundCheck:
    """One published time against the roofline's bound of the same work."""

    measurement: object  # a record with a time_s
    bound_s: float

    @property
    def holds(self) -> bool:
        return self.bound_s <= self.measurement.time_s  # type: ignore[attr-defined]

    @property
    def tightness(self) -> float:
        """Bound over measured time: 1 where the engine reaches the roofline."""
        return self.bound_s / self.measurement.time_s  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ThroughputCheck(BoundCheck):
    """A batch's prefill and decode steps at the roofline against its published time."""

    fits: bool  # the batch's KV caches at the end fit beside the weights in the model


def throughput_checks() -> list[ThroughputCheck]:
    """Every shipped throughput row against its bound."""
    from ..api import setting
    from ..serving.request import request
    from ..specs.published_throughput import load_throughput_measurements

    out = []
    for m in load_throughput_measurements():
        with warnings.catch_warnings():  # a batch that outgrows the memory: said in the table
            warnings.simplefilter("ignore")
            # TensorRT-LLM folds the element-wise operations into its kernels: the bound with
            # them fused moves fewer bytes, the lower (more permissive) of the two
            s = setting(m.device, m.model, dtype=m.dtype, batch=m.batch, fusion="elementwise")
        r = request(s, m.prompt_tokens, m.output_tokens)
        out.append(ThroughputCheck(m, r.total_s, r.max_batch_at_end >= m.batch))
    return out


def throughput_table() -> list[str]:
    """Markdown lines: what the rows show, then the table (folded)."""
    checks = throughput_checks()
    beaten = [c for c in checks if not c.holds]
    low, high = min(c.tightness for c in checks), max(c.tightness for c in checks)
    rows = [[md(m.engine + " " + m.version), md(m.device), md(m.model), m.dtype,
             f"{m.batch:,}", f"{m.prompt_tokens:,}/{m.output_tokens:,}",
             f"{m.output_tokens_per_s:,.0f}", f"{m.time_s:.3g}", f"{c.bound_s:.3g}",
             f"{c.tightness:.2f}", "" if c.fits else "outgrows the memory in the model"]
            for c in checks for m in (c.measurement,)]
    head = ["engine", "device", "model", "dtype", "batch", "in/out", "tokens/s",
            "measured s", "bound s", "bound/measured", "note"]
    return ["", '<a id="validation-table"></a>', "", "## Requests end to end against published "
            "throughput", "",
            md(f"{len(checks)} rows of published output-token throughput at a stated batch "
               "(published/throughput.toml): a static batch of B requests generates B·output "
               "tokens in B·output/throughput seconds, its prefill and its decode steps; the "
               "bound is `roofline request` at the same batch, the element-wise operations "
               "fused (`--fusion elementwise`, as TensorRT-LLM runs them). "
               + (f"{len(beaten)} rows beat the bound" if beaten else
                  "No row beats its bound")
               + f"; bound/measured runs from {low:.2f} to {high:.2f}: the engine reaches "
               f"{low:.0%}–{high:.0%} of the roofline's throughput."),
            *folded("The rows", table(head, rows))]
