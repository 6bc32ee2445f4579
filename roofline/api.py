"""The public API: ``roofline.prefill(...)`` and ``roofline.crossovers(...)`` from names, paths or
loaded specs, returning results that print as tables (and as Markdown in Jupyter) and keep the
exact SymPy expressions they were evaluated from."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import evaluate
from .errors import InputError
from .evaluate import CrossoverValue, DecodeResult, PrefillPoint, Setting, arith
from .specs.hardware import Hardware, load_hardware
from .specs.model import ModelShape, load_model
from .tables import render, si

if TYPE_CHECKING:
    from sympy import Expr

__all__ = ["setting", "prefill", "crossovers", "PrefillTable", "CrossoverTable"]


def setting(hardware: str | Hardware, model: str | ModelShape, *, dtype: str = "bf16",
            weight_dtype: str | None = None, kv_dtype: str | None = None,
            attention: str | None = None, batch: int = 1) -> Setting:
    """A :class:`Setting` from names or paths (``"H100-SXM"``, ``"my/device.toml"``) or specs.

    ``attention=None`` is ``tiled`` on a device whose file gives its SRAM per SM, else ``ideal``
    (with a warning). A model whose weights do not fit in the device's memory is a warning.
    """
    hw = hardware if isinstance(hardware, Hardware) else load_hardware(hardware)
    mo = model if isinstance(model, ModelShape) else load_model(model)
    if attention is None:
        attention = "tiled" if hw.sram_per_sm is not None else "ideal"
        if hw.sram_per_sm is None:
            warnings.warn(f"{hw.name} gives no on-chip SRAM per SM, which tiled attention needs: "
                          "using ideal attention (pass --attention to choose)", stacklevel=2)
    s = Setting(hw, mo, dtype, weight_dtype, kv_dtype, attention, batch)
    weights = arith.value(s.forms["weights"], s.numbers())
    if weights > hw.memory_capacity:
        warnings.warn(f"{mo.name}'s weights ({weights / 1e9:.4g} GB in "
                      f"{s.precision['weights']}) do not fit in {hw.name}'s memory "
                      f"({hw.memory_capacity / 1e9:.4g} GB): the model assumes they do",
                      stacklevel=2)
    return s


@dataclass(frozen=True)
class PrefillTable:
    """Prefill at several prompt lengths, the decode step that follows, and the expressions."""

    setting: Setting
    points: list[PrefillPoint]
    decode: DecodeResult

    @property
    def expressions(self) -> dict[str, Expr]:
        """The whole prefill's FLOPs and bytes as exact expressions in T (the model's shape and
        precision substituted), and its time with the device's peaks substituted (floats)."""
        from .derive.bounds import total_time
        from .derive.transformer import prefill_operations, total_bytes, total_flops

        s = self.setting
        ops = prefill_operations(s.model.architecture, s.attention)
        return {"flops": evaluate.exact(total_flops(ops), s),
                "bytes": evaluate.exact(total_bytes(ops), s),
                "time": evaluate.exact(total_time(ops), s)}

    def as_dict(self) -> dict[str, Any]:
        s = self.setting
        return {
            "hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
            "precision": s.precision, "attention": s.attention, "batch": s.batch,
            "ridge_intensity": s.ridge,
            "results": [{"prompt_tokens": p.prompt_tokens, "time_s": p.time_s, "flops": p.flops,
                         "bytes": p.bytes, "intensity": p.intensity, "bound": p.bound,
                         "operations": [o._asdict() for o in p.operations]}
                        for p in self.points],
            "decode": self.decode.__dict__,
        }

    def rows(self) -> tuple[list[str], list[list[str]]]:
        head = ["prompt", "time", "FLOPs", "HBM bytes", "FLOP/byte", "bound", "attention share"]
        rows = []
        for p in self.points:
            attn = sum(o.time_s for o in p.operations if o.kind == "attention")
            rows.append([str(p.prompt_tokens), si(p.time_s, "s"), si(p.flops), si(p.bytes, "B"),
                         f"{p.intensity:.4g}", p.bound, f"{attn / p.time_s:.1%}"])
        return head, rows

    def _title(self) -> str:
        s = self.setting
        p = s.precision  # the weights' and KV cache's data types, where they differ
        dtypes = "".join(f", {what} {p[key]}" for key, what in
                         (("weights", "weights"), ("kv_cache", "KV cache")) if p[key] != s.dtype)
        return (f"Prefill of {s.model.name} on {s.hardware.name} ({s.dtype}{dtypes}, "
                f"{s.attention} attention, batch {s.batch}; ridge {s.ridge:.4g} FLOP/byte)")

    def _decode_line(self) -> str:
        d = self.decode
        return (f"Decode step at context {d.context_tokens:,}, batch {d.batch}: "
                f"{si(d.time_s, 's')}, {d.intensity:.3g} FLOP/byte ({d.bound}-bound); "
                f"KV cache {si(d.kv_cache_bytes, 'B')}")

    def __str__(self) -> str:
        return "\n".join([self._title(), "", render(*self.rows()), "", self._decode_line()])

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self._title()}**", "", render(*self.rows(), markdown=True), "",
                          self._decode_line()])


def prefill(hardware: str | Hardware, model: str | ModelShape, prompts: int | Sequence[int], *,
            context: int | None = None, **options: Any) -> PrefillTable:
    """Prefill time, FLOPs, bytes, intensity and bound at each prompt length, with the decode
    step at ``context`` cached tokens (default: the longest prompt) beside it."""
    if context is not None and context <= 0:
        raise InputError("context", "must be a positive integer", context)
    if isinstance(prompts, int):
        prompts = [prompts]
    s = setting(hardware, model, **options)
    points = evaluate.prefill(s, prompts)
    longest = max(p.prompt_tokens for p in points)
    if longest > s.model.max_position:
        warnings.warn(f"prompt: {longest} tokens is beyond {s.model.name}'s context of "
                      f"{s.model.max_position} tokens", stacklevel=2)
    return PrefillTable(s, points, evaluate.decode(s, context or longest))


@dataclass(frozen=True)
class CrossoverTable:
    """Every crossover of the catalogue for one setting: closed form and value."""

    setting: Setting
    values: dict[str, CrossoverValue]

    def as_dict(self) -> dict[str, Any]:
        s = self.setting
        return {
            "hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
            "precision": s.precision, "batch": s.batch, "ridge_intensity": s.ridge,
            "crossovers": {name: {"value": v.value, "unit": v.unit, "exists": v.exists,
                                  "reason": v.reason, "ends_at": v.ends_at,
                                  "expr": v.expr, "latex": v.latex,
                                  "meaning": v.meaning, "evaluated": v.evaluated,
                                  "simplified": v.simplified,
                                  "simplified_expr": v.simplified_expr}
                           for name, v in self.values.items()},
        }

    def rows(self) -> tuple[list[str], list[list[str]]]:
        rows = []
        for name, v in self.values.items():
            digits = 1 if v.exists and v.value < 1000 else 0  # a crossover is not an integer
            value = (f"{v.value:,.{digits}f} {v.unit}" if v.exists
                     else "never" if v.evaluated else "–")
            approx = "" if v.simplified is None or v.value is None else \
                f"{v.simplified:,.0f} ({v.simplified / v.value - 1:+.1%})"
            rows.append([name, value, approx, v.reason])
        return ["crossover", "value", "wide-layer form", "note"], rows

    @property
    def expressions(self) -> dict[str, Expr]:
        """The closed form of each crossover (of the branch that holds here), as SymPy: the
        branch re-derived by SymPy (the text is never parsed back)."""
        from .derive.crossovers import crossovers

        from sympy import sstr

        solved = crossovers(self.setting.model.architecture)
        out = {}
        for n, v in self.values.items():
            c = solved[n]
            out[n] = next((b.root for b in c.branches if sstr(b.root) == v.expr),
                          c.branches[0].root)
        return out

    def _title(self) -> str:
        s = self.setting
        p = s.precision  # the weights' and KV cache's data types, where they differ
        dtypes = "".join(f", {what} {p[key]}" for key, what in
                         (("weights", "weights"), ("kv_cache", "KV cache")) if p[key] != s.dtype)
        return (f"Crossovers of {s.model.name} on {s.hardware.name} ({s.dtype}{dtypes}, "
                f"batch {s.batch}; ridge {s.ridge:.4g} FLOP/byte)")

    def __str__(self) -> str:
        return "\n".join([self._title(), "", render(*self.rows(), left=(0, 3))])

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self._title()}**", "", render(*self.rows(), markdown=True)])


def crossovers(hardware: str | Hardware, model: str | ModelShape, **options: Any) -> CrossoverTable:
    """Every ``crossover.*`` of the catalogue evaluated for a device and model; with
    ``attention=MODE``, only the crossovers of that attention mode (and those of none)."""
    mode = options.get("attention")
    if mode is None:  # every mode is listed: no attention mode needs choosing
        options = {**options, "attention": "ideal"}
    s = setting(hardware, model, **options)
    values = evaluate.crossover_values(s)
    if mode is not None:
        values = {n: v for n, v in values.items()
                  if n.rpartition(".")[2] == mode or "." not in n}
    return CrossoverTable(s, values)


