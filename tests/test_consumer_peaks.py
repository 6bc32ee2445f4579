"""A device file's compute roof is a ceiling: no published measurement beats it, and it is the
tensor rate at a stated clock that the card cannot exceed (issue "Third sweep": FlashAttention-2
on an RTX 4090 measures 166-173 TFLOP/s against the 165.2 its whitepaper rates at the 2,520 MHz
boost clock; GeForce cards run above that clock and have a separate, doubled FP16-accumulate
rate).

The RTX 4090's roof is computed here by hand from its published factors: 128 SMs (Ada whitepaper,
Appendix A), the per-SM rates that the whitepaper's figures imply at its 2,520 MHz boost clock,
and 3,105 MHz, the maximum graphics clock nvidia-smi prints for the card."""

import pytest

from roofline.specs.hardware import load_hardware
from roofline.specs.published import load_measurements

MEASUREMENTS = load_measurements()

# Kernels whose matrix products accumulate in FP32 (FlashAttention-2 and -3, cuDNN and Triton
# attention; tvm.tl's flash_perf.md: "All matmul use fp16->fp32 mma"): on a GeForce card they
# run at the FP32-accumulate rate, which is the file's bf16 peak (BF16 has no other).
FP32_ACCUMULATE = {"FlashAttention-2", "FlashAttention-3", "cuDNN", "cuDNN 9.1", "Triton",
                   "tvm.tl"}


def _rate(m):
    """The measurement's FLOP/s counting exactly the FLOPs of its two matrix products:
    4·d·heads·batch per (query, key) pair, T(T+1)/2 pairs under a causal mask, T² without."""
    pairs = m.seq_len * (m.seq_len + 1) / 2 if m.causal else m.seq_len**2
    return 4 * m.head_dim * m.heads * m.batch * pairs / m.time_s


def test_no_published_measurement_beats_its_devices_compute_roof():
    beaten = [(m.kernel, m.device, m.dtype, m.head_dim, m.seq_len, round(_rate(m) / 1e12, 2))
              for m in MEASUREMENTS
              if _rate(m) > load_hardware(m.device).peak_flops[m.dtype]]
    assert beaten == []


def test_fp32_accumulate_kernels_stay_under_the_fp32_accumulate_rate():
    """FlashAttention-2 in fp16 accumulates in FP32: on a GeForce card it is held against the
    FP32-accumulate rate (the bf16 peak), not only the doubled fp16 one."""
    rows = [m for m in MEASUREMENTS if m.kernel in FP32_ACCUMULATE and m.dtype in ("fp16", "bf16")]
    beaten = [(m.kernel, m.device, m.head_dim, m.seq_len, round(_rate(m) / 1e12, 2))
              for m in rows if _rate(m) > load_hardware(m.device).peak_flops["bf16"]]
    assert beaten == []
    # the RTX 4090 rows are there, and they beat the rated boost clock's 165.2 TFLOP/s: a roof
    # at that clock would fail this test
    rtx = [m for m in rows if m.device == "RTX-4090"]
    assert len(rtx) >= 20
    assert max(_rate(m) for m in rtx) > 165.2e12
    assert max(m.tflops for m in rtx) == 173.04  # ROCm/flash-attention issue #27, T = 16,384


# NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A, GeForce RTX 4090: 128 SMs, boost clock
# 2520 MHz, and at that clock (dense) FP32 82.6, FP16/BF16 tensor with FP32 accumulate 165.2,
# FP16 with FP16 accumulate 330.3, FP8 with FP32 accumulate 330.3, FP8 with FP16 accumulate
# 660.6, INT8 660.6 TOP/s. nvidia-smi -q: "Max Clocks: Graphics 3105 MHz" (a Founders Edition,
# T-K-233/Diffusion-Benchmark; eight partner cards, thamada/nvidia-smi package/RTX4090_smi.py).
SMS, BOOST, MAX_CLOCK = 128, 2.52e9, 3.105e9
WHITEPAPER = {  # FLOP per clock per SM: the figure at the boost clock, printed
    "fp32": (256, 82.6e12),  # 128 FP32 lanes x 2 (CUDA guide: 128 results/clock/SM on 8.9)
    "bf16": (512, 165.2e12),  # FP32 accumulate
    "fp16": (1024, 330.3e12),  # FP16 accumulate (GeForce: twice the FP32-accumulate rate)
    "fp8": (2048, 660.6e12),  # FP16 accumulate (330.3 with FP32 accumulate)
    "int8": (2048, 660.6e12),
}


@pytest.mark.parametrize("dtype", sorted(WHITEPAPER))
def test_the_per_sm_rates_reproduce_the_whitepaper_at_the_boost_clock(dtype):
    per_sm, printed = WHITEPAPER[dtype]
    assert SMS * per_sm * BOOST == pytest.approx(printed, abs=0.05e12)  # printed to 0.1 TFLOP/s


@pytest.mark.parametrize("dtype", sorted(WHITEPAPER))
def test_rtx_4090_roof_is_sms_times_per_sm_rate_times_the_maximum_clock(dtype):
    hw = load_hardware("RTX-4090")
    per_sm, _ = WHITEPAPER[dtype]
    assert hw.sm_count == SMS
    assert hw.peak_flops[dtype] == pytest.approx(SMS * per_sm * MAX_CLOCK, rel=1e-12)
    assert hw.peak_flops[dtype] > WHITEPAPER[dtype][1]  # above the rated boost clock's figure


def test_rtx_4090_shared_memory_estimate_uses_the_same_clock():
    # 128 B/clock/SM (CUDA guide: 32 banks x 32 bits) x 128 SMs x 3.105 GHz
    assert load_hardware("RTX-4090").sram_bandwidth == pytest.approx(128 * SMS * MAX_CLOCK,
                                                                     rel=1e-12)


# Datacenter Ada cards do not boost past their rated clock: nvidia-smi -q prints "Max Clocks:
# Graphics" = "Max Customer Boost Clocks" = the datasheet's boost (thamada/nvidia-smi:
# gls/L4_smi.py 2040 MHz, nvsim/L40S_smi.py 2520 MHz); their tensor cores run FP16/BF16 with FP32
# accumulate at the full 1024 FLOP/clock/SM (L40S datasheet: FP8 733 = 2 x 366.4). SMs: L4 58
# (deviceQuery, gls/L4_deviceQuery.py: "(058) Multiprocessors"; 7,424 CUDA cores / 128), L40S 142.
DATACENTER = {"L4": (58, 2.04e9), "L40S": (142, 2.52e9)}
PER_SM = {"fp32": 256, "tf32": 512, "bf16": 1024, "fp16": 1024, "fp8": 2048, "int8": 2048}


@pytest.mark.parametrize("name", sorted(DATACENTER))
@pytest.mark.parametrize("dtype", sorted(PER_SM))
def test_datacenter_ada_roof_is_at_least_the_rate_at_the_maximum_clock(name, dtype):
    sms, clock = DATACENTER[name]
    hw = load_hardware(name)
    assert hw.peak_flops[dtype] >= sms * PER_SM[dtype] * clock * (1 - 1e-12)


@pytest.mark.parametrize("name, clock", [("RTX-4090", "3105 MHz"), ("L4", "2040 MHz"),
                                         ("L40S", "2520 MHz")])
def test_each_ada_file_states_the_clock_of_its_compute_roof(name, clock):
    hw = load_hardware(name)
    assert clock in hw.notes
    for dtype in hw.peak_flops:
        key = f"peak_flops.{dtype}"
        assert clock in hw.sources[key] + hw.quantity_notes.get(key, ""), key
