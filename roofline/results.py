"""What :func:`roofline.prefill` and :func:`roofline.crossovers` return: results that print as
tables (and as Markdown in Jupyter), give their JSON form (``as_dict``, what ``--json``
prints) and keep the exact SymPy expressions they were evaluated from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from . import evaluate
from .evaluate import Setting
from .tables import absent, render, si

if TYPE_CHECKING:
    from sympy import Expr

    from .evaluate import CrossoverValue, DecodeResult, PrefillPoint

__all__ = ["PrefillTable", "CrossoverTable"]

_ESTIMATE_SYMBOLS = ("t_launch", "t_host", "B_m", "B_n", "B_r", "n_cta", "eta_c", "eta_m", "N_sm")


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
            "estimate": self.estimate_dict(),
        }

    @cached_property
    def estimate(self) -> dict[str, Any] | None:
        """The estimate beside the bound at each prompt length (:mod:`.evaluate.estimate`):
        numpy columns ``time_s``, ``operations_s``, ``launch_s``, ``host_s`` and ``kernels``;
        None where the device file gives no ``[estimate]``."""
        from .evaluate.estimate import estimate_columns

        return estimate_columns(self.setting, [p.prompt_tokens for p in self.points])

    def estimate_dict(self) -> dict[str, Any]:
        """The estimate's JSON form: what it adds, and its parts at each prompt length (or why
        there is none)."""
        from .evaluate.estimate import WHAT, missing

        e = self.estimate
        if e is None:
            return {"what": WHAT, "results": None, "reason": missing(self.setting)}
        keys = ("time_s", "operations_s", "launch_s", "host_s")
        return {"what": WHAT, "kernels": float(e["kernels"]), "numbers": {
            k: v for k, v in self.setting.numbers().items() if k in _ESTIMATE_SYMBOLS},
            "results": [{"prompt_tokens": p.prompt_tokens, **{k: float(e[k][i]) for k in keys}}
                        for i, p in enumerate(self.points)]}

    def estimate_line(self) -> str:
        """The estimate at the longest prompt, its parts named, in one line (or why none)."""
        from .evaluate.estimate import missing

        e = self.estimate
        if e is None:
            return f"Estimate: {missing(self.setting)}; the times above are the bound"
        i = max(range(len(self.points)), key=lambda j: self.points[j].prompt_tokens)
        n = self.setting.numbers()
        return (f"Estimate at T = {self.points[i].prompt_tokens:,}: {si(e['time_s'][i], 's')} = "
                f"operations at {n['eta_c']:.0%} of peak FLOP/s (less tile and wave "
                f"quantization) and {n['eta_m']:.0%} of the bandwidth {si(e['operations_s'][i], 's')}"
                f" + {e['kernels']:,.4g} kernel launches × {si(n['t_launch'], 's')} + one host "
                f"step {si(n['t_host'], 's')}; the bound assumes none of these")

    @property
    def memory(self) -> dict[str, Any]:
        """One device's memory at the longest prompt, as the memory check counts it (bytes):
        weights, KV cache, with naive attention one layer's score matrix, the device's capacity
        and what is left free (negative: it does not fit); under pipeline parallelism those of
        the fullest stage, named by its index (0 the first) and its number of layers
        (``stage``). Activations between kernels and the kernels' workspaces are not counted."""
        s = self.setting
        tokens = max(p.prompt_tokens for p in self.points)
        live = evaluate.activation_bytes(s, tokens)
        keys = ("weights", "kv_cache", "scores") if s.attention == "naive" and live is None \
            else ("weights", "kv_cache")
        held = {key: evaluate.held_bytes(s, key, tokens) for key in keys}
        if live is not None:
            held["activations"] = live
        capacity = s.hardware.memory_capacity
        stage = {}
        if s.pp > 1:
            index, layers = evaluate.fullest_stage(s, tokens)
            stage = {"stage": {"index": index, "layers": layers}}
        return {"prompt_tokens": tokens, **held, "capacity": capacity,
                "free": capacity - sum(held.values()), **stage}

    def _memory_line(self) -> str:
        m, s = self.memory, self.setting
        names = {"weights": "weights", "kv_cache": "KV cache", "scores": "one layer's scores",
                 "activations": f"live activations at their peak ({s.attention} attention's "
                 "workspace)"}
        parts = " + ".join(f"{names[k]} {si(m[k], 'B')}" for k in names if k in m)
        left = (f"{si(m['free'], 'B')} free" if m["free"] >= 0
                else f"{si(-m['free'], 'B')} too much: it does not fit")
        device = "One device's memory" if s.parallel else "Memory"
        if "stage" in m:  # stages numbered from 0, as vLLM's pipeline ranks
            index, layers = m["stage"]["index"], m["stage"]["layers"]
            ends = {0: " and the embedding", s.pp - 1: " and the final norm and LM head"}
            device += (f" (its fullest pipeline stage, stage {index} of 0 to {s.pp - 1}: "
                       f"{layers} of {s.model.num_layers} layers{ends.get(index, '')}, each "
                       "counted at the mean layer's bytes)")
        batch = f", batch {s.batch}" if s.batch > 1 else ""
        counted = "" if "activations" in m else (" (activations and kernel workspaces not "
                                                 "derived here, not counted)")
        return (f"{device} at T = {m['prompt_tokens']:,}{batch}: {parts} of "
                f"{si(m['capacity'], 'B')}, {left}{counted}")

    def rows(self) -> tuple[list[str], list[list[str]]]:
        head = ["prompt", "time (bound)", "estimate", "FLOPs", "HBM bytes", "FLOP/byte", "bound",
                "attention share"]
        rows = []
        e = self.estimate
        for i, p in enumerate(self.points):
            attn = sum(o.time_s for o in p.operations if o.kind == "attention")
            rows.append([str(p.prompt_tokens), si(p.time_s, "s"),
                         "-" if e is None else si(e["time_s"][i], "s"), si(p.flops),
                         si(p.bytes, "B"), f"{p.intensity:.4g}", p.bound, f"{attn / p.time_s:.1%}"])
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
        return "\n".join([self._title(), "", render(*self.rows()), "", self.estimate_line(),
                          self.decode_line(), self._memory_line()])

    def _repr_markdown_(self) -> str:
        return "\n".join([f"**{self._title()}**", "", render(*self.rows(), markdown=True), "",
                          self.estimate_line(), "", self.decode_line(), "",
                          self._memory_line()])


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
