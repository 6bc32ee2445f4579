"""Numbers enter here, in one place: a hardware file and a model shape specialise the exact
expressions. Exact substitution (``subs``) for tables; ``lambdify`` to numpy for sweeps over
arrays of prompt lengths (a property test checks that the two agree).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import numpy as np
from sympy import Expr, Integer, Rational, Symbol, lambdify

from . import arith
from .derive import attention
from .derive.bounds import op_time
from .derive.decode import decode_operations, kv_cache_bytes
from .derive.transformer import Operation, prefill_operations
from .errors import InputError
from .specs.dtypes import STORAGE_DTYPES, bytes_per_element
from .specs.hardware import Hardware
from .specs.model import ModelShape
from .symbols import B, C_mem, M_sram, P_peak, T, T_ctx, b_a, b_kv, b_w, beta_hbm

__all__ = ["Setting", "OpResult", "PrefillPoint", "DecodeResult", "CrossoverValue",
           "prefill", "prefill_time", "decode", "crossover_values"]

_NUMPY = [{"Max": np.maximum, "Min": np.minimum, "ceiling": np.ceil}, "numpy"]


@dataclass(frozen=True)
class Setting:
    """A device, a model and how they are run: precision, attention mode, batch."""

    hardware: Hardware
    model: ModelShape
    dtype: str = "bf16"  # compute data type; default bytes of weights, activations, KV cache
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    attention: str = "tiled"
    batch: int = 1

    def __post_init__(self) -> None:
        if self.attention not in attention.MODES:
            raise InputError("--attention", f"must be one of {', '.join(attention.MODES)}",
                             self.attention)
        if not (isinstance(self.batch, int) and self.batch >= 1):
            raise InputError("--batch", "must be a positive integer", self.batch)
        self.hardware.peak(self.dtype)  # a data type the device lacks is an error
        for option, dtype in (("--weight-dtype", self.weight_dtype),
                              ("--kv-dtype", self.kv_dtype)):
            if dtype is not None and dtype not in STORAGE_DTYPES:
                raise InputError(option, f"must be one of {', '.join(STORAGE_DTYPES)}", dtype)

    @property
    def precision(self) -> dict[str, str]:
        return {"compute": self.dtype, "weights": self.weight_dtype or self.dtype,
                "activations": self.dtype, "kv_cache": self.kv_dtype or self.dtype}

    @cached_property
    def ridge(self) -> float:
        return self.hardware.peak(self.dtype) / self.hardware.bandwidth()

    def values(self, batch: bool = True) -> dict[Symbol, Expr]:
        """Every symbol's value but the prompt length T (and B when ``batch`` is False)."""
        hw, p = self.hardware, self.precision
        out: dict[Symbol, Any] = {
            P_peak: hw.peak(self.dtype), beta_hbm: hw.bandwidth(), C_mem: hw.memory_capacity,
            b_w: Rational(bytes_per_element(p["weights"])),
            b_a: Rational(bytes_per_element(p["activations"])),
            b_kv: Rational(bytes_per_element(p["kv_cache"])),
            **{s: Integer(v) for s, v in self.model.values().items()},
        }
        if hw.sram_per_sm is not None:
            out[M_sram] = hw.sram_per_sm
        if batch:
            out[B] = Integer(self.batch)
        return out

    @cached_property
    def operations(self) -> list[Operation]:
        """The prefill's operations for this model and attention mode, numbers substituted."""
        if self.attention.startswith("tiled") and self.hardware.sram_per_sm is None:
            raise InputError("--attention", f"{self.attention} attention needs the on-chip SRAM "
                             f"per SM, which {self.hardware.name} does not give "
                             "(on_chip.sram_per_sm); use naive or ideal", self.attention)
        vals = self.values()
        return [Operation(op.name, op.kind, op.flops.subs(vals), op.bytes.subs(vals),
                          op.count.subs(vals))
                for op in prefill_operations(self.model.architecture, self.attention)]

    @cached_property
    def _sweep(self):
        """Total prefill time as a numpy function of an array of prompt lengths."""
        vals = self.values()
        total = sum((op.count * op_time(op.flops, op.bytes) for op in self.operations),
                    Integer(0)).subs({P_peak: vals[P_peak], beta_hbm: vals[beta_hbm]})
        return lambdify(T, total, modules=_NUMPY)


@dataclass(frozen=True)
class OpResult:
    """One operation at one prompt length: totals over its ``count`` (layers)."""

    name: str
    kind: str
    count: int
    flops: float
    bytes: float
    intensity: float
    time_s: float
    bound: str  # "compute" | "memory"


@dataclass(frozen=True)
class PrefillPoint:
    prompt_tokens: int
    time_s: float
    flops: float
    bytes: float
    intensity: float
    bound: str
    operations: list[OpResult] = field(repr=False)


@dataclass(frozen=True)
class DecodeResult:
    context_tokens: int
    batch: int
    time_s: float
    flops: float
    bytes: float
    intensity: float
    bound: str
    kv_cache_bytes: float


def _op_results(ops: list[Operation], subs: dict, peak: float, bw: float) -> list[OpResult]:
    out = []
    for op in ops:
        n = int(op.count.subs(subs))
        f, q = float(op.flops.subs(subs)) * n, float(op.bytes.subs(subs)) * n
        t_c, t_m = f / peak, q / bw
        out.append(OpResult(op.name, op.kind, n, f, q, f / q if q else float("inf"),
                            max(t_c, t_m), "compute" if t_c >= t_m else "memory"))
    return out


def _point(ops: list[OpResult], ridge_: float) -> tuple[float, float, float, float, str]:
    f = sum(o.flops for o in ops)
    q = sum(o.bytes for o in ops)
    return sum(o.time_s for o in ops), f, q, f / q, "compute" if f / q >= ridge_ else "memory"


def _check_prompts(prompts: Sequence[int]) -> list[int]:
    if len(prompts) == 0:
        raise InputError("--prompt", "needs at least one prompt length", list(prompts))
    for t in prompts:
        if int(t) != t or t <= 0:
            raise InputError("--prompt", "a prompt length must be a positive integer", t)
    return [int(t) for t in prompts]


def prefill(setting: Setting, prompts: Sequence[int]) -> list[PrefillPoint]:
    """Time, FLOPs, bytes, intensity and bound of the prefill at each prompt length, with the
    per-operation breakdown (exact substitution, then ``float``)."""
    peak, bw = setting.hardware.peak(setting.dtype), setting.hardware.bandwidth()
    out = []
    for t in _check_prompts(prompts):
        ops = _op_results(setting.operations, {T: t}, peak, bw)
        out.append(PrefillPoint(t, *_point(ops, setting.ridge), ops))
    return out


def prefill_time(setting: Setting, prompts: np.ndarray | Sequence[int]) -> np.ndarray:
    """Prefill time in seconds for an array of prompt lengths (vectorised: ``lambdify``)."""
    tokens = np.asarray(prompts, dtype=float)
    return np.broadcast_to(setting._sweep(tokens), tokens.shape).astype(float)


def decode(setting: Setting, context: int) -> DecodeResult:
    """One decode step of ``setting.batch`` sequences at ``context`` cached tokens."""
    vals = {**setting.values(), T_ctx: Integer(context), T: Integer(context)}
    peak, bw = setting.hardware.peak(setting.dtype), setting.hardware.bandwidth()
    ops = _op_results(decode_operations(setting.model.architecture), vals, peak, bw)
    time_s, f, q, i, bound = _point(ops, setting.ridge)
    return DecodeResult(context, setting.batch, time_s, f, q, i, bound,
                        float(kv_cache_bytes().subs(vals)))


@dataclass(frozen=True)
class CrossoverValue:
    """A crossover evaluated for one setting: its value, or why it does not exist."""

    name: str
    meaning: str
    value: float | None
    unit: str
    exists: bool
    reason: str
    expr: str  # the closed form of the branch that holds here (``sympy.sstr``; parse_expr reads it)
    latex: str
    ends_at: float | None = None  # where the regime ends again (a second root), if it does
    evaluated: bool = True  # False when the device lacks a number the crossover needs
    simplified: float | None = None  # the wide-layer form (activation traffic neglected)
    simplified_expr: str | None = None


def crossover_values(setting: Setting) -> dict[str, CrossoverValue]:
    """Every crossover of the catalogue for this setting (architecture of its model)."""
    from .compiled import compiled

    out = {}
    for name, c in compiled(setting.model.architecture).items():
        vals = {s.name: float(v) for s, v in setting.values(batch=c["unknown"] != B.name).items()}
        out[name] = _evaluate(name, c, vals, setting)
    return out


def _evaluate(name: str, c: dict, vals: dict[str, float], setting: Setting) -> CrossoverValue:
    x, main = c["unknown"], c["branches"][0]
    value = partial(CrossoverValue, name, c["meaning"])
    if M_sram.name in arith.names(c["grows"]) | arith.names(c["other"]) and M_sram.name not in vals:
        return value(None, c["unit"], False, f"not evaluated: {setting.hardware.name} gives no "
                     "on-chip SRAM per SM (the tiled attention's M)", main["root"],
                     main["latex"], evaluated=False)
    found: list[tuple[float, dict]] = []
    for branch in c["branches"]:
        coeffs = np.array([arith.value(a, vals) for a in branch["coefficients"]])
        if not coeffs.any():
            continue
        for r in np.roots(np.trim_zeros(coeffs, "f")):
            if abs(r.imag) <= 1e-9 * abs(r) and r.real > 0 and _holds(branch, vals, x, r.real):
                found.append((float(r.real), branch))
    if not found:
        return value(None, c["unit"], False, _never(c, vals, setting), main["root"],
                     main["latex"])
    found.sort(key=lambda item: item[0])
    (first, branch), ends = found[0], (found[1][0] if len(found) > 1 else None)
    note = "" if ends is None else _ends_note(c, ends)
    approx = c["simplified"] if branch is main else None
    return value(first, c["unit"], True, note, branch["root"], branch["latex"], ends,
                 simplified=_real(approx["expr"], vals) if approx else None,
                 simplified_expr=approx["expr"] if approx else None)


def _real(text: str, vals: dict[str, float]) -> float | None:
    try:
        v = arith.value(text, vals)
    except (ValueError, ZeroDivisionError):  # a negative square root: no real value
        return None
    return v if v > 0 else None


def _ends_note(c: dict, ends: float) -> str:
    """Where the regime that the crossover opens closes again (the second root)."""
    if c["kind"] == "intensity":
        return f"memory-bound again from {ends:,.0f} {c['unit']}"
    return f"the two sides are equal again at {ends:,.0f} {c['unit']}"


def _holds(branch: dict, vals: dict[str, float], x: str, r: float) -> bool:
    """Whether every Max/Min of the branch really takes the chosen argument at x = r."""
    at = {**vals, x: r}
    for atom, arg in branch["choices"]:
        a, b = arith.value(atom, at), arith.value(arg, at)
        if abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-300):
            return False
    return True


def _never(c: dict, vals: dict[str, float], setting: Setting) -> str:
    x = c["unknown"]
    grows = lambda at: arith.value(c["grows"], {**vals, x: at})  # noqa: E731
    other = lambda at: arith.value(c["other"], {**vals, x: at})  # noqa: E731
    if c["kind"] == "memory":
        if grows(0) >= other(0):
            return (f"never fits: the weights alone ({grows(0) / 1e9:.4g} GB) exceed the device "
                    f"memory ({other(0) / 1e9:.4g} GB)")
        return "never: it always fits"
    ratio = grows(1e15) / other(1e15)
    if c["kind"] == "intensity":
        return (f"never: the intensity tends to {ratio * setting.ridge:.4g} FLOP/byte as "
                f"{x} → ∞, below the ridge {setting.ridge:.4g} FLOP/byte")
    return f"never: the left side stays below the right (ratio {ratio:.3g} as {x} → ∞)"
