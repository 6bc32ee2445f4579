"""What :func:`roofline.prefill` and :func:`roofline.crossovers` return: results that print as
tables (and as Markdown in Jupyter), give their JSON form (``as_dict``, what ``--json``
prints) and keep the exact SymPy expressions they were evaluated from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import evaluate
from .evaluate import Setting
from .tables import absent, render, si

if TYPE_CHECKING:
    from sympy import Expr

    from .evaluate import CrossoverValue, DecodeResult, PrefillPoint

__all__ = ["PrefillTable", "CrossoverTable"]


@dataclass(frozen=True)
class PrefillTable:
    """Prefill at several prompt lengths, the decode step that follows, and the expressions."""

    setting: Setting
    points: Sequence[PrefillPoint]  # evaluate.PrefillPoints: with its columns (``time_s``...)
    decode: DecodeResult

    @property
    def expressions(self) -> dict[str, Expr]:
        """The whole prefill's FLOPs and bytes as exact expressions in T (the model's shape and
        precision substituted), and its time with the device's peaks substituted (floats): one
        device's share under parallelism, as the table (:func:`.evaluate.prefill_expressions`).
        """
        return evaluate.prefill_expressions(self.setting)

    def as_dict(self) -> dict[str, Any]:
        s = self.setting
        return {
            "hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
            "precision": s.precision, "attention": s.attention, "batch": s.batch,
            "fusion": s.fusion, "caches": list(s.caches), "ridge_intensity": s.ridge,
            "parallel": s.splits,
            "results": [{"prompt_tokens": p.prompt_tokens, "time_s": p.time_s, "flops": p.flops,
                         "bytes": p.bytes, "intensity": p.intensity, "bound": p.bound,
                         "operations": [o._asdict() for o in p.operations]}
                        for p in self.points],
            "decode": self.decode.__dict__,
            "memory": self.memory,
        }

    @property
    def memory(self) -> dict[str, Any]:
        """One device's memory at the longest prompt, as the memory check counts it (bytes):
        weights, KV cache, with naive attention one layer's score matrix, the device's capacity
        and what is left free (negative: it does not fit). Activations between kernels and the
        kernels' workspaces are not counted."""
        s = self.setting
        tokens = max(p.prompt_tokens for p in self.points)
        keys = ("weights", "kv_cache", "scores") if s.attention == "naive" else \
            ("weights", "kv_cache")
        held = {key: evaluate.held_bytes(s, key, tokens) for key in keys}
        capacity = s.hardware.memory_capacity
        return {"prompt_tokens": tokens, **held, "capacity": capacity,
                "free": capacity - sum(held.values())}

    def _memory_line(self) -> str:
        m, s = self.memory, self.setting
        names = {"weights": "weights", "kv_cache": "KV cache", "scores": "one layer's scores"}
        parts = " + ".join(f"{names[k]} {si(m[k], 'B')}" for k in names if k in m)
        left = (f"{si(m['free'], 'B')} free" if m["free"] >= 0
                else f"{si(-m['free'], 'B')} too much: it does not fit")
        device = "One device's memory" if s.parallel else "Memory"
        return (f"{device} at T = {m['prompt_tokens']:,}: {parts} of "
                f"{si(m['capacity'], 'B')}, {left} (activations and kernel workspaces not "
                "counted)")

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
        split = s.parallel_words
        return (f"Prefill of {s.model.name} on {s.hardware.name} ({s.precision_words}, "
                f"{s.attention} attention, batch {s.batch}{split}; ridge {s.ridge:.4g} "
                "FLOP/byte)")

    def decode_line(self) -> str:
        """The decode step beside the prefill, in one line: its time, intensity and bound, its
        KV cache, and which of the setting's splits it does not take."""
        d, s = self.decode, self.setting
        share = (f" per device (tensor parallel over {s.tp}, all-reduces "
                 f"{si(d.communication_s, 's')})" if s.tp > 1 else "")
        left = [w for w, n in (("pipeline", s.pp), ("expert", s.ep), ("context", s.cp)) if n > 1]
        note = (f" ({', '.join(left)} parallelism not applied to the decode step)"
                if left else "")
        return (f"Decode step{share} at context {d.context_tokens:,}, batch {d.batch}: "
                f"{si(d.time_s, 's')}, {d.intensity:.3g} FLOP/byte ({d.bound}-bound); "
                f"KV cache {si(d.kv_cache_bytes, 'B')}{note}")

    def __str__(self) -> str:
        return "\n".join([self._title(), "", render(*self.rows()), "", self.decode_line(),
                          self._memory_line()])

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self._title()}**", "", render(*self.rows(), markdown=True), "",
                          self.decode_line(), "", self._memory_line()])


@dataclass(frozen=True)
class CrossoverTable:
    """Every crossover of the catalogue for one setting: closed form and value."""

    setting: Setting
    values: dict[str, CrossoverValue]

    def as_dict(self) -> dict[str, Any]:
        s = self.setting
        values = evaluate.solve_closed_forms(s, self.values)  # every closed form is read here
        return {
            "hardware": s.hardware.name, "model": s.model.name, "dtype": s.dtype,
            "precision": s.precision, "batch": s.batch, "ridge_intensity": s.ridge,
            "parallel": s.splits,
            "crossovers": {name: {"value": v.value, "unit": v.unit, "exists": v.exists,
                                  "reason": v.reason, "ends_at": v.ends_at,
                                  "expr": v.expr, "latex": v.latex,
                                  "conditions": v.conditions, "symbols": v.symbols,
                                  "meaning": v.meaning, "evaluated": v.evaluated,
                                  "simplified": v.simplified,
                                  "simplified_expr": v.simplified_expr}
                           for name, v in values.items()},
        }

    def rows(self) -> tuple[list[str], list[list[str]]]:
        rows = []
        for name, v in self.values.items():
            digits = 1 if v.exists and v.value < 1000 else 0  # a crossover is not an integer
            value = (f"{v.value:,.{digits}f} {v.unit}" if v.exists
                     else absent(v.reason, v.evaluated))
            if v.fits_on_one:
                value += " (fits on one)"  # the degree at which the share would just fill one
            approx = "" if v.simplified is None or v.value is None else \
                f"{v.simplified:,.0f} ({v.simplified / v.value - 1:+.1%})"
            rows.append([name, value, approx, v.reason])
        return ["crossover", "value", "wide-layer form", "note"], rows

    @property
    def expressions(self) -> dict[str, Expr]:
        """The closed form of each crossover (of the branch that holds here), as SymPy: the
        branch re-derived by SymPy (the text is never parsed back)."""
        from .derive.crossovers import crossovers

        solved = crossovers(self.setting.architecture, self.setting.caches)
        return {n: solved[n].branch(tuple(int(i) for i in v.branch.split(",")) if v.branch
                                    else ()).root for n, v in self.values.items()}

    def _title(self) -> str:
        s = self.setting
        return (f"Crossovers of {s.model.name} on {s.hardware.name} ({s.precision_words}, "
                f"batch {s.batch}{s.parallel_words}; ridge {s.ridge:.4g} FLOP/byte)")

    def __str__(self) -> str:
        return "\n".join([self._title(), "", render(*self.rows(), left=(0, 3))])

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self._title()}**", "", render(*self.rows(), markdown=True)])
