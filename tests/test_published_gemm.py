"""Published GEMM timings (published/gemm.toml): the shipped file loads; every row names a shipped
device that has its data type; none beats the roofline bound of its GEMM, computed here by hand;
the fit rows are the ones the hardware files' [estimate].flops come from; the file's format is
refused where malformed, in one line naming the entry."""

import pytest

from roofline.errors import SpecError
from roofline.specs.hardware import load_hardware
from roofline.specs.published_gemm import (GEMM_DTYPES, USES, load_gemm_measurements,
                                           read_gemm_measurements)

MEASUREMENTS = load_gemm_measurements()


def _bound_s(m):
    """The roofline time of C (m×n) = A (m×k)·B (k×n): the larger of the FLOPs over the dense peak
    and the bytes over the memory bandwidth; A and B read once (1 byte an element in fp8, 2 in
    bf16/fp16), C written once in BF16."""
    hw = load_hardware(m.device)
    flops = 2 * m.m * m.n * m.k
    b_in = 1 if m.dtype == "fp8" else 2
    q = (m.m * m.k + m.k * m.n) * b_in + m.m * m.n * 2
    return max(flops / hw.peak_flops[m.dtype], q / hw.memory_bandwidth)


def test_the_shipped_file_loads_with_small_and_large_shapes():
    assert 15 <= len(MEASUREMENTS) <= 40
    assert {m.dtype for m in MEASUREMENTS} <= set(GEMM_DTYPES)
    assert {m.use for m in MEASUREMENTS} == set(USES)
    assert {"bf16", "fp8"} <= {m.dtype for m in MEASUREMENTS}
    # rows whose output has fewer tiles than the device has SMs (M = 64, 128) and large ones
    assert min(m.m for m in MEASUREMENTS) <= 64 and max(m.m for m in MEASUREMENTS) >= 8192
    assert {"H100-SXM", "A100-80GB-SXM", "B200"} <= {m.device for m in MEASUREMENTS}


@pytest.mark.parametrize("m", MEASUREMENTS, ids=lambda m: f"{m.kernel}-{m.device}-{m.dtype}-"
                         f"{m.m}x{m.n}x{m.k}")
def test_each_row_names_a_shipped_device_with_its_dtype(m):
    hw = load_hardware(m.device)  # an unknown name raises
    assert m.dtype in hw.peak_flops
    assert m.time_s == pytest.approx(2 * m.m * m.n * m.k / (m.tflops * 1e12))


@pytest.mark.parametrize("m", MEASUREMENTS, ids=lambda m: f"{m.kernel}-{m.device}-{m.dtype}-"
                         f"{m.m}x{m.n}x{m.k}")
def test_no_row_beats_the_bound_of_its_gemm(m):
    assert _bound_s(m) <= m.time_s


def test_the_bound_is_not_loose_everywhere():
    ratios = [_bound_s(m) / m.time_s for m in MEASUREMENTS]
    assert max(ratios) > 0.8  # the best large GEMMs come within 20 % of the peak


def test_deepgemm_small_m_row_by_hand():
    """DeepGEMM's README (H800 SXM5, the H100 SXM's compute and memory): M = 64, N = 2112,
    K = 7168, 206 TFLOP/s and 1688 GB/s. By hand: 15.87 MB of FP8 A and B and BF16 C over
    3.35 TB/s (4.74 µs) against 9.41 µs measured; the source's own bandwidth agrees."""
    (m,) = [m for m in MEASUREMENTS if m.kernel == "DeepGEMM" and (m.m, m.n, m.k) == (64, 2112, 7168)]
    q = 64 * 7168 + 7168 * 2112 + 64 * 2112 * 2
    assert q / m.time_s == pytest.approx(1688e9, rel=2e-3)
    assert _bound_s(m) == pytest.approx(q / 3.35e12)
    assert 0.45 < _bound_s(m) / m.time_s < 0.55


def test_fit_rows_set_the_estimate_flops_fraction():
    """Each fit row is the measured TFLOP/s over its device's dense peak that the hardware file's
    [estimate].flops gives (to its two decimals)."""
    fits = [m for m in MEASUREMENTS if m.use == "fit"]
    assert 5 <= len(fits) <= 12 and len({m.device for m in fits}) == len(fits)
    for m in fits:
        hw = load_hardware(m.device)
        assert hw.estimate, m.device
        assert hw.estimate["flops"] == pytest.approx(m.tflops * 1e12 / hw.peak_flops[m.dtype],
                                                     abs=0.006), m.device


def _file(tmp_path, body):
    path = tmp_path / "g.toml"
    path.write_text(body)
    return path


GOOD = """[[measurement]]
kernel = "k"
version = "v"
device = "H100-SXM"
dtype = "bf16"
m = 4096
n = 4096
k = 4096
tflops = 700.0
use = "check"
source = "a paper"
read = "table 1"
confidence = "high"
"""


def test_a_good_file_reads(tmp_path):
    (m,) = read_gemm_measurements(_file(tmp_path, GOOD))
    assert (m.m, m.n, m.k, m.tflops, m.note) == (4096, 4096, 4096, 700.0, "")
    assert m.flops == 2 * 4096**3 and m.input_bytes == 2


@pytest.mark.parametrize("change, where, rule", [
    (("m = 4096", "m = 0"), "m", "must be a positive integer"),
    (("k = 4096", "k = -8"), "k", "must be a positive integer"),
    (("n = 4096", "n = 4096.0"), "n", "must be a positive integer"),
    (("tflops = 700.0", "tflops = 0"), "tflops", "must be a number"),
    (("tflops = 700.0", 'tflops = "700"'), "tflops", "must be a number"),
    (('dtype = "bf16"', 'dtype = "fp32"'), "dtype", "must be one of bf16, fp16, fp8"),
    (('use = "check"', 'use = "both"'), "use", "must be one of fit, check"),
    (('confidence = "high"', 'confidence = "sure"'), "confidence", "must be one of"),
    (('read = "table 1"\n', ""), "read", "missing required key"),
    (("k = 4096", "k = 4096\nbatch = 1"), "batch", "unknown key"),
    (('source = "a paper"', 'source = ""'), "source", "must be a non-empty string"),
])
def test_a_malformed_measurement_is_one_line_naming_it(tmp_path, change, where, rule):
    with pytest.raises(SpecError) as err:
        read_gemm_measurements(_file(tmp_path, GOOD + "\n" + GOOD.replace(*change)))
    message = str(err.value)
    assert f"measurement[1].{where}" in message and rule in message and "\n" not in message


def test_a_file_of_anything_else_is_refused(tmp_path):
    with pytest.raises(SpecError, match="unknown key"):
        read_gemm_measurements(_file(tmp_path, 'title = "x"\n' + GOOD))
    with pytest.raises(SpecError, match="needs at least one"):
        read_gemm_measurements(_file(tmp_path, "# nothing\n"))
