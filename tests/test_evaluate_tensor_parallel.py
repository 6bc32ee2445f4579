"""Tensor parallelism in numbers: the Setting's tp, the prefill of one device's share, the
all-reduces in the per-operation output, the overlap variant, and the refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from roofline import api
from roofline.errors import InputError
from roofline.evaluate import memory, phases
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model

warnings.filterwarnings("ignore", message=".*stale.*")


def _points(tp, overlap=False, prompts=(128, 2048, 8192), hw="H100-SXM", model="Llama-2-70B"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.prefill(hw, model, list(prompts), tp=tp, overlap=overlap).points


def test_tp1_is_the_single_device():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = api.prefill("H100-SXM", "Llama-2-70B", [128, 2048, 8192]).points
    assert [p.time_s for p in _points(1)] == [p.time_s for p in one]
    assert not any(o.kind == "communication" for o in one[0].operations)


def test_allreduce_operation_by_hand():
    """Llama-2-70B, T = 2048, N = 8 on H100 (450 GB/s each way, 0.47 us a step): each of the
    80 layers' two all-reduces moves 2·7/8·2048·8192·2 bytes: 80·(130.489 + 6.58) us."""
    ops = {o.name: o for o in _points(8, prompts=(2048,))[0].operations}
    ar = ops["tp.all_reduce.attn"]
    assert ar.kind == "communication" and ar.level == "link" and ar.flops == 0
    per = 2 * 7 / 8 * 2048 * 8192 * 2 / 450e9 + 14 * 0.47e-6
    assert ar.time_s == pytest.approx(80 * per, rel=1e-12)
    assert ops["tp.all_reduce.mlp"].time_s == pytest.approx(80 * per, rel=1e-12)
    # one device's share of the MLP's up projection: 2·T·D·2F/8 FLOPs per layer
    assert ops["mlp.up"].flops == pytest.approx(80 * 2 * 2048 * 8192 * 2 * 28672 / 8)


def test_overlap_is_max_of_compute_and_communication():
    for plain, hidden in zip(_points(8), _points(8, overlap=True)):
        comm = sum(o.time_s for o in plain.operations if o.kind == "communication")
        compute = plain.time_s - comm
        assert hidden.time_s == pytest.approx(max(compute, comm), rel=1e-12)
        assert hidden.time_s <= plain.time_s


def test_vectorised_time_agrees():
    for overlap in (False, True):
        s = api.setting("H100-SXM", "Llama-2-70B", tp=4, overlap=overlap)
        fast = phases.prefill_time(s, np.array([128, 2048, 8192]))
        slow = [p.time_s for p in _points(4, overlap)]
        assert fast == pytest.approx(slow, rel=1e-12)


def test_more_devices_are_faster_but_not_linearly():
    t = {n: _points(n, prompts=(2048,))[0].time_s for n in (1, 2, 4, 8)}
    assert t[1] > t[2] > t[4] > t[8] > t[1] / 8


def test_per_device_memory():
    hw, model = load_hardware("A100-80GB-SXM"), load_model("Llama-2-70B")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api.setting(hw, model)  # 138 GB of weights on one 80 GB device: a warning
        assert any("do not fit" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = api.setting(hw, model, tp=2)  # 69 GB each: no warning
        assert not any("do not fit" in str(w.message) for w in caught)
    assert memory.memory_bytes(s, 4096) == pytest.approx(
        (2 * 68_976_648_192 - 2 * (80 * 2 * 8192 + 8192)) / 2 + 2 * (80 * 2 * 8192 + 8192)
        + 2 * 80 * 4 * 128 * 4096 * 2)


@pytest.mark.parametrize("options, rule", [
    ({"tp": 0}, "tp: must be a positive integer"),
    ({"tp": True}, "tp: must be a positive integer"),
    ({"tp": 2.0}, "tp: must be a positive integer"),
    ({"tp": 128}, "tp: must be at most Llama-2-70B's 64 query heads"),
    ({"tp": 3}, "tp: must divide Llama-2-70B's 64 query heads"),
    ({"pp": 81}, "pp: must be at most Llama-2-70B's 80 layers"),
    ({"pp": -1}, "pp: must be a positive integer"),
])
def test_bad_parallel_options(options, rule):
    with pytest.raises(InputError, match=rule):
        api.setting("H100-SXM", "Llama-2-70B", **options)


def test_kv_heads_rule():
    # 64 query heads, 8 KV heads: 16 is a multiple of 8 (replicated), allowed; 16 devices are
    # two HGX nodes of 8, so the all-reduces cross the network, which must be given
    api.setting("H100-SXM", "Llama-2-70B", tp=16, network="InfiniBand-NDR")
    with pytest.raises(InputError, match="network: the tp group spans 16 devices, more than "
                                         "the 8 of one node"):
        api.setting("H100-SXM", "Llama-2-70B", tp=16)


def test_device_without_interconnect_refuses_tp():
    with pytest.raises(InputError, match="tp: 2 devices need an interconnect, which TPU-v4"):
        api.setting("TPU-v4", "Llama-2-7B", tp=2)
    api.setting("TPU-v4", "Llama-2-7B", tp=1)
