"""The optional GPU part of ``roofline measure`` and ``roofline validate`` (PyTorch with CUDA).

PyTorch is an optional extra (``pip install roofline[gpu]``), never a requirement: torch is
imported inside the functions, and :func:`unavailable` says why the GPU part is skipped.

Measured: bf16 and fp32 (TF32 off) dense matmul FLOP/s (n×n @ n×n, 2·n³ FLOPs) and device memory
bandwidth of copy (8 bytes per fp32 element: one read, one write) and triad a = b + s·c
(12 bytes per element), on arrays ≥ 4× the device L2; timed with CUDA events after a warm-up.
Validated: the bf16 projection over T, and causal attention as ``naive`` (scores materialised in
bf16) against ``torch.nn.functional.scaled_dot_product_attention`` (``sdpa``: a fused kernel,
predicted with FlashAttention Algorithm 1's traffic, M = the shared memory per SM).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Sequence
from typing import Any

from .hwfile import format_bytes, format_rate
from .measure import Stats, summarize

__all__ = ["unavailable", "measure_gpu", "validate_gpu"]


def unavailable() -> str | None:
    """None when PyTorch sees a CUDA device; else the reason the GPU part is skipped."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (optional: pip install 'roofline[gpu]')"
    if not torch.cuda.is_available():
        return f"PyTorch {torch.__version__} finds no CUDA device"
    return None


def _time_cuda(fn: Callable[[], Any], repeats: int, warmup: int = 2) -> list[float]:
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


def _props() -> Any:
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device())


def _sram_per_sm(props: Any) -> int | None:
    for name in ("shared_memory_per_multiprocessor", "max_shared_memory_per_multiprocessor"):
        value = getattr(props, name, None)
        if value:
            return int(value)
    return None


def measure_gpu(quick: bool = False) -> dict[str, Any]:
    """A hardware document (the dict :func:`roofline.hwfile.toml_document` writes) for GPU 0."""
    import torch

    props = _props()
    n, repeats = (4096, 5) if quick else (8192, 10)
    peak = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    for dtype, tdt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        a = torch.randn(n, n, device="cuda", dtype=tdt)
        b = torch.randn(n, n, device="cuda", dtype=tdt)
        s = summarize(_time_cuda(lambda: torch.matmul(a, b), repeats)).rate(2.0 * n**3)
        peak[dtype] = {"value": format_rate(s.median, "FLOP/s"),
                       "source": f"roofline measure: torch.matmul {n}^3 {dtype} on "
                                 f"{props.name}, median of {s.runs} (CUDA events)",
                       "min": format_rate(s.min, "FLOP/s"), "max": format_rate(s.max, "FLOP/s")}
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    free, total = torch.cuda.mem_get_info()
    elements = max(4 * l2, 2**28) // 4
    elements = min(elements, int(free * 0.5) // 12)
    a, b, c = (torch.empty(elements, device="cuda").fill_(v) for v in (0.0, 1.0, 2.0))
    copy = summarize(_time_cuda(lambda: a.copy_(b), repeats)).rate(8.0 * elements)
    triad = summarize(_time_cuda(lambda: torch.add(b, c, alpha=3.0, out=a), repeats)
                      ).rate(12.0 * elements)
    on_chip: dict[str, Any] = {"sm_count": {"value": int(props.multi_processor_count),
                                            "source": "torch.cuda.get_device_properties"}}
    sram = _sram_per_sm(props)
    if sram:
        on_chip["sram_per_sm"] = {"value": format_bytes(sram),
                                  "source": "torch.cuda.get_device_properties (shared memory "
                                            "per multiprocessor)"}
    if l2:
        on_chip["l2"] = {"value": format_bytes(l2), "source": "torch.cuda.get_device_properties"}
    return {
        "name": f"this-machine-gpu0-{props.name}".replace(" ", "-"),
        "vendor": "NVIDIA" if torch.version.cuda else "unknown",
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
            "capacity": {"value": format_bytes(total), "source": "torch.cuda.mem_get_info"}},
        "on_chip": on_chip,
        "provenance": {"gpu": str(props.name), "torch": str(torch.__version__),
                       "cuda": str(torch.version.cuda),
                       "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")},
    }


def _naive(q: Any, k: Any, v: Any, mask: Any) -> Any:
    import torch

    s = torch.matmul(q, k.transpose(-1, -2)) * (1 / math.sqrt(q.shape[-1]))
    return torch.matmul(torch.softmax(s + mask, dim=-1), v)


def validate_gpu(hw: Any, quick: bool = False, tokens: Sequence[int] | None = None,
                 attn_tokens: Sequence[int] | None = None, heads: int = 16,
                 head_dim: int = 128) -> Any:
    """A :class:`roofline.validate.Validation` of the bf16 projection and of naive vs SDPA
    attention on GPU 0, against the model for ``hw`` (the GPU's measured hardware file)."""
    import torch
    import torch.nn.functional as F

    from .validate import (Point, Validation, predict_attention, predict_projection,
                           projection_crossover)

    props = _props()
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    d = 8192
    while 2 * d * d < 4 * l2:
        d *= 2
    tokens = list(tokens or ([4**i for i in range(7)] if quick else [2**i for i in range(15)]))
    attn_tokens = list(attn_tokens or ([512, 1024, 2048] if quick else
                                       [512, 1024, 2048, 4096, 8192]))
    p_peak, beta = hw.peak("bf16"), hw.bandwidth()
    repeats = 5 if quick else 10
    w = torch.randn(d, d, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(max(tokens), d, device="cuda", dtype=torch.bfloat16)
    points = []
    for t in tokens:
        xt = x[:t]
        stats = summarize(_time_cuda(lambda: torch.matmul(xt, w), repeats))
        f, q, pred = predict_projection(t, d, d, p_peak, beta, 0.0, elem=2)
        points.append(Point(t, f, q, pred, 0.0, stats, f / p_peak + q / beta))
    m_sram = float(hw.sram_per_sm or _sram_per_sm(props) or 0)
    if not m_sram:
        raise RuntimeError("shared memory per SM unknown: FlashAttention's M cannot be set")
    attention: dict[str, list[Point]] = {"naive": [], "sdpa": []}
    for t in attn_tokens:
        q, k, v = (torch.randn(1, heads, t, head_dim, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        mask = torch.full((t, t), float("-inf"), device="cuda", dtype=torch.bfloat16).triu(1)
        for mode, fn in (("naive", lambda: _naive(q, k, v, mask)),
                         ("sdpa", lambda: F.scaled_dot_product_attention(q, k, v,
                                                                         is_causal=True))):
            stats: Stats = summarize(_time_cuda(fn, repeats))
            f, qb, pred = predict_attention(mode, t, heads, head_dim, m_sram, p_peak, beta,
                                            elem=2)
            attention[mode].append(Point(t, f, qb, pred, 0.0, stats, f / p_peak + qb / beta))
    torch.cuda.empty_cache()
    note = (f"{heads} heads of dimension {head_dim}, one sequence, bf16. `naive`: matmul, "
            "softmax, matmul (scores materialised); `sdpa`: scaled_dot_product_attention("
            f"is_causal=True), predicted with FlashAttention Algorithm 1's traffic at "
            f"M = {format_bytes(m_sram) if m_sram else 'unknown'} (shared memory per SM). "
            "Timed with CUDA events; no per-call overhead term (launch cost is inside the events).")
    return Validation(hw.name, str(hw.path), p_peak, beta, 0.0, d, d,
                      f"bf16 weights {format_bytes(2 * d * d)} ≥ 2× the L2 ({format_bytes(l2)})",
                      points, projection_crossover(d, d, p_peak, beta, elem=2), heads, head_dim,
                      m_sram, "torch.cuda.get_device_properties", attention, dtype="bf16",
                      attention_note=note)
