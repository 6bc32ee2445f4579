"""``roofline.ttft``: the public TTFT entry point, its result and its errors in argument names."""

from __future__ import annotations

import json

import numpy as np
import pytest

import roofline
from roofline import api
from roofline.errors import InputError, NoSteadyStateError
from roofline.specs.distribution import Distribution


@pytest.fixture
def stand_in(monkeypatch):
    """Prefill time = 1e-4 s per token: a 1000-token prompt takes 0.1 s."""
    monkeypatch.setattr(api, "_prefill_times",
                        lambda setting, lengths: np.asarray(lengths, dtype=float) * 1e-4)


def test_hand_numbers_and_result(stand_in):
    r = roofline.ttft("H100-SXM", "Llama-3-8B", prompt=1000, rate=5, slo=0.2)
    assert isinstance(r, roofline.TTFTResult)
    # DistServe Eq. 1 with D = 0.1 s at 5/s: 0.1 + 5·0.01/(2·0.5) = 0.15 s; target 0.2 s met up
    # to 2·0.1/(0.1·0.3) = 20/3 per second
    assert r.point.total_s == pytest.approx(0.15) and r.point.queueing_s == pytest.approx(0.05)
    assert r.point.max_rate_per_s == pytest.approx(20 / 3)
    d = r.as_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["total_s"] == pytest.approx(0.15) and d["attention"] == "kernel"
    text = str(r)
    assert text.splitlines()[0].startswith("time to first token at 5 requests/s (H100-SXM, "
                                           "Llama-3-8B, bf16, kernel attention; prompt 1000")
    assert "  total        150 ms" in text and r._repr_markdown_().startswith("```")


def test_without_a_rate_only_the_queue(stand_in):
    r = roofline.ttft("H100-SXM", "Llama-3-8B", prompt=1000)
    assert r.point is None and r.rate is None
    assert r.queue.stable_rate == pytest.approx(10)
    assert r.as_dict()["total_s"] is None and "steady state below 10 requests/s" in str(r)


def test_a_distribution_object(stand_in):
    dist = Distribution.of([500, 2500])  # 0.05 s and 0.25 s, equally likely
    r = roofline.ttft("H100-SXM", "Llama-3-8B", prompt_dist=dist, rate=5)
    # E[t] = 0.15, E[t²] = 0.0325: 0.15 + 5·0.0325 / (2·0.25) = 0.475
    assert r.point.total_s == pytest.approx(0.475)


@pytest.mark.parametrize("kwargs, option, rule", [
    ({"prompt": 1000, "rate": 0}, "rate", "the arrival rate must be a finite number > 0"),
    ({"prompt": 2**64 - 1, "rate": 1}, "prompt", "a prompt length must be a positive integer"),
    ({"prompt": 1000}, "prompt", None),  # placeholder, replaced below
    ({"prompt": 1000, "rate": 1, "batch_prompts": 0}, "batch_prompts", "the number of prompts"),
    ({"prompt": 1000, "rate": 1, "chunk": 1001}, "chunk", "a chunk must be an integer"),
    ({"prompt": 1000, "batch_prompts": 2}, "rate", "batching needs an arrival rate"),
    ({"prompt": 1000, "rate": 1, "speedup": 1.5}, "speedup", "applies only with intra-op"),
    # K derived from the model (issue 13): the stand-in's two devices are no faster, K = 1
    ({"prompt": 1000, "rate": 1, "parallel": "intra"}, "speedup", "derived K = 1 "),
    ({"prompt": 1000, "rate": 1, "replicas": 0}, "replicas", "must be an integer ≥ 1"),
    ({"prompt": 1000, "rate": 1, "attention": "flash"}, "attention", "must be one of"),
    ({"rate": 1}, "prompt", "give one of prompt (tokens) and prompt_dist (lengths)"),
])
def test_errors_name_the_argument(stand_in, kwargs, option, rule):
    if rule is None:
        kwargs, rule = {"prompt": 1000, "prompt_dist": "x.txt"}, "give one of prompt"
    with pytest.raises(InputError) as info:
        roofline.ttft("H100-SXM", "Llama-3-8B", **kwargs)
    assert info.value.option == option and info.value.rule.startswith(rule)


def test_no_steady_state_is_an_error_of_the_rate(stand_in):
    with pytest.raises(NoSteadyStateError) as info:
        roofline.ttft("H100-SXM", "Llama-3-8B", prompt=1200, rate=10)
    assert str(info.value) == ("rate: the queue has no steady state at load R·t = 1.2 ≥ 1; the "
                               "largest rate it can take is 8.33 /s (got 10)")


def test_ttft_warns_when_the_batch_does_not_fit():
    """32 prompts of 131,072 tokens batched: KV cache 2·32·8·128·131,072·2 B = 17.18 GB per
    prompt, 549.8 GB for 32, beside 16.06 GB of weights, and the live activations at their
    peak, the MLP's (3D + 3F)·2 B a row: 110,592 × 32 × 131,072 B = 463.9 GB: 1,029.7 GB in
    all, more than an H100's 80 GB."""
    import roofline

    with pytest.warns(UserWarning, match=r"the prefill of batch 32 at 131,072 tokens needs "
                                         r"1,030 GB"):
        roofline.ttft("H100-SXM", "Llama-3-8B", prompt=131_072, rate=0.001, batch_prompts=32)


@pytest.mark.parametrize("options, message", [
    ({"rate": "5"}, r"^rate: the arrival rate must be a finite number > 0 per second \(got '5'\)"),
    ({"rate": 5, "slo": "1"}, r"^slo: the TTFT target must be a finite number of seconds > 0 "
                              r"\(got '1'\)"),
    ({"rate": True}, r"^rate: the arrival rate must be a finite number > 0 per second "
                     r"\(got True\)"),
])
def test_numbers_that_are_not_numbers_are_input_errors(options, message):
    # a string or a bool where a rate or target belongs gave a bare TypeError (or was read as 1)
    with pytest.raises(InputError, match=message):
        roofline.ttft("H100-SXM", "Llama-3-8B", prompt=2048, **options)


def test_prompt_lengths_in_any_form_of_integers():
    # numpy's integers (np.arange) were refused, a float scalar was a TypeError, a string was
    # read character by character
    table = roofline.prefill("H100-SXM", "Llama-3-8B", np.arange(1024, 4097, 1024))
    assert [p.prompt_tokens for p in table.points] == [1024, 2048, 3072, 4096]
    assert [p.prompt_tokens for p in roofline.prefill("H100-SXM", "Llama-3-8B", 1e3).points] \
        == [1000]
    for bad, message in (("128", r"^prompt: needs prompt lengths: a sequence of positive "
                                 r"integers \(got '128'\)"),
                         (float("nan"), r"^prompt: a prompt length must be a positive integer"),
                         (None, r"^prompt: a prompt length must be a positive integer$")):
        with pytest.raises(InputError, match=message):
            roofline.prefill("H100-SXM", "Llama-3-8B", bad)
