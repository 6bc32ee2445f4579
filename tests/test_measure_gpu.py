"""roofline.measure.gpu without a GPU: a fake device facade (facts written by hand, kernels that
carry the time the fake timer reports) checks the sizes, the rates, the hardware document, the
comparison with the model and the report of the GPU part."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from roofline.measure import gpu, predict
from roofline.measure.hwfile import write_hardware
from roofline.measure.report import markdown, write_report
from roofline.specs.hardware import load_hardware

MiB, GiB = 2**20, 2**30
PEAK = {"bf16": 1e15, "fp32": 5e13}  # FLOP/s the fake matmuls run at
TRIAD, COPY = 4e12, 3e12  # bytes/s the fake streams run at


class _Kernel:
    """A kernel that does nothing and takes ``seconds`` by the fake timer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self) -> None:
        pass


def fake_timer(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Runs at half, once, and twice the kernel's time: median = its time (repeats ≥ 3)."""
    s = fn.seconds  # type: ignore[attr-defined]
    return [0.5 * s] + [s] * (repeats - 2) + [2 * s]


class FakeDevice:
    """A torch-like facade: 132 SMs of 228 KiB shared memory, a 50 MiB L2, 80 GiB free."""

    def __init__(self, sram: int | None = 228 * 1024) -> None:
        self.built: list[tuple[Any, ...]] = []
        self.released = False
        self.sram = sram

    def facts(self) -> gpu.DeviceFacts:
        return gpu.DeviceFacts(name="Fake GPU", vendor="NVIDIA", sm_count=132,
                               sram_per_sm=self.sram, l2=50 * MiB, memory_free=80 * GiB,
                               memory_total=80 * GiB, versions={"torch": "fake"},
                               source="fake device")

    def matmul(self, dtype: str, n: int) -> _Kernel:
        self.built.append(("matmul", dtype, n))
        return _Kernel(2 * n**3 / PEAK[dtype])

    def stream(self, kind: str, elements: int) -> _Kernel:
        self.built.append(("stream", kind, elements))
        return _Kernel({"copy": 8 * elements / COPY, "triad": 12 * elements / TRIAD}[kind])

    def projection(self, d: int, rows: int) -> Callable[[int], _Kernel]:
        self.built.append(("projection", d, rows))

        def by_hand(t: int) -> _Kernel:  # 1.25 × max(F/P, Q/β), bf16: b_w = b_a = 2 bytes
            f, q = 2 * t * d * d, 2 * d * d + 2 * t * 2 * d
            return _Kernel(1.25 * max(f / PEAK["bf16"], q / TRIAD))

        return by_hand

    def attention(self, T: int, heads: int, head_dim: int) -> dict[str, _Kernel]:
        self.built.append(("attention", T, heads, head_dim))
        return {"naive": _Kernel(2e-3), "sdpa": _Kernel(1e-3)}

    def release(self) -> None:
        self.released = True


@pytest.fixture
def gpu_file(tmp_path: Path) -> Path:
    device = FakeDevice()
    doc = gpu.measure_gpu(quick=True, device=device, timer=fake_timer)
    # quick: 4096³ matmuls; streams of max(4 × 50 MiB, 1 GiB) = 2^28 bytes of fp32: 2^26 elements
    assert device.built == [("matmul", "bf16", 4096), ("matmul", "fp32", 4096),
                            ("stream", "copy", 2**26), ("stream", "triad", 2**26)]
    return write_hardware(tmp_path / "gpu.toml", doc)  # read back by the hardware reader


def test_measure_gpu_document(gpu_file: Path) -> None:
    hw = load_hardware(gpu_file)
    assert hw.name == "this-machine-gpu0-Fake-GPU" and hw.kind == "gpu"
    assert hw.peak("bf16") == 1e15 and hw.peak("fp32") == 5e13
    # the slowest run (2×) is min, the fastest (½×) max
    assert hw.ranges["peak_flops.bf16"] == pytest.approx((5e14, 2e15))
    assert hw.memory_bandwidth == 4e12 and hw.ranges["memory.bandwidth"] == pytest.approx(
        (2e12, 8e12))
    assert hw.quantity_notes["memory.bandwidth"] == "copy: 3 TB/s median"
    assert hw.memory_capacity == 80 * GiB and hw.sram_per_sm == 228 * 1024
    assert hw.sm_count == 132 and hw.provenance["gpu"] == "Fake GPU"
    assert "torch.matmul 4096^3 bf16 on Fake GPU, median of 5" in hw.sources["peak_flops.bf16"]


def test_validate_gpu_against_the_model(gpu_file: Path, tmp_path: Path) -> None:
    hw = load_hardware(gpu_file)
    device = FakeDevice()
    v = gpu.validate_gpu(hw, quick=True, tokens=[1, 16, 256, 4096], attn_tokens=[512, 1024],
                         device=device, timer=fake_timer)
    assert device.released
    # bf16 W of d×d ≥ 2 × the 50 MiB L2: 8192² · 2 = 128 MiB is short, 16384² · 2 = 512 MiB
    assert ("projection", 16384, 4096) in device.built
    m, proj = v.machine, v.projection
    assert (m.dtype, m.p_peak, m.beta, m.t_call, m.calibrated) == ("bf16", 1e15, 4e12, 0.0, False)
    assert [p.T for p in proj.points] == [1, 16, 256, 4096]
    for p in proj.points:  # the fake runs 1.25× the roofline: every ratio 1.25
        assert p.ratio == pytest.approx(1.25) and p.overhead == 0.0
        assert p.flops == 2 * p.T * 16384**2 and p.bytes == 2 * 16384**2 + 4 * p.T * 16384
    assert proj.mae == pytest.approx(0.2)  # |1/1.25 − 1|
    # ridge 1e15/4e12 = 250: 2·T·d² = 250·(2d² + 4·T·d) ⇒ T = 500·d/(2d − 1000)
    assert proj.crossover == pytest.approx(500 * 16384 / (2 * 16384 - 1000))
    attn = v.attention
    assert set(attn.forms) == {"naive", "sdpa"} and attn.m_sram == 228 * 1024
    assert attn.m_sram_source.startswith("hardware file on_chip.sram_per_sm")
    sdpa = attn.forms["sdpa"][1]  # T = 1024, 16 heads of 128: causal F = 2·16·128·T·(T + 1)
    assert sdpa.T == 1024 and sdpa.flops == 2 * 16 * 128 * 1024 * 1025
    assert sdpa.measured.median == 1e-3
    assert sdpa.predicted == predict.predict_attention("sdpa", 1024, 16, 128, 228 * 1024, 1e15,
                                                       4e12, dtype="bf16")[2]
    naive = attn.forms["naive"][0]  # T = 512: F = 4·16·128·T², Q = 2·16·(4·128·T + 4·T²)
    assert naive.flops == 4 * 16 * 128 * 512**2
    assert naive.bytes == 2 * 16 * (4 * 128 * 512 + 4 * 512**2)
    # the report: the GPU's run as a section of the CPU's, with its own figure
    both = dataclasses.replace(v, gpu=v)
    text = markdown(both)
    assert "\n## GPU\n" in text and "## Validation on this-machine-gpu0-Fake-GPU" in text
    assert "(b_w = b_a = 2 bytes)" in text
    assert "![measured against predicted](validation-gpu.png)" in text
    paths = write_report(both, tmp_path / "report")
    assert [p.name for p in paths] == ["validation.md", "validation.png", "validation-gpu.png"]


def test_validate_gpu_needs_shared_memory(tmp_path: Path) -> None:
    doc = gpu.measure_gpu(quick=True, device=FakeDevice(sram=None), timer=fake_timer)
    assert "sram_per_sm" not in doc["on_chip"]
    hw = load_hardware(write_hardware(tmp_path / "nosram.toml", doc))
    with pytest.raises(RuntimeError, match="shared memory per SM unknown"):
        gpu.validate_gpu(hw, quick=True, device=FakeDevice(sram=None), timer=fake_timer)
