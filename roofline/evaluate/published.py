"""Published attention measurements against the roofline's bound for the same shape.

For one measurement (:class:`roofline.specs.published.Measurement`: a kernel's forward pass on a
device, in a data type, for B sequences of T tokens with n_q query and n_kv key/value heads of
dimension H, causal or not) the bound is the roofline time of that one attention operation:
max(F/P_peak, Q/β_HBM, and at each memory level its bytes over its bandwidth), with the exact
FLOPs (T(T+1)/2 pairs under a causal mask) and the bytes of the schedule in ``mode`` behind the
device's caches (:mod:`roofline.derive.levels`). A measured time below the bound would mean the
model charges traffic that the real kernel does not move: the bound would be wrong.

The measured time is the source's FLOP count (its convention) over the reported FLOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..specs.dtypes import bytes_per_element
from ..specs.hardware import Hardware
from ..specs.published import Measurement
from . import arith
from .phases import level_time
from .setting import device_caches, device_numbers, level_bandwidths

__all__ = ["Check", "check", "attention_forms"]


@dataclass(frozen=True)
class Check:
    """One measurement against the bound of ``mode`` behind the device's caches, and against
    the same schedule with every byte it moves charged to HBM (no cache: the papers' count)."""

    measurement: Measurement
    mode: str
    bound_s: float  # the roofline's lower bound on the pass's time
    level: str  # what binds it: "compute", "hbm", "l2", "l3" or "sram"
    uncached_s: float  # the bound with no cache level

    @property
    def fraction(self) -> float:
        """The bound over the measured time: at most 1 where the bound holds (how tight it is)."""
        return self.bound_s / self.measurement.time_s

    @property
    def holds(self) -> bool:
        return self.measurement.time_s >= self.bound_s

    @property
    def uncached_holds(self) -> bool:
        return self.measurement.time_s >= self.uncached_s


@cache
def attention_forms(mode: str, causal: bool, caches: tuple[str, ...]) -> dict[str, object]:
    """One layer's attention in ``mode`` as text: FLOPs, HBM bytes and the bytes each further
    level serves (derived by SymPy once, then evaluated by :mod:`.arith`)."""
    from sympy import sstr

    from ..derive import attention, levels

    hbm, served = levels.level_bytes(mode, caches, causal=causal)
    return {"flops": sstr(attention.mode_flops(mode, causal)), "bytes": sstr(hbm),
            "levels": {level: sstr(q) for level, q in served.items()}}


def _time(m: Measurement, hw: Hardware, mode: str, caches: tuple[str, ...]) -> tuple[float, str]:
    forms = attention_forms(mode, m.causal, caches)
    b = bytes_per_element(m.dtype)
    numbers = {**device_numbers(hw, m.dtype), "B": m.batch, "T": m.seq_len, "H": m.head_dim,
               "n_q": m.heads, "n_kv": m.kv_heads, "b_a": b.numerator / b.denominator}
    f, q = arith.value(forms["flops"], numbers), arith.value(forms["bytes"], numbers)
    bandwidths = level_bandwidths(hw)
    served = [(level, bandwidths[level], arith.value(text, numbers))
              for level, text in forms["levels"].items() if level in bandwidths]
    t_compute = f / numbers["P_peak"]
    t_memory, slowest = level_time(q / numbers["beta_hbm"], served)
    if t_compute >= t_memory:
        return t_compute, "compute"
    return t_memory, slowest or "hbm"


def check(m: Measurement, hw: Hardware, mode: str = "kernel") -> Check:
    """The measurement ``m`` on the device ``hw`` (its hardware file) against the bound."""
    if hw.name != m.device:
        raise ValueError(f"{m.kernel} was measured on {m.device}, not {hw.name}")
    bound, level = _time(m, hw, mode, device_caches(hw))
    uncached, _ = _time(m, hw, mode, ())
    return Check(m, mode, bound, level, uncached)
