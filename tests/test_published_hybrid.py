"""Published engine steps (published/hybrid.toml: Sarathi-Serve's measured batches) against the
bound of `roofline hybrid` at the same step: no row may beat it, two rows are expanded by hand,
and a malformed row is one clear error."""

from __future__ import annotations

import pytest

from roofline.errors import SpecError

# Yi-34B-200K (HF config): D 7168, L 60, 56 query and 8 key/value heads of 128, F 20480, V 64,000
D, L, HQ, HKV, DH, F, V = 7168, 60, 56, 8, 128, 20480, 64000
LAYER = D * (2 * D + 2 * HKV * DH) + 3 * D * F  # one layer's projection weights, norms left out
A100_PCIE = (312e12, 1.935e12)  # A100 datasheet r4, 80GB PCIe: dense bf16 FLOP/s, HBM bytes/s


def test_no_published_row_beats_its_bound():
    from roofline.docs.hybrid_table import hybrid_checks

    checks = hybrid_checks()
    assert len(checks) >= 30
    assert {c.kind for c in checks} == {"decodes", "chunk", "hybrid", "chunked_prefill"}
    for c in checks:
        m = c.measurement
        assert c.holds, (m.metric, m.shape, m.time_ms, c.bound_s)
        assert 0.1 < c.tightness <= 1  # a bound far below every engine would say little


def test_a_decode_step_against_the_weights_read_by_hand():
    """One decode at TP 2 reads each device's half of the layers' weights and of the LM head
    (2 bytes each): the bound is at least that over the bandwidth, and the KV cache (one
    sequence: 2·L·1020·8·128·2 B, halved), activations and all-reduces add only a little."""
    from roofline.docs.hybrid_table import hybrid_checks

    row = next(c for c in hybrid_checks()
               if c.kind == "decodes" and c.measurement.decodes == 1)
    weights = (L * LAYER + D * V) * 2 / 2  # the layers and the LM head, halved over 2 devices
    cache = 2 * L * 1020 * HKV * DH * 2 / 2
    by_hand = (weights + cache) / A100_PCIE[1]
    assert by_hand == pytest.approx(17.60e-3, rel=1e-3)  # 33.93 GB + 0.125 GB
    assert by_hand <= row.bound_s <= by_hand * 1.03


def test_a_prefill_step_against_its_flops_by_hand():
    """A 1,024-token prefill at TP 2 is compute-bound: each device does half of 2·T per weight of
    the layers and the causal attention's 2·T²·d_h·n_q a layer (FlashAttention-2 §4.1's 4·T²·d·h
    halved by the mask); the bound is at least that at the peak, its memory-bound element-wise
    operations and all-reduces adding a few per cent."""
    from roofline.docs.hybrid_table import hybrid_checks

    row = next(c for c in hybrid_checks()
               if c.kind == "chunk" and c.measurement.chunk == 1024)
    T = 1024
    flops = (2 * T * L * LAYER + L * 2 * T * T * DH * HQ) / 2
    by_hand = flops / A100_PCIE[0]
    assert by_hand == pytest.approx(111.3e-3, rel=2e-3)
    assert by_hand <= row.bound_s <= by_hand * 1.1


def test_piggybacked_decodes_cost_little_in_both():
    """Sarathi-Serve's Table 2: 3 decodes beside a 1,021-token chunk cost the step well under 1 %
    over a 1,024-token prefill, measured; the bound agrees within 1 %."""
    from roofline.docs.hybrid_table import hybrid_checks

    checks = hybrid_checks()
    hybrid = next(c for c in checks if c.kind == "hybrid")
    alone = next(c for c in checks if c.kind == "chunk" and c.measurement.chunk == 1024)
    assert hybrid.measurement.time_s / alone.measurement.time_s == pytest.approx(1, abs=0.01)
    assert hybrid.bound_s / alone.bound_s == pytest.approx(1, abs=0.01)


def test_a_chunked_prompt_is_the_sum_of_its_steps():
    """2,047 tokens in chunks of 512: four steps after 0, 512, 1,024 and 1,536 tokens."""
    from roofline.api import setting
    from roofline.docs.hybrid_table import hybrid_checks
    from roofline.serving.hybrid import step

    row = next(c for c in hybrid_checks() if c.kind == "chunked_prefill"
               and (c.measurement.prompt, c.measurement.chunk) == (2047, 512))
    s = setting("A100-80GB-PCIe", "Yi-34B-200K", dtype="bf16", tp=2, fusion="elementwise")
    steps = [step(s, min(512, 2047 - done), done, 0, 0).time_s for done in (0, 512, 1024, 1536)]
    assert row.bound_s == pytest.approx(sum(steps), rel=1e-12)


def test_the_conversion_by_hand():
    """figure-2/decode.csv prints seconds: batch 1's 0.0468... s is 46.803 ms."""
    from roofline.specs.published_hybrid import load_hybrid_measurements

    first = next(m for m in load_hybrid_measurements() if m.metric == "step"
                 and m.chunk == 0 and m.decodes == 1)
    assert first.time_ms == pytest.approx(46.803, abs=1e-3) and first.context == 1020


_ROW = {"engine": '"e"', "version": '"1"', "device": '"H100-SXM"', "model": '"Llama-2-7B"',
        "dtype": '"fp16"', "tp": "1", "metric": '"step"', "chunk": "512", "decodes": "4",
        "context": "1024", "time_ms": "100", "source": '"s"', "read": '"r"',
        "confidence": '"high"'}


@pytest.mark.parametrize("change, where", [
    ({"time_ms": "-5"}, "time_ms"), ({"tp": "0"}, "tp"), ({"dtype": '"fp7"'}, "dtype"),
    ({"speed": "3"}, "speed"), ({"metric": '"decode"'}, "metric"),
    ({"chunk": "0", "decodes": "0", "context": None}, "chunk"),
    ({"context": None}, "context"), ({"decodes": "0"}, "context"),
    ({"chunk": "-1"}, "chunk"), ({"chunk": "0", "done": "8"}, "done"),
    ({"metric": '"chunked_prefill"', "prompt": "2048", "decodes": None, "context": None,
      "chunk": "0"}, "chunk"),
    ({"metric": '"chunked_prefill"', "prompt": "2048"}, "context")])
def test_a_malformed_row_is_one_line(tmp_path, change, where):
    from roofline.specs.published_hybrid import read_hybrid_measurements

    row = {k: v for k, v in {**_ROW, **change}.items() if v is not None}
    path = tmp_path / "h.toml"
    path.write_text("[[measurement]]\n" + "".join(f"{k} = {v}\n" for k, v in row.items()))
    with pytest.raises(SpecError, match=rf"measurement\[0\]\.{where}") as e:
        read_hybrid_measurements(path)
    assert "\n" not in str(e.value)
