"""The optional GPU part of ``roofline measure`` and ``roofline validate`` (PyTorch with CUDA).

PyTorch is an optional extra (``pip install roofline[gpu]``), never a requirement: torch is
imported inside :class:`TorchDevice` and the CUDA timer, and :func:`unavailable` says why the GPU
part is skipped.

Measured: bf16 and fp32 (TF32 off) dense matmul FLOP/s (n×n @ n×n, 2·n³ FLOPs) and device memory
bandwidth of copy (8 bytes per fp32 element: one read, one write) and triad a = b + s·c
(12 bytes per element), on arrays ≥ 4× the device L2; timed with CUDA events after a warm-up.
Validated: the bf16 projection over T, and causal attention as ``naive`` (scores materialised in
bf16) against ``torch.nn.functional.scaled_dot_product_attention`` (``sdpa``: a fused kernel,
predicted with FlashAttention Algorithm 1's traffic, M = the shared memory per SM).

The device and the timer are parameters: :func:`measure_gpu` and :func:`validate_gpu` ask a
:class:`Device` (default :class:`TorchDevice`) for its facts and for kernels to run, and a
:data:`~.timing.Timer` (default: CUDA events) for their times. Sizes, work, rates, the hardware
document and the comparison with the model are computed here, the same for any device, so a fake
device and a fake timer check them without a GPU.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .hwfile import format_bytes, format_rate
from .timing import Stats, Timer, summarize
from .validation import Machine, Validation, attention_sweep, projection_sweep

__all__ = ["unavailable", "DeviceFacts", "Device", "TorchDevice", "cuda_timer", "measure_gpu",
           "validate_gpu"]

Kernel = Callable[[], Any]


def unavailable() -> str | None:
    """None when PyTorch sees a CUDA device; else the reason the GPU part is skipped."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (optional: pip install 'roofline[gpu]')"
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} finds no CUDA device"
    return None


@dataclass(frozen=True, kw_only=True)
class DeviceFacts:
    """What a device says about itself; sizes in bytes, 0 or None where unknown."""

    name: str
    vendor: str
    sm_count: int
    sram_per_sm: int | None  # shared memory per multiprocessor
    l2: int
    memory_free: int
    memory_total: int
    versions: dict[str, str]  # e.g. {"torch": "2.4.0", "cuda": "12.4"}
    source: str  # where the facts come from, in words


class Device(Protocol):
    """A device the GPU part runs on: its facts, and kernels built on it (allocation happens
    when a kernel is built, not when it runs)."""

    def facts(self) -> DeviceFacts: ...

    def matmul(self, dtype: str, n: int) -> Kernel: ...  # n×n @ n×n in dtype ("bf16", "fp32")

    def stream(self, kind: str, elements: int) -> Kernel: ...  # "copy" | "triad", fp32 arrays

    def projection(self, d: int, rows: int) -> Callable[[int], Kernel]: ...  # T → X[:T] @ W, bf16

    def attention(self, T: int, heads: int, head_dim: int) -> dict[str, Kernel]: ...  # naive, sdpa

    def release(self) -> None: ...


def cuda_timer(fn: Kernel, repeats: int, warmup: int = 2) -> list[float]:
    """Seconds per run of ``fn`` from CUDA events, after ``warmup`` untimed runs."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)  # ms → s
    return times


class TorchDevice:
    """GPU 0 through PyTorch (TF32 off, so fp32 matmuls run in fp32)."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.props = torch.cuda.get_device_properties(torch.cuda.current_device())
        torch.backends.cuda.matmul.allow_tf32 = False
        self._dtypes = {"bf16": torch.bfloat16, "fp32": torch.float32}

    def facts(self) -> DeviceFacts:
        torch, props = self.torch, self.props
        free, total = torch.cuda.mem_get_info()
        sram = next((int(v) for v in (getattr(props, n, None) for n in (
            "shared_memory_per_multiprocessor", "max_shared_memory_per_multiprocessor")) if v),
            None)
        return DeviceFacts(name=str(props.name), vendor="NVIDIA" if torch.version.cuda else
                           "unknown", sm_count=int(props.multi_processor_count),
                           sram_per_sm=sram, l2=int(getattr(props, "L2_cache_size", 0) or 0),
                           memory_free=int(free), memory_total=int(total),
                           versions={"torch": str(torch.__version__),
                                     "cuda": str(torch.version.cuda)},
                           source="torch.cuda.get_device_properties")

    def matmul(self, dtype: str, n: int) -> Kernel:
        a, b = (self.torch.randn(n, n, device="cuda", dtype=self._dtypes[dtype]) for _ in "ab")
        return lambda: self.torch.matmul(a, b)

    def stream(self, kind: str, elements: int) -> Kernel:
        a, b, c = (self.torch.empty(elements, device="cuda").fill_(v) for v in (0.0, 1.0, 2.0))
        if kind == "copy":
            return lambda: a.copy_(b)
        return lambda: self.torch.add(b, c, alpha=3.0, out=a)

    def projection(self, d: int, rows: int) -> Callable[[int], Kernel]:
        bf16 = self.torch.bfloat16
        w = self.torch.randn(d, d, device="cuda", dtype=bf16)
        x = self.torch.randn(rows, d, device="cuda", dtype=bf16)
        return lambda t: (lambda: self.torch.matmul(x[:t], w))

    def attention(self, T: int, heads: int, head_dim: int) -> dict[str, Kernel]:
        torch, bf16 = self.torch, self.torch.bfloat16
        q, k, v = (torch.randn(1, heads, T, head_dim, device="cuda", dtype=bf16) for _ in "qkv")
        mask = torch.full((T, T), float("-inf"), device="cuda", dtype=bf16).triu(1)

        def naive() -> Any:
            s = torch.matmul(q, k.transpose(-1, -2)) * (1 / math.sqrt(head_dim))
            return torch.matmul(torch.softmax(s + mask, dim=-1), v)

        sdpa = torch.nn.functional.scaled_dot_product_attention
        return {"naive": naive, "sdpa": lambda: sdpa(q, k, v, is_causal=True)}

    def release(self) -> None:
        self.torch.cuda.empty_cache()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def measure_gpu(quick: bool = False, *, device: Device | None = None,
                timer: Timer | None = None) -> dict[str, Any]:
    """A hardware document (the dict :func:`.hwfile.toml_document` writes) for ``device``
    (default GPU 0 through PyTorch), each kernel timed by ``timer`` (default CUDA events)."""
    device = device if device is not None else TorchDevice()
    timer = timer or cuda_timer
    facts = device.facts()
    n, repeats = (4096, 5) if quick else (8192, 10)
    peak = {}
    for dtype in ("bf16", "fp32"):
        s = summarize(timer(device.matmul(dtype, n), repeats)).rate(2.0 * n**3)
        peak[dtype] = {"value": format_rate(s.median, "FLOP/s"),
                       "source": f"roofline measure: torch.matmul {n}^3 {dtype} on "
                                 f"{facts.name}, median of {s.runs} (CUDA events)",
                       "min": format_rate(s.min, "FLOP/s"), "max": format_rate(s.max, "FLOP/s")}
    elements = max(4 * facts.l2, 2**28) // 4  # fp32 arrays ≥ 4× the L2 (at least 1 GiB)
    elements = min(elements, int(facts.memory_free * 0.5) // 12)  # three arrays in half the free
    copy = summarize(timer(device.stream("copy", elements), repeats)).rate(8.0 * elements)
    triad = summarize(timer(device.stream("triad", elements), repeats)).rate(12.0 * elements)
    on_chip: dict[str, Any] = {"sm_count": {"value": facts.sm_count, "source": facts.source}}
    if facts.sram_per_sm:
        on_chip["sram_per_sm"] = {"value": format_bytes(facts.sram_per_sm),
                                  "source": f"{facts.source} (shared memory per multiprocessor)"}
    if facts.l2:
        on_chip["l2"] = {"value": format_bytes(facts.l2), "source": facts.source}
    return {
        "name": f"this-machine-gpu0-{facts.name}".replace(" ", "-"),
        "vendor": facts.vendor,
        "kind": "gpu",
        "notes": "Measured by `roofline measure` on this machine's GPU 0.",
        "peak_flops": peak,
        "memory": {
            "bandwidth": {"value": format_rate(triad.median, "B/s"),
                          "source": f"roofline measure: triad a = b + s*c, 3 fp32 arrays of "
                                    f"{format_bytes(4 * elements)}, 12 bytes/element, median "
                                    f"of {triad.runs}",
                          "min": format_rate(triad.min, "B/s"),
                          "max": format_rate(triad.max, "B/s"),
                          "note": f"copy: {format_rate(copy.median, 'B/s')} median"},
            "capacity": {"value": format_bytes(facts.memory_total), "source": facts.source}},
        "on_chip": on_chip,
        "provenance": {"gpu": facts.name, **facts.versions, "date": _now()},
    }


def validate_gpu(hw: Any, quick: bool = False, tokens: Sequence[int] | None = None,
                 attn_tokens: Sequence[int] | None = None, heads: int = 16,
                 head_dim: int = 128, *, device: Device | None = None,
                 timer: Timer | None = None) -> Validation:
    """A :class:`.validation.Validation` of the bf16 projection and of naive vs SDPA attention
    on ``device`` (default GPU 0), against the model for ``hw`` (the GPU's hardware file, loaded
    like any other). No per-call overhead term: launch cost is inside the timed runs."""
    device = device if device is not None else TorchDevice()
    timer = timer or cuda_timer
    facts = device.facts()
    d = 8192
    while 2 * d * d < 4 * facts.l2:  # bf16 weights ≥ 2× the L2
        d *= 2
    tokens = list(tokens or ([4**i for i in range(7)] if quick else [2**i for i in range(15)]))
    attn_tokens = list(attn_tokens or ([512, 1024, 2048] if quick else
                                       [512, 1024, 2048, 4096, 8192]))
    if hw.sram_per_sm:
        m_sram, m_source = float(hw.sram_per_sm), f"hardware file on_chip.sram_per_sm ({hw.path})"
    elif facts.sram_per_sm:
        m_sram, m_source = float(facts.sram_per_sm), facts.source
    else:
        raise RuntimeError("shared memory per SM unknown: FlashAttention's M cannot be set")
    machine = Machine.from_hardware(hw, "bf16")
    repeats = 5 if quick else 10
    rows = device.projection(d, max(tokens))
    proj = {t: summarize(timer(rows(t), repeats)) for t in tokens}
    attn: dict[str, dict[int, tuple[Stats, int]]] = {"naive": {}, "sdpa": {}}
    for t in attn_tokens:
        for mode, kernel in device.attention(t, heads, head_dim).items():
            attn[mode][t] = (summarize(timer(kernel, repeats)), 0)
    device.release()
    note = (f"{heads} heads of dimension {head_dim}, one sequence, bf16. `naive`: matmul, "
            "softmax, matmul (scores materialised); `sdpa`: scaled_dot_product_attention("
            f"is_causal=True), predicted with FlashAttention Algorithm 1's traffic at "
            f"M = {format_bytes(m_sram)} ({m_source}). Timed on the device; no per-call "
            "overhead term (launch cost is inside the timed runs).")
    sizing = f"bf16 weights {format_bytes(2 * d * d)} ≥ 2× the L2 ({format_bytes(facts.l2)})"
    return Validation(machine=machine, projection=projection_sweep(proj, d, d, sizing, machine),
                      attention=attention_sweep(attn, heads, head_dim, m_sram, m_source, note,
                                                machine))
