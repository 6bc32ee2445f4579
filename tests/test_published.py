"""Published forward-attention measurements (published/attention.toml) against the default
bound: none may beat it; one row checked by hand; the file's format refused where malformed."""

import pytest

from roofline.errors import SpecError
from roofline.evaluate.published import check
from roofline.specs.hardware import load_hardware
from roofline.specs.published import load_measurements, read_measurements

MEASUREMENTS = load_measurements()


def test_the_table_covers_kernels_devices_shapes_and_masks():
    assert len(MEASUREMENTS) >= 200
    assert {"FlashAttention-2", "FlashAttention-3", "cuDNN 9.1", "Triton"} <= {
        m.kernel for m in MEASUREMENTS}
    assert {"H100-SXM", "H100-PCIe", "A100-80GB-SXM"} <= {m.device for m in MEASUREMENTS}
    assert {64, 128, 256} <= {m.head_dim for m in MEASUREMENTS}
    assert {True, False} == {m.causal for m in MEASUREMENTS}
    assert {"fp16", "fp8"} <= {m.dtype for m in MEASUREMENTS}


def test_no_published_measurement_beats_the_default_bound():
    checks = [check(m, load_hardware(m.device)) for m in MEASUREMENTS]
    beaten = [(c.measurement.kernel, c.measurement.seq_len, round(c.fraction, 3))
              for c in checks if not c.holds]
    assert beaten == []
    # and the bound is not loose everywhere: the best kernels come within 10 % of it
    assert max(c.fraction for c in checks) > 0.9


def test_the_first_releases_sram_only_bound_is_beaten():
    """Charging every re-read to HBM (no cache: the FlashAttention papers' count, and the first
    release's default) gives a bound that many published kernels run faster than."""
    checks = [check(m, load_hardware(m.device)) for m in MEASUREMENTS]
    assert sum(not c.uncached_holds for c in checks) >= 50


def test_flashattention3_at_head_dimension_256_by_hand():
    """FlashAttention-3 (arXiv 2407.08608, Fig. 5): H100-SXM, FP16, d = 256, T = 16,384, batch 1,
    8 heads, no mask, 756 TFLOP/s. By hand: K and V re-read by each of T/128 row blocks, all of
    it through the L2; the FLOPs exact (4·T²·d·heads without a mask)."""
    (m,) = [m for m in MEASUREMENTS if m.kernel == "FlashAttention-3" and m.dtype == "fp16"
            and m.head_dim == 256 and m.seq_len == 16384 and not m.causal]
    hw = load_hardware("H100-SXM")
    t, d, heads = 16384, 256, 8
    flops = 4 * t * t * d * heads
    l2 = heads * 2 * (2 * t * d + t + 2 * d * t * (t // 128))  # Q, O, logsumexp; K, V per block
    bound = max(flops / 989.4e12, l2 / 6.2e12)  # the datasheet's peak, the file's L2 estimate
    c = check(m, hw)
    assert m.time_s == pytest.approx(flops / 756e12)
    assert c.bound_s == pytest.approx(bound, rel=1e-9) and c.level == "l2"
    assert 0.9 < c.fraction < 1


def _file(tmp_path, body):
    path = tmp_path / "m.toml"
    path.write_text(body)
    return path


GOOD = """[[measurement]]
kernel = "k"
version = "v"
device = "H100-SXM"
dtype = "fp16"
head_dim = 128
seq_len = 1024
batch = 16
heads = 16
kv_heads = 16
causal = false
tflops = 300.0
convention = "flashattention"
source = "a paper"
read = "text"
confidence = "high"
"""


def test_a_good_file_reads(tmp_path):
    (m,) = read_measurements(_file(tmp_path, GOOD))
    assert m.flops == 4 * 1024**2 * 128 * 16 * 16


@pytest.mark.parametrize("change, where, rule", [
    (("head_dim = 128", "head_dim = 0"), "head_dim", "must be a positive integer"),
    (("causal = false", 'causal = "no"'), "causal", "must be true or false"),
    (("tflops = 300.0", "tflops = -1"), "tflops", "must be a number"),
    (('convention = "flashattention"', 'convention = "mine"'), "convention", "must be one of"),
    (("kv_heads = 16", "kv_heads = 3"), "kv_heads", "must divide heads"),
    (('read = "text"\n', ""), "read", "missing required key"),
    (("batch = 16", "batch = 16\nextra = 1"), "extra", "unknown key"),
])
def test_a_malformed_measurement_is_one_line_naming_it(tmp_path, change, where, rule):
    with pytest.raises(SpecError) as err:
        read_measurements(_file(tmp_path, GOOD.replace(*change)))
    message = str(err.value)
    assert f"measurement[0].{where}" in message and rule in message and "\n" not in message
