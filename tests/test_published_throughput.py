"""Published request throughput (published/throughput.toml) against the bound of `roofline
request` at the same batch: no row may beat it, and a malformed file is one clear error."""

from __future__ import annotations

import pytest

from roofline.errors import SpecError


def test_no_published_row_beats_its_bound():
    from roofline.docs.throughput_table import throughput_checks

    checks = throughput_checks()
    assert len(checks) >= 7
    for c in checks:
        m = c.measurement
        assert c.holds, (m.device, m.batch, m.prompt_tokens, m.output_tokens, c.tightness)
        assert 0.3 < c.tightness <= 1  # a bound far below every engine would say little


def test_the_conversion_to_a_time_by_hand():
    """'LLaMA 7B | 768 | 1 | 128 | 128 | 19,694': 768·128 tokens at 19,694 tokens/s."""
    from roofline.specs.published_throughput import load_throughput_measurements

    first = load_throughput_measurements()[0]
    assert first.batch == 768 and first.time_s == pytest.approx(768 * 128 / 19_694)


@pytest.mark.parametrize("change, where", [
    ("output_tokens_per_s = -5", "output_tokens_per_s"), ("batch = 0", "batch"),
    ("dtype = \"fp7\"", "dtype"), ("speed = 3", "speed")])
def test_a_malformed_row_is_one_line(tmp_path, change, where):
    from roofline.specs.published_throughput import read_throughput_measurements

    key = change.split(" = ")[0]
    row = {"engine": '"e"', "version": '"1"', "device": '"H100-SXM"', "model": '"Llama-2-7B"',
           "dtype": '"fp16"', "batch": "4", "prompt_tokens": "128", "output_tokens": "128",
           "output_tokens_per_s": "100", "source": '"s"', "read": '"r"', "confidence": '"high"'}
    row[key] = change.split(" = ")[1]
    path = tmp_path / "t.toml"
    path.write_text("[[measurement]]\n" + "".join(f"{k} = {v}\n" for k, v in row.items()))
    with pytest.raises(SpecError, match=where) as e:
        read_throughput_measurements(path)
    assert "\n" not in str(e.value)


def test_no_published_row_beats_the_decode_steps_bound():
    """The decode bound `roofline request` prints (the most sequences that fit at the end, their
    tokens over their steps' sum) bounds the decode steps' own rate; a batch's rate counts the
    prefill's first token as well, so it is no theorem that a row stays under it, but a row
    above it would mean the decode steps outrun their roofline unless its prefill is tiny."""
    import warnings

    from roofline.api import setting
    from roofline.serving.request import request
    from roofline.specs.published_throughput import load_throughput_measurements

    for m in load_throughput_measurements():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = setting(m.device, m.model, dtype=m.dtype, batch=m.batch, fusion="elementwise")
        bound = request(s, m.prompt_tokens, m.output_tokens).decode_bound_tokens_per_s
        assert bound is None or m.output_tokens_per_s <= bound, (m.model, m.batch, bound)
