"""A setting: a device, a model and how they are run. Its numbers are what every expression is
evaluated at, as plain Python numbers by symbol name (the fast path) or as exact SymPy values
(:meth:`Setting.values`, the symbolic path)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..derive.architecture import ATTENTION_MODES, KV_CACHES, MLA_DECODES, Architecture
from ..errors import InputError
from ..specs.dtypes import STORAGE_DTYPES, bytes_per_element
from ..specs.hardware import Hardware
from ..specs.model import ModelShape
from .forms import crossover_forms, forms

if TYPE_CHECKING:
    from sympy import Expr, Symbol

__all__ = ["Setting"]


def _number(x: Any) -> int | float:
    """An exact integer where the value is one, else a float (a Fraction of bytes: 1/2)."""
    return int(x) if x == int(x) else float(x)


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
    kv_cache: str = "window"  # a windowed layer's cache: the last W tokens, or all T ("full")
    mla_decode: str = "absorbed"  # latent attention's decode step: absorbed, or naive

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION_MODES:
            raise InputError("attention", f"must be one of {', '.join(ATTENTION_MODES)}",
                             self.attention)
        if self.kv_cache not in KV_CACHES:
            raise InputError("kv_cache", f"must be one of {', '.join(KV_CACHES)}",
                             self.kv_cache)
        if self.mla_decode not in MLA_DECODES:
            raise InputError("mla_decode", f"must be one of {', '.join(MLA_DECODES)}",
                             self.mla_decode)
        if isinstance(self.batch, bool) or not (isinstance(self.batch, int) and self.batch >= 1):
            raise InputError("batch", "must be a positive integer", self.batch)
        self.hardware.peak(self.dtype)  # a data type the device lacks is an error
        for name, dtype in (("weight_dtype", self.weight_dtype), ("kv_dtype", self.kv_dtype)):
            if dtype is not None and dtype not in STORAGE_DTYPES:
                raise InputError(name, f"must be one of {', '.join(STORAGE_DTYPES)}", dtype)

    def check_attention(self) -> None:
        """A tiled mode needs the device's SRAM per SM: an InputError where the file lacks it
        (checked when the prefill is evaluated; crossovers of other modes need no SRAM)."""
        if self.attention.startswith("tiled") and self.hardware.sram_per_sm is None:
            raise InputError("attention", f"{self.attention} attention needs the on-chip SRAM "
                             f"per SM, which {self.hardware.name} does not give "
                             "(on_chip.sram_per_sm); use naive or ideal", self.attention)

    @property
    def precision(self) -> dict[str, str]:
        return {"compute": self.dtype, "weights": self.weight_dtype or self.dtype,
                "activations": self.dtype, "kv_cache": self.kv_dtype or self.dtype}

    @property
    def peak(self) -> float:
        """Achievable FLOP/s in the compute data type."""
        return self.hardware.peak(self.dtype)

    @property
    def bandwidth(self) -> float:
        """Achievable HBM bytes/s."""
        return self.hardware.bandwidth()

    @cached_property
    def ridge(self) -> float:
        return self.peak / self.bandwidth

    @cached_property
    def architecture(self) -> Architecture:
        """The model's architecture as run: a windowed model's KV cache as ``kv_cache`` says
        (a model without a window has one kind of cache only), a latent-attention model's
        decode step as ``mla_decode`` says."""
        from dataclasses import replace

        arch = self.model.architecture
        if arch.window != "none" and arch.kv_cache != self.kv_cache:
            arch = replace(arch, kv_cache=self.kv_cache)
        if arch.mla and arch.mla_decode != self.mla_decode:
            arch = replace(arch, mla_decode=self.mla_decode)
        return arch

    @cached_property
    def forms(self) -> Mapping[str, Any]:
        """The derived expressions of the architecture as run (:mod:`.forms`)."""
        return forms(self.architecture)

    @cached_property
    def crossover_forms(self) -> dict[str, Any]:
        """Every crossover of the architecture as run, solved (:mod:`.forms`)."""
        return crossover_forms(self.architecture)

    def numbers(self, batch: bool = True) -> dict[str, int | float]:
        """Every symbol's value by name but the prompt length T (and B when ``batch`` is
        False): integers stay integers, byte sizes of sub-byte types are floats."""
        hw, p = self.hardware, self.precision
        out: dict[str, int | float] = {
            "P_peak": self.peak, "beta_hbm": self.bandwidth, "C_mem": hw.memory_capacity,
            "b_w": _number(bytes_per_element(p["weights"])),
            "b_a": _number(bytes_per_element(p["activations"])),
            "b_kv": _number(bytes_per_element(p["kv_cache"])),
            **self.model.values(),
        }
        if hw.sram_per_sm is not None:
            out["M_sram"] = hw.sram_per_sm
        if batch:
            out["B"] = self.batch
        return out

    def values(self, batch: bool = True) -> dict[Symbol, Expr]:
        """:meth:`numbers` as exact SymPy values by symbol (byte sizes as Rationals): for
        exact substitution on the symbolic path."""
        from sympy import Float, Integer, Rational

        from ..symbols import CATALOGUE

        exact = {"b_w": "weights", "b_a": "activations", "b_kv": "kv_cache"}
        out: dict[Symbol, Expr] = {}
        for name, v in self.numbers(batch).items():
            if name in exact:
                f = bytes_per_element(self.precision[exact[name]])
                out[CATALOGUE[name].symbol] = Rational(f.numerator, f.denominator)
            else:
                out[CATALOGUE[name].symbol] = Integer(v) if isinstance(v, int) else Float(v)
        return out
