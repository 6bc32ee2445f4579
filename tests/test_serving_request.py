"""A request end to end (issue 30, part 2): output length 1 is a prefill, the decode part is the
decode steps one by one and the closed forms' sums, memory by hand, bad input refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from roofline.errors import InputError


@pytest.fixture(scope="module")
def h100():
    from roofline.api import setting

    return setting("H100-SXM", "Llama-3-8B", batch=4)


def test_one_output_token_is_the_prefill(h100):
    from roofline.api import prefill
    from roofline.serving.request import request

    r = request(h100, 3000, 1)
    p = prefill("H100-SXM", "Llama-3-8B", [3000], batch=4).points[0]
    assert r.decode_s == 0 and r.decode_flops == 0 and r.first_tpot_s == 0
    assert r.total_s == pytest.approx(p.time_s, rel=1e-12)


def test_decode_part_is_the_steps_one_by_one(h100):
    from roofline.evaluate.phases import decode
    from roofline.serving.request import request

    r = request(h100, 1000, 40)
    steps = [decode(h100, c) for c in range(1000, 1039)]
    assert r.decode_s == pytest.approx(sum(d.time_s for d in steps), rel=1e-12)
    assert r.decode_bytes == pytest.approx(sum(d.bytes for d in steps), rel=1e-12)
    assert (r.first_tpot_s, r.last_tpot_s) == pytest.approx((steps[0].time_s, steps[-1].time_s))


def test_decode_part_agrees_with_the_closed_form_sums(h100):
    """request.decode_flops and .decode_bytes (SymPy's summation over the contexts) at the
    setting's numbers: the numeric sum of the generated steps."""
    from roofline.derive.hybrid import request_decode_bytes, request_decode_flops
    from roofline.evaluate import scalar
    from roofline.serving.request import request

    r = request(h100, 2048, 200)
    arch = h100.architecture
    assert scalar(request_decode_flops(arch), h100, T=2048, T_out=200) == \
        pytest.approx(r.decode_flops, rel=1e-12)
    assert scalar(request_decode_bytes(arch), h100, T=2048, T_out=200) == \
        pytest.approx(r.decode_bytes, rel=1e-12)


def test_memory_by_hand(h100):
    """Llama-3-8B keeps 2·32 layers·8 heads·128·2 bytes = 131,072 bytes a token a sequence."""
    from roofline.serving.request import request

    r = request(h100, 2048, 128)
    assert r.kv_cache_bytes == 4 * (2048 + 127) * 131_072
    weights = r.memory_bytes - r.kv_cache_bytes
    assert r.max_batch_at_end == (80e9 - weights) // ((2048 + 127) * 131_072)
    assert r.max_batch_at_prompt == (80e9 - weights) // (2048 * 131_072)


def test_the_bound_is_at_least_every_batch_that_fits(h100):
    from roofline.serving.request import request

    r = request(h100, 512, 256)
    for batch in (1, 16, 64, r.max_batch_at_prompt):
        mine = request(replace(h100, batch=batch), 512, 256)
        assert mine.requests_per_s <= r.bound_requests_per_s * (1 + 1e-12)
    assert request(replace(h100, batch=r.max_batch_at_prompt), 512, 256).requests_per_s == \
        pytest.approx(r.bound_requests_per_s)


def test_tensor_parallel_request_is_one_devices_share():
    from roofline.api import request, setting
    from roofline.evaluate.phases import decode

    r = request("H100-SXM", "Llama-3-70B", prompt=1000, output=3, tp=4)
    s = setting("H100-SXM", "Llama-3-70B", tp=4)
    assert r.decode_s == pytest.approx(decode(s, 1000).time_s + decode(s, 1001).time_s)


@pytest.mark.parametrize("options, where", [({"pp": 2}, "pp"), ({"output": 0}, "output"),
                                            ({"output": 10**8}, "output")])
def test_bad_requests_are_refused(options, where):
    from roofline.api import request

    kwargs = {"prompt": 100, "output": 10, "tp": 2, **options}
    with pytest.raises(InputError, match=where):
        request("H100-SXM", "Llama-3-70B", **kwargs)


def test_decode_bound_is_at_the_largest_batch_that_fits(h100):
    """Decode alone: B/TPOT grows with the batch (the weights shared), so its bound is at the
    most sequences that fit at the end: their 127 steps' tokens over the steps' sum, each step
    ``decode``'s at its own context (a second road: the steps one by one), above this batch's
    own rate and above the rate of the last step alone (the old figure, which TensorRT-LLM's
    Llama-2-7B row at 128/2,048 tokens beat)."""
    from roofline.evaluate.phases import decode
    from roofline.serving.request import request

    r = request(h100, 2048, 128)
    most = r.max_batch_at_end
    steps = sum(decode(replace(h100, batch=most), 2048 + k).time_s for k in range(127))
    assert r.decode_bound_tokens_per_s == pytest.approx(most * 127 / steps, rel=1e-9)
    assert 4 / r.last_tpot_s < r.decode_bound_tokens_per_s
    assert most / decode(replace(h100, batch=most), 2048 + 126).time_s \
        < r.decode_bound_tokens_per_s
