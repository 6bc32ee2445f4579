"""Expert and context parallelism, the network between nodes and the decode step under tensor
parallelism in numbers: hand computations of the collectives and shares, the vectorised time
against the per-operation one, and the refusals (one line naming the option)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from roofline import api
from roofline.errors import InputError
from roofline.evaluate import memory, phases, points
from roofline.evaluate.links import boundary_crosses, crossing_boundaries, spans

warnings.filterwarnings("ignore")
NVLINK, NV_ALPHA = 450e9, 0.47e-6  # H100 SXM: NVLink4 each way, NCCL's ring step
IB, IB_ALPHA = 50e9, 2.7e-6  # InfiniBand NDR, 400 Gb/s per GPU; NCCL's network step


def _ops(point):
    return {o.name: o for o in point.operations}


def test_expert_parallel_mixtral_by_hand():
    """Mixtral-8x7B over 8 H100, T = 2048: each MoE layer's dispatch and combine send each of
    2048 token rows of 4096·2 bytes to the 7·(1 − (7/8)²) = 105/64 other devices its two
    experts are on (on average, uniform routing), in 7 steps; each device's up projection
    reads one expert (4096·28672·2 bytes) for its 4096 token–expert pairs."""
    p = api.prefill("H100-SXM", "Mixtral-8x7B", [2048], ep=8).points[0]
    ops = _ops(p)
    a2a = 7 * NV_ALPHA + 105 / 64 * 2048 * 4096 * 2 / NVLINK
    for name in ("ep.dispatch", "ep.combine"):
        assert ops[name].kind == "communication" and ops[name].level == "link"
        assert ops[name].time_s == pytest.approx(32 * a2a, rel=1e-12)
    up = ops["moe.up"]
    assert up.flops == pytest.approx(32 * 2 * 4096 * 4096 * 2 * 14336, rel=1e-12)
    assert up.bytes == pytest.approx(32 * (4096 * 28672 * 2 + 2 * 4096 * (4096 + 28672)),
                                     rel=1e-12)
    one = _ops(api.prefill("H100-SXM", "Mixtral-8x7B", [2048]).points[0])
    assert one["moe.up"].flops == up.flops  # the same pairs: FLOPs unchanged
    assert one["moe.up"].bytes > 7 * 32 * 4096 * 28672 * 2  # all 8 experts read on one


def test_context_parallel_by_hand():
    """Llama-3-8B over 4 devices, T = 32768: each device's MLP on 8192 rows, a quarter of the
    causal attention; the K/V passes (3 a layer of 8192·2·8·128·2 bytes) hidden under it."""
    p = api.prefill("H100-SXM", "Llama-3-8B", [32768], cp=4).points[0]
    ops = _ops(p)
    assert ops["mlp.up"].flops == pytest.approx(32 * 2 * 8192 * 4096 * 2 * 14336, rel=1e-12)
    causal = 32 * 2 * 32 * 128 * 32768 * 32769  # 2·n_q·H·T(T+1) per layer
    assert ops["attention.kernel"].flops == pytest.approx(causal / 4, rel=1e-12)
    assert ops["cp.kv_pass"].time_s == 0.0  # hidden: attention takes far longer
    assert p.time_s == pytest.approx(sum(o.time_s for o in p.operations), rel=1e-12)


def test_context_parallel_exposed_passes_at_a_short_prompt():
    """At T = 64 the passes (3·(0.47 us + 16·2·8·128·2/450 GB/s) a layer) outlast the
    attention: the part beyond it is exposed."""
    p = api.prefill("H100-SXM", "Llama-3-8B", [64], cp=4).points[0]
    ops = _ops(p)
    passes = 32 * 3 * (NV_ALPHA + 16 * 2 * 8 * 128 * 2 / NVLINK)
    attention = ops["attention.kernel"].time_s
    assert passes > attention
    assert ops["cp.kv_pass"].time_s == pytest.approx(passes - attention, rel=1e-9)


@pytest.mark.parametrize("options", [
    {"ep": 8}, {"cp": 4}, {"tp": 2, "cp": 2, "overlap": True}, {"ep": 2, "tp": 4},
    {"tp": 8, "cp": 2, "network": "InfiniBand-NDR"},
    {"tp": 4, "pp": 4, "network": "InfiniBand-NDR"},
])
def test_vectorised_time_agrees(options):
    model = "Mixtral-8x7B" if "ep" in options else "Llama-3-70B"
    s = api.setting("H100-SXM", model, **options)
    prompts = [64, 2048, 32768]
    fast = phases.prefill_time(s, np.array(prompts))
    slow = [p.time_s for p in points.prefill(s, prompts)]
    assert fast == pytest.approx(slow, rel=1e-12)


def test_tensor_parallel_across_nodes_by_hand():
    """Llama-2-70B over 16 H100 (two HGX nodes): each all-reduce's ring leaves the node, so its
    30 steps and 2·15/16 of the 2048·8192·2 bytes are timed at InfiniBand NDR."""
    p = api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=16,
                    network="InfiniBand-NDR").points[0]
    ar = _ops(p)["tp.all_reduce.attn"]
    per = 30 * IB_ALPHA + 2 * 15 / 16 * 2048 * 8192 * 2 / IB
    assert ar.level == "network" and ar.time_s == pytest.approx(80 * per, rel=1e-12)
    inside = _ops(api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=8).points[0])
    assert inside["tp.all_reduce.attn"].level == "link"


def test_pipeline_boundary_across_nodes_by_hand():
    """Llama-2-70B, 2 stages of 8 H100: the one boundary leaves the node (α + 2048·8192·2/β at
    InfiniBand); stages of 4 stay in one node, at NVLink."""
    whole = {"pipeline": "whole"}  # the prompt through each stage in turn: the sends timed
    ops = _ops(api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=8, pp=2,
                           network="InfiniBand-NDR", **whole).points[0])
    assert "pp.send" not in ops
    assert ops["pp.send.network"].time_s == pytest.approx(IB_ALPHA + 2048 * 8192 * 2 / IB)
    ops = _ops(api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=4, pp=2, **whole).points[0])
    assert ops["pp.send"].time_s == pytest.approx(NV_ALPHA + 2048 * 8192 * 2 / NVLINK)
    ops = _ops(api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=4, pp=4,
                           network="InfiniBand-NDR", **whole).points[0])
    assert ops["pp.send"].count == 2 and ops["pp.send.network"].count == 1


@pytest.mark.parametrize("stage, stages", [(1, 8), (2, 8), (4, 4), (3, 6), (8, 3), (12, 4),
                                           (16, 2), (5, 7)])
def test_crossing_boundaries_against_the_devices(stage, stages):
    """Each boundary's sends, device i of one stage to i + stage, enumerated: a boundary leaves
    the node of 8 where any pair is in two nodes."""
    per = 8
    crossing = [k for k in range(1, stages)
                if any(i // per != (i + stage) // per for i in range((k - 1) * stage, k * stage))]
    assert [k for k in range(1, stages) if boundary_crosses(k, stage, per)] == crossing
    assert crossing_boundaries(stage, stages, per) == len(crossing)


def test_group_spans():
    assert spans(2, 4, 8) == {"tp": 2, "cp": 8, "ep": 64}


@pytest.mark.parametrize("options, rule", [
    ({"model": "Llama-3-8B", "ep": 2}, "ep: needs a mixture-of-experts model; Llama-3-8B is "
                                       "dense"),
    ({"model": "Mixtral-8x7B", "ep": 3}, "ep: must divide Mixtral-8x7B's 8 routed experts"),
    ({"model": "Mixtral-8x7B", "ep": 0}, "ep: must be a positive integer"),
    ({"model": "Llama-3-8B", "cp": 0}, "cp: must be a positive integer"),
    ({"model": "Llama-3-8B", "cp": -4}, "cp: must be a positive integer"),
    ({"model": "Llama-3-8B", "cp": True}, "cp: must be a positive integer"),
    ({"model": "Llama-3-8B", "cp": 4, "hardware": "TPU-v4"},
     "cp: 4 devices need an interconnect, which TPU-v4"),
    ({"model": "Mixtral-8x7B", "ep": 2, "hardware": "TPU-v4"},
     "ep: 2 devices need an interconnect, which TPU-v4"),
    ({"model": "Llama-3-8B", "cp": 16}, "network: the cp group spans 16 devices"),
    ({"model": "Mixtral-8x7B", "ep": 8, "tp": 2}, "network: the ep group spans 16 devices"),
    ({"model": "Llama-3-8B", "pp": 4, "tp": 4}, "network: the pipeline's 4 stages of 4 devices"),
])
def test_bad_options(options, rule):
    options = {"hardware": "H100-SXM", **options}
    with pytest.raises(InputError, match=rule):
        api.setting(options.pop("hardware"), options.pop("model"), **options)


def test_unknown_network():
    from roofline.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown network 'InfiniBand'; close matches"):
        api.setting("H100-SXM", "Llama-3-8B", network="InfiniBand")


def test_per_device_memory_under_expert_parallelism():
    """Mixtral-8x7B (93.4 GB in bf16) does not fit one 80 GB H100; over 8, each holds 1 expert
    of 8 a layer: 2·(46,702,792,704 − 32·7·3·4096·14336) bytes, and its KV cache."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = api.setting("H100-SXM", "Mixtral-8x7B", ep=8)
    assert not any("do not fit" in str(w.message) for w in caught)
    weights = 2 * (46_702_792_704 - 32 * 7 * 3 * 4096 * 14336)
    kv = 2 * 32 * 8 * 128 * 4096 * 2
    assert memory.memory_bytes(s, 4096) == pytest.approx(weights + kv, rel=1e-12)


def test_decode_under_tensor_parallelism_by_hand():
    """Llama-2-70B decode at context 2048 over 8 H100: each device holds 1 of the 8 KV heads;
    two all-reduces a layer of one token's 8192·2 bytes (14 steps), the embedding's, and the
    gather of 32000·2 bytes of logits (7 steps)."""
    table = api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=8)
    d = table.decode
    assert d.kv_cache_bytes == 2 * 80 * 1 * 128 * 2048 * 2
    ar = 14 * NV_ALPHA + 2 * 7 / 8 * 8192 * 2 / NVLINK
    gather = 7 * NV_ALPHA + 7 / 8 * 32000 * 2 / NVLINK
    assert d.communication_s == pytest.approx(161 * ar + gather, rel=1e-12)
    one = api.prefill("H100-SXM", "Llama-2-70B", [2048]).decode
    assert d.time_s < one.time_s / 4  # each device reads an eighth of the weights
    assert "Decode step per device (tensor parallel over 8" in str(table)
    # the other splits leave the decode step as it was, and say so
    cp = api.prefill("H100-SXM", "Llama-2-70B", [2048], cp=2)
    assert cp.decode.time_s == one.time_s and "context parallelism not applied" in str(cp)


def test_titles_and_json_name_the_splits():
    t = api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=8, cp=2, network="InfiniBand-NDR")
    assert "context parallel over 2 (ring attention)" in str(t)
    assert "cp across nodes over InfiniBand-NDR" in str(t)
    d = t.as_dict()["parallel"]
    assert d == {"tp": 8, "pp": 1, "pipeline": "chunked", "ep": 1, "cp": 2, "overlap": False,
                 "network": "InfiniBand-NDR", "across_nodes": ["cp"]}
    assert math.isfinite(t.points[0].time_s)
