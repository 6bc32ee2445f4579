"""Published measurements against the roofline's bound for the same setting.

Attention. For one measurement (:class:`roofline.specs.published.Measurement`: a kernel's
forward pass on a device, in a data type, for B sequences of T tokens with n_q query and n_kv
key/value heads of dimension H, causal or not) the bound is the roofline time of that one attention operation:
max(F/P_peak, Q/β_HBM, and at each memory level its bytes over its bandwidth), with the exact
FLOPs (T(T+1)/2 pairs under a causal mask) and the bytes of the schedule in ``mode`` behind the
device's caches (:mod:`roofline.derive.levels`). A measured time below the bound would mean the
model charges traffic that the real kernel does not move: the bound would be wrong.

The measured time is the source's FLOP count (its convention) over the reported FLOP/s.

Tensor parallelism. For one time to first token of a model on N_tp devices
(:class:`roofline.specs.published.ParallelMeasurement`) the bound is the prefill the evaluation
core gives for the same device, model, data type, degree, batch and prompt length
(:func:`roofline.evaluate.prefill`, the function behind ``roofline.prefill(..., tp=N)`` and
``roofline prefill --tp N``): one device's share of every operation and the ring all-reduces
after them (the default), and the same with the all-reduces hidden under the compute
(``overlap``), the more permissive bound. A first token takes at least the prefill, so a
measured time below the bound would mean the model charges work or traffic that the engine does
not do.

A mixture of experts reads, in each MoE layer, the weights of every expert that receives a token
(:mod:`roofline.derive.transformer`: at most min(n_e, B·T·n_a)), which assumes the tokens spread
over the experts. A prompt of one token id repeated (``tokens = "repeated"``: TensorRT-LLM's
benchmark fills its prompt with its pad id) sends every token the same way: rotary positions enter
the queries and keys only, so the values, and with them every position's hidden state, stay alike,
and each MoE layer reaches n_a experts. Such a row, and one whose source does not say what its
prompt holds, is held against the model with n_e = n_a (the fewest experts any prompt reaches; the
router's n_e columns shrink with it, which only lowers the bound); the model's own count is kept
beside it (``spread_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from ..codegen import call, function
from ..specs.dtypes import bytes_per_element
from ..specs.hardware import Hardware
from ..specs.model import ModelShape
from ..specs.published import Measurement, ParallelMeasurement
from .estimate import estimate_columns
from .phases import PrefillPoint, level_time
from .points import prefill
from .setting import Setting, device_caches, device_numbers, level_bandwidths

__all__ = ["Check", "check", "attention_forms", "ParallelCheck", "check_parallel",
           "one_route", "GemmCheck", "check_gemm"]


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
    """One layer's attention in ``mode``: FLOPs, HBM bytes and the bytes each further level
    serves, as generated functions (derived by SymPy once)."""
    from ..derive import attention, levels

    hbm, served = levels.level_bytes(mode, caches, causal=causal)
    return {"flops": function(attention.mode_flops(mode, causal)), "bytes": function(hbm),
            "levels": {level: function(q) for level, q in served.items()}}


def _time(m: Measurement, hw: Hardware, mode: str, caches: tuple[str, ...]) -> tuple[float, str]:
    forms = attention_forms(mode, m.causal, caches)
    b = bytes_per_element(m.dtype)
    numbers = {**device_numbers(hw, m.dtype), "B": m.batch, "T": m.seq_len, "H": m.head_dim,
               "n_q": m.heads, "n_kv": m.kv_heads, "b_a": b.numerator / b.denominator}
    f, q = float(call(forms["flops"], numbers)), float(call(forms["bytes"], numbers))
    bandwidths = level_bandwidths(hw)
    served = [(level, bandwidths[level], float(call(q, numbers)))
              for level, q in forms["levels"].items() if level in bandwidths]
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


@dataclass(frozen=True)
class ParallelCheck:
    """One time to first token on N devices against the prefill of the same setting: the
    default bound (all-reduces after the compute) and the overlapped one."""

    measurement: ParallelMeasurement
    setting: Setting  # as the evaluation core ran it (the default, not overlapped)
    point: PrefillPoint  # the prefill at the measurement's prompt length
    overlapped_s: float  # the same with the all-reduces hidden under the compute
    spread_s: float  # the default bound with the model's own expert count (= bound_s if dense,
    # or if the prompt's tokens are varied)
    estimate_s: float | None = None  # the estimate beside the bound (.estimate); None without

    @property
    def bound_s(self) -> float:
        """The roofline's lower bound on the prefill's time (the default: not overlapped)."""
        return self.point.time_s

    @property
    def communication_s(self) -> float:
        """The part of the bound spent in the all-reduces and the logits' gather."""
        return sum(o.time_s for o in self.point.operations if o.kind == "communication")

    @property
    def ratio(self) -> float:
        """Measured over bound: at least 1 where the bound holds (how far above it the
        measurement sits)."""
        return self.measurement.time_s / self.bound_s

    @property
    def holds(self) -> bool:
        return self.measurement.time_s >= self.bound_s

    @property
    def overlapped_holds(self) -> bool:
        return self.measurement.time_s >= self.overlapped_s


def one_route(model: ModelShape) -> ModelShape:
    """``model`` as a prompt whose tokens all take one route runs it: each MoE layer's routed
    experts cut to the n_a a token reaches (a dense model unchanged).

    >>> from roofline.specs.model import load_model
    >>> one_route(load_model("Mixtral-8x7B")).num_experts
    2
    """
    if model.num_experts <= 1:
        return model
    return replace(model, num_experts=model.experts_per_token)


def check_parallel(m: ParallelMeasurement, hw: Hardware, model: ModelShape) -> ParallelCheck:
    """The measurement ``m`` against the prefill of ``model`` on ``hw`` at its degrees (and
    network), in the evaluation core, by default and overlapped; a mixture of experts whose prompt is
    repeated or unstated with its tokens on one route (:func:`one_route`). An InputError where
    the setting is refused (a degree that does not divide the heads, a device file without an
    interconnect)."""
    if hw.name != m.device or model.name != m.model:
        raise ValueError(f"the measurement is of {m.model} on {m.device}, not {model.name} on "
                         f"{hw.name}")
    from ..specs.network import load_network

    routed = model if m.tokens == "varied" else one_route(model)
    s = Setting(hw, routed, m.dtype, batch=m.batch, tp=m.tp, ep=m.ep, pp=m.pp,
                network=load_network(m.network) if m.network else None)
    (point,) = prefill(s, [m.prompt_tokens])
    (hidden,) = prefill(replace(s, overlap=True), [m.prompt_tokens])
    spread_s = point.time_s if routed is model else \
        prefill(replace(s, model=model), [m.prompt_tokens])[0].time_s
    est = estimate_columns(s, [m.prompt_tokens])
    return ParallelCheck(m, s, point, hidden.time_s, spread_s,
                         None if est is None else float(est["time_s"][0]))


@dataclass(frozen=True)
class GemmCheck:
    """One published GEMM timing against the roofline of that one GEMM and the estimate."""

    measurement: Any  # roofline.specs.published_gemm.GemmMeasurement
    bound_s: float  # max(2mnk/P, bytes/β): inputs read once, the output written once
    estimate_s: float | None  # with tile and wave quantization, achievable fractions, a launch
    shape: float  # the shape efficiency of its tiles and waves on the device (1 without one)

    @property
    def measured_s(self) -> float:
        m = self.measurement
        return 2 * m.m * m.n * m.k / (m.tflops * 1e12)


def check_gemm(m: Any, hw: Hardware) -> GemmCheck:
    """The GEMM of ``m`` (m × k by k × n in ``m.dtype``; an FP8 GEMM writes bf16, as DeepGEMM
    and cuBLASLt's FP8 kernels do) on ``hw``: its roofline time, and where the device gives an
    ``[estimate]`` the estimate's (:mod:`.estimate`: the compute time over the shape efficiency
    of :func:`roofline.derive.shapes.library_efficiency` and the achievable fraction, the memory
    time over its fraction, one kernel launch)."""
    from sympy import Integer

    from ..derive.shapes import library_efficiency
    from ..specs.estimate import estimate_numbers
    from ..symbols import by_name

    flops = 2 * m.m * m.n * m.k
    b_in = bytes_per_element(m.dtype)
    b_out = 2 if b_in < 2 else b_in
    nbytes = (m.m * m.k + m.k * m.n) * b_in + m.m * m.n * b_out
    peak, bw = hw.peak(m.dtype), hw.bandwidth()
    bound = max(flops / peak, nbytes / bw)
    n = estimate_numbers(hw)
    if not n:
        return GemmCheck(m, bound, None, 1.0)
    shape = float(library_efficiency(Integer(m.m), Integer(m.n)).xreplace(by_name(
        {k: n[k] for k in ("B_m", "B_n", "N_sm", "n_cta")})))
    est = max(flops / (shape * n["eta_c"] * peak), nbytes / (n["eta_m"] * bw)) + n["t_launch"]
    return GemmCheck(m, bound, est, shape)
