"""The closing table of ``crossovers.md``: selected crossovers of every model on every device."""

from __future__ import annotations

from collections.abc import Sequence

from ..derive.architecture import Architecture
from ..derive.crossovers import crossovers
from ..evaluate import CrossoverValue, Setting, crossover_value
from ..specs.hardware import Hardware
from ..specs.model import ModelShape
from ..symbols import M_sram
from ..tables import absent, count
from .markdown import md, table

__all__ = ["TABLE_COLUMNS", "crossover_table"]

# The crossovers of the closing table: (name, short heading, the regime beyond the value).
TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("projection_compute_bound_tokens", "projections compute-bound",
     "prompts longer than this keep one layer's projections compute-bound"),
    ("prefill_compute_bound_tokens.kernel", "prefill compute-bound (kernel)",
     "the whole prefill (the default kernel attention, behind the device's caches) is "
     "compute-bound from this length, up to the second value where one is shown"),
    ("attention_dominates_time_tokens.kernel", "attention time > projections (kernel)",
     "beyond this length attention takes longer than the projections"),
    ("attention_cache_spill_tokens.kernel", "K/V outgrow the cache (kernel)",
     "beyond this length the K and V the thread blocks in flight re-read no longer fit in the "
     "last-level cache, and part of the re-reads reach HBM"),
    ("naive_scores_exceed_memory_tokens", "naive scores exceed memory",
     "beyond this length one layer's materialised T×T scores no longer fit beside the weights "
     "and the KV cache: only fused attention runs"),
    ("kv_cache_exceeds_memory_tokens", "KV cache exceeds memory",
     "beyond this length the KV cache of one sequence no longer fits beside the weights"),
    ("decode_critical_batch", "decode critical batch",
     "a decode batch larger than this makes a decode step's projections compute-bound"),
)


def _value(s: Setting, name: str) -> CrossoverValue | None:
    """One column's crossover for the setting (None: not in its catalogue)."""
    return crossover_value(s, name) if name in s.crossover_forms else None


def crossover_table(hardware: Sequence[Hardware], models: Sequence[ModelShape]) -> list[str]:
    """Markdown lines: one table per model, a row per device and data type, batch 1. Only the
    table's columns are evaluated, with NumPy loaded: each crossover's grid at once
    (:func:`roofline.evaluate.roots.sign_changes`), not point by point."""
    import numpy  # noqa: F401  (loaded: the crossovers' grids are evaluated as arrays)

    dtypes = ("bf16", "fp8")
    lines = ["", '<a id="crossover-table"></a>', "",
             "## Every crossover on every shipped device", "",
             "Selected crossovers of every preset model on every shipped device, batch 1, in "
             "bf16 and, where the device has it, fp8 (weights, activations and KV cache in the "
             "compute type; peak FLOP/s and bandwidth as the hardware files give them). "
             "Values are prompt tokens, except the decode critical batch (sequences). "
             "Every crossover for one device and model: "
             "`roofline crossover --hardware DEVICE --model MODEL`.", "",
             "What each column implies:", ""]
    lines += [f"- [`{name}`](#{name}) ({md(short)}): {md(regime)}."
              for name, short, regime in TABLE_COLUMNS]
    lines += ["", "In the cells: *a–b*: the regime holds from *a* and ends at *b* (the equality "
              "holds again there); never: the regime is never reached; weights alone exceed "
              "memory: so they do on that device, whatever the prompt; –: not evaluated, "
              "because the hardware file gives no on-chip SRAM per SM (FlashAttention's M), "
              "which tiled attention needs, or (the cache column) no cache level with the SM "
              "count.", ""]
    needs_sram = {name for name, c in crossovers(Architecture(), ("l2",)).items()
                  if M_sram in c.equation.free_symbols}
    headers = ["device", "dtype", "ridge (FLOP/byte)",
               *(f"[{short}](#{name})" for name, short, _ in TABLE_COLUMNS)]
    for model in sorted(models, key=lambda m: m.name):
        rows = []
        for hw in sorted(hardware, key=lambda h: h.name):
            for dtype in dtypes:
                if dtype not in hw.peak_flops:
                    continue
                s = Setting(hw, model, dtype)
                rows.append([md(hw.name), dtype, f"{s.ridge:.4g}",
                             *(_cell(_value(s, name), name in needs_sram and hw.sram_per_sm is None)
                               for name, _, _ in TABLE_COLUMNS)])
        lines += ["", f"### {md(model.name)}", "",
                  f"{model.parameters / 1e9:.4g} B parameters; {_shape(model)}."]
        lines += table(headers, rows)
    return lines


def _cell(v: CrossoverValue | None, unevaluated: bool) -> str:
    if v is None:  # a cache crossover of a device whose file gives no cache level
        return "–"
    if v.exists:
        text = count(v.value, v.unit)
        return text if v.ends_at is None else f"{text}–{v.ends_at:,.0f}"
    return "–" if unevaluated else absent(v.reason, v.evaluated)


def _shape(model: ModelShape) -> str:
    parts = [f"D = {model.hidden_size:,}", f"F = {model.intermediate_size:,}",
             f"L = {model.num_layers}", f"n_q = {model.num_heads}",
             f"n_kv = {model.num_kv_heads}", f"H = {model.head_dim}"]
    if model.num_experts > 1:
        parts.append(f"{model.experts_per_token} of {model.num_experts} experts per token")
    return md(", ".join(parts))
