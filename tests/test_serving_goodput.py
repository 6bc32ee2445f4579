"""Disaggregated against colocated (issue 30, part 3): Erlang's M/D/1 waiting-time distribution
against a simulation, the placement search against a candidate-by-candidate search, and the
KV transfer moving the choice as it must."""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from queue_simulation import waits  # noqa: E402


@pytest.fixture(scope="module")
def opt13b():
    """OPT-13B on an A100-80GB, DistServe's chatbot workload's model (§6.1, Table 1: OPT-13B
    with TTFT 0.25 s and TPOT 0.1 s)."""
    from roofline.api import setting

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return setting("A100-80GB-SXM", "OPT-13B")


@pytest.mark.parametrize("rate, service, objective", [(5.0, 0.1, 0.25), (15.0, 0.05, 0.2),
                                                      (0.9, 1.0, 3.0), (950.0, 0.001, 0.1)])
def test_erlang_attainment_against_a_simulation(rate, service, objective):
    from roofline.serving.goodput import md1_attainment

    rng = np.random.default_rng(7)  # at R·x ≈ 95 a sum in double precision is all rounding
    w = waits(rng.exponential(1 / rate, 2_000_000), np.full(2_000_000, service))[50_000:]
    simulated = float(np.mean(service + w <= objective))
    assert md1_attainment(rate, service, objective) == pytest.approx(simulated, abs=4e-3)


def test_prefill_capacity_meets_the_attainment_exactly_there(opt13b):
    from roofline.serving.goodput import md1_attainment, prefill_capacity

    side = prefill_capacity(opt13b, 512, 0.25, 0.9)
    assert md1_attainment(side.rate_per_s, side.time_s, 0.25) == pytest.approx(0.9, abs=1e-5)
    assert md1_attainment(side.rate_per_s * 1.01, side.time_s, 0.25) < 0.9


def test_the_search_returns_the_best_candidate_of_each_side(opt13b):
    """Every (TP, PP) candidate evaluated one by one: the search's choice has the most requests
    per second per device, and the pair's goodput is DistServe's replication of the two."""
    from roofline.serving.goodput import (colocated_capacity, decode_capacity, goodput,
                                          prefill_capacity)

    g = goodput(opt13b, 512, 128, 0.25, 0.1)
    pre = {(tp, pp): prefill_capacity(replace(opt13b, tp=tp, pp=pp), 512, 0.25, 0.9).per_device
           for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8) if tp * pp <= 8}
    dec = {(tp, pp): decode_capacity(replace(opt13b, tp=tp, pp=pp), 512, 128, 0.1,
                                     g.transfer_s).per_device
           for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8) if tp * pp <= 8}
    colo = {(tp, pp): colocated_capacity(replace(opt13b, tp=tp, pp=pp), 512, 128, 0.25, 0.1,
                                         0.9).per_device
            for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8) if tp * pp <= 8}
    assert (g.prefill.tp, g.prefill.pp) == max(pre, key=pre.get)
    assert (g.decode.tp, g.decode.pp) == max(dec, key=dec.get)
    assert (g.colocated.tp, g.colocated.pp) == max(colo, key=colo.get)
    assert g.colocated_per_device == pytest.approx(max(colo.values()))
    n_p, n_d = g.prefill.devices, g.decode.devices
    assert g.disaggregated_per_device == pytest.approx(
        1 / (n_p / g.prefill.rate_per_s + n_d / g.decode.rate_per_s))


def test_decode_capacity_by_littles_law(opt13b):
    from roofline.evaluate.phases import decode
    from roofline.serving.goodput import decode_capacity

    side = decode_capacity(opt13b, 512, 128, 0.1)
    t = decode(replace(opt13b, batch=side.batch), 512 + 63).time_s
    assert t <= 0.1 and side.rate_per_s == pytest.approx(side.batch / (127 * t))


def test_colocated_under_pipeline_stages_by_hand(opt13b):
    """Two stages: the decodes in two micro-batches, each a hybrid step of one device (all 40
    layers) with a chunk and ⌈B/2⌉ decodes plus one send of its C + ⌈B/2⌉ rows, α + rows·5,120·2/β
    at the setting's link, within the TPOT objective; the stages hold two micro-batches, so a
    prompt takes T/(2·C) of a step's time. With a budget above the 512-token prompt its chunks
    hold whole prompts (done 0)."""
    from roofline.serving.goodput import colocated_capacity
    from roofline.serving.hybrid import step

    two = replace(opt13b, pp=2)
    side = colocated_capacity(two, 512, 64, 0.5, 0.1, 0.9)  # a TTFT that lets steps fill τ
    link = two.links["pp"]
    assert (link.alpha, link.beta) == (0.47e-6, 300e9)  # NCCL's NVLink step; 600 GB/s both ways
    micro = -(-side.batch // 2)
    assert side.chunk >= 512 and side.rate_per_s > 0
    t = step(opt13b, side.chunk, 0, micro, 512 + 31).time_s \
        + link.alpha + (side.chunk + micro) * 5120 * 2 / link.beta
    assert side.time_s == pytest.approx(t, rel=1e-12) and t <= 0.1
    assert side.service_s == pytest.approx(t * 512 / (2 * side.chunk), rel=1e-12)
    one = colocated_capacity(opt13b, 512, 64, 0.5, 0.1, 0.9)  # half the weights a device: more
    assert side.batch > one.batch  # room for caches beside them


def test_decode_under_pipeline_stages_by_hand(opt13b):
    """Two stages: the batch as two micro-batches of ⌈B/2⌉, a step one device's decode step of
    all 40 layers at ⌈B/2⌉ plus one send of its hidden states, α + ⌈B/2⌉·5,120·2/β at the
    setting's link. Each stage holds 20 layers (vLLM's get_pp_indices) and their caches
    (2·20·5,120·2 bytes a token); the first also the token table (50,272 × 5,120) and the
    learned positions (2,050 × 5,120), the last the final LayerNorm and, the embeddings being
    tied, its own copy of the table as the LM head: the first is the fuller, and the sequences
    that fit are those that fit beside it."""
    from roofline.evaluate.phases import decode
    from roofline.serving.goodput import decode_capacity
    from roofline.serving.request import fits

    two = replace(opt13b, pp=2)
    side = decode_capacity(two, 512, 128, 0.1)
    link = two.links["pp"]
    micro = -(-side.batch // 2)
    t = decode(replace(opt13b, batch=micro), 512 + 63).time_s \
        + link.alpha + micro * 5120 * 2 / link.beta
    assert side.time_s == pytest.approx(t, rel=1e-12) and t <= 0.1
    assert side.rate_per_s == pytest.approx(side.batch / (127 * t), rel=1e-12)
    d, ffn, vocab = 5120, 20480, 50272
    layer = 4 * d * d + 4 * d + d * ffn + ffn + ffn * d + d + 2 * 2 * d  # + 2 LayerNorms
    first = 2 * (20 * layer + vocab * d + 2050 * d)
    last = 2 * (20 * layer + 2 * d + vocab * d)
    assert first > last
    cache = 2 * 20 * 5120 * 2 * (512 + 127)  # one sequence's keys and values, one stage's
    assert fits(two, 512 + 127) == (80e9 - first) // cache
    assert fits(two, 512 + 127) > 2 * fits(opt13b, 512 + 127)


def test_the_kv_transfer_moves_the_choice_as_it_must(opt13b):
    """Free: the pair does no worse than with the interconnect; no link: it serves nothing and
    the colocated device wins; the transfer's bytes are the prompt's KV cache by hand
    (2·40 layers·5,120·2 bytes a token)."""
    from roofline.serving.goodput import goodput

    base = goodput(opt13b, 512, 128, 0.25, 0.1)
    free = goodput(opt13b, 512, 128, 0.25, 0.1, link_bandwidth=math.inf)
    none = goodput(opt13b, 512, 128, 0.25, 0.1, link_bandwidth=0)
    slow = goodput(opt13b, 512, 128, 0.25, 0.1, link_bandwidth=1e6)
    assert base.transfer_bytes == 512 * 2 * 40 * 5120 * 2
    assert free.disaggregated_per_device >= base.disaggregated_per_device > 0
    assert none.disaggregated_per_device == 0 and none.winner == "colocated"
    assert slow.disaggregated_per_device < base.disaggregated_per_device


def test_bad_goodput_options_are_refused(opt13b):
    from roofline.api import goodput
    from roofline.errors import InputError

    for kwargs, where in (({"attainment": 1.5}, "attainment"), ({"tp": 2}, "tp"),
                          ({"output": 1}, "output"), ({"ttft": 0}, "ttft")):
        args = {"prompt": 512, "output": 128, "ttft": 0.25, "tpot": 0.1, **kwargs}
        with pytest.raises(InputError, match=where):
            goodput("A100-80GB-SXM", "OPT-13B", **args)


@pytest.mark.parametrize("rate, service, objective", [("5", "0.1", "0.25"), ("9.5", "0.1", "2"),
                                                      ("0.9", "1", "3")])
def test_attainment_is_the_catalogues_erlang_sum(rate, service, objective):
    """The numbers (mpmath at 50 digits) are the catalogue's SymPy sum
    (service.ttft.md1_attainment) evaluated exactly at rational numbers."""
    from sympy import Rational

    from roofline.derive.service import md1_attainment as form
    from roofline.serving.goodput import md1_attainment
    from roofline.symbols import R, t_pre, tau_ttft

    exact = form().subs({R: Rational(rate), t_pre: Rational(service),
                         tau_ttft: Rational(objective)}).doit().evalf(40)
    assert md1_attainment(float(rate), float(service), float(objective)) == \
        pytest.approx(float(exact), rel=1e-12)


def test_colocated_goodput_never_falls_as_the_tpot_loosens(opt13b):
    """What meets a tight TPOT meets a looser one: the goodput may only grow (to the search's
    resolution, a relative 1e-5, and the budgets tried: τ/2^j)."""
    from roofline.serving.goodput import colocated_capacity

    rates = [colocated_capacity(opt13b, 512, 64, 0.4, tpot, 0.9).rate_per_s
             for tpot in (0.03, 0.06, 0.12)]
    assert rates[0] > 0
    assert all(b >= a * (1 - 1e-4) for a, b in zip(rates, rates[1:])), rates


def test_neither_where_both_serve_none():
    from roofline.api import goodput

    g = goodput("A100-80GB-SXM", "Llama-3-70B", prompt=512, output=64, ttft=0.5, tpot=0.1,
                devices=1)
    assert g.winner == "neither" and "weights exceed one device's memory" in str(g)


def test_a_model_one_device_cannot_hold_is_colocated_on_several():
    """Llama-2-70B's 68,976,648,192 parameters (its safetensors metadata), 138 GB in bf16, do
    not fit in an H100's 80 GB: the colocated instance takes 2 devices or more (TP, PP), and
    its capacity at that setting is colocated_capacity's."""
    from roofline.api import setting
    from roofline.serving.goodput import colocated_capacity, goodput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = setting("H100-SXM", "Llama-2-70B")
    assert 2 * 68_976_648_192 > 80e9
    g = goodput(s, 512, 64, 1.0, 0.1, devices=4)
    assert g.colocated.devices in (2, 4) and g.colocated.rate_per_s > 0
    assert g.colocated.rate_per_s == pytest.approx(colocated_capacity(
        replace(s, tp=g.colocated.tp, pp=g.colocated.pp), 512, 64, 1.0, 0.1, 0.9).rate_per_s)
    assert colocated_capacity(s, 512, 64, 1.0, 0.1, 0.9).rate_per_s == 0


def test_short_prompts_are_prefilled_together():
    """128-token prompts of Llama-3-8B on an H100: a prefill of one is memory-bound (the
    weights read for 128 rows), so prompts run k at a time serve more; the chosen k's service is
    its batch's time over k and its rate meets the attainment exactly (M/D/1 at that service,
    the batch's execution added), above the rate of prompts one at a time."""
    from roofline.api import setting
    from roofline.evaluate.phases import prefill_time
    from roofline.serving.goodput import _prefill_at, md1_attainment, prefill_capacity

    s = setting("H100-SXM", "Llama-3-8B")
    side = prefill_capacity(s, 128, 0.1, 0.9)
    assert side.batch > 1
    e = float(prefill_time(replace(s, batch=side.batch), [128])[0])
    assert side.time_s == pytest.approx(e, rel=1e-12)
    assert side.service_s == pytest.approx(e / side.batch, rel=1e-12)
    assert md1_attainment(side.rate_per_s, side.service_s, 0.1, e) == pytest.approx(0.9,
                                                                                   abs=1e-4)
    assert side.rate_per_s > _prefill_at(s, 128, 0.1, 0.9, 1).rate_per_s


def test_a_pair_of_cards_per_bridge_is_said():
    """A100 80GB PCIe cards are joined in pairs (interconnect.devices_per_node 2): goodput
    searches instances of up to 2 devices and says so; a pair of instances on 4 devices says
    its transfer is timed at the bridge, the more permissive bound."""
    from roofline.api import setting
    from roofline.serving.goodput import goodput

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = setting("A100-80GB-PCIe", "Yi-34B-200K")
    g = goodput(s, 1024, 64, 1.0, 0.1)
    assert max(g.prefill.devices, g.decode.devices, g.colocated.devices) <= 2
    text = str(g)
    assert "instances of up to 2 devices" in text
    assert ("span more than the 2" in text) == (g.prefill.devices + g.decode.devices > 2)
    assert g.as_dict()["devices"] == 8
