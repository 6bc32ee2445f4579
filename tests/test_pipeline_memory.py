"""The memory of N_pp pipeline stages: each stage holds its own layers (vLLM's split), the first
also the embedding, the last the final norm and the LM head; one device holds the fullest
stage's. The closed form against a transcription of vLLM's split, hand sums, and the memory
crossovers against the stages' footprint on either side of them."""

from __future__ import annotations

import math
import warnings

import pytest
from sympy import Symbol, lambdify

from roofline import api
from roofline.derive.pipeline import busiest_stage_bytes, stage_layer_counts
from roofline.errors import InputError
from roofline.evaluate import crossover_value
from roofline.evaluate.memory import held_bytes, memory_bytes, stage_bytes
from roofline.specs import list_models
from roofline.symbols import L, N_pp

D, V = 4096, 128_256  # Llama-3-8B's width and vocabulary
LAYER = 4096 * 6144 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096 + 2 * 4096  # + 2 RMSNorms


def _vllm_partitions(layers: int, size: int) -> list[int]:
    """vllm/distributed/utils.py ``get_pp_indices`` (no VLLM_PP_LAYER_PARTITION), its
    partition list transcribed: layers // size a stage, then ``partitions[-i] += 1`` for i in
    2 … remainder + 1."""
    partitions = [layers // size for _ in range(size)]
    if remaining := layers % size:
        for i in range(2, remaining + 2):
            partitions[-i] += 1
    return partitions


def _quiet(make, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make(*args, **kwargs)


def test_the_closed_form_is_the_fullest_of_vllms_stages():
    """Max(⌈L/N⌉·m, ⌊(L + 1)/N⌋·m + first, ⌊L/N⌋·m + last) over every L ≤ 130 and 2 ≤ N ≤ 16
    (N ≤ L), against the largest of the transcribed split's stages, each stage's layers at m
    bytes a layer and its edge; edges large and small, first or last the larger."""
    x, first, last = Symbol("x"), Symbol("first"), Symbol("last")
    form = lambdify((L, N_pp, x, first, last), busiest_stage_bytes(x, first, last), "math")
    for layers in range(2, 131):
        for size in range(2, min(16, layers) + 1):
            split = _vllm_partitions(layers, size)
            assert stage_layer_counts(layers, size) == split
            assert sum(split) == layers
            for m, f, h in ((7, 0, 0), (7, 3, 1), (7, 1, 3), (7, 20, 19), (5, 11, 40)):
                ends = [f] + [0] * (size - 2) + [h]
                fullest = max(n * m + e for n, e in zip(split, ends))
                assert form(layers, size, layers * m, f, h) == fullest, (layers, size, m, f, h)


def test_llama3_8b_over_three_stages_by_hand():
    """32 layers as 11, 11, 10. Stage 0: 11 layers + the embedding (V·D); stage 2: 10 layers,
    the final RMSNorm (D) and the untied LM head (V·D). Stage 0 is the fullest: 5.85 GB of bf16
    weights where a third of the model would be 5.35 GB; its KV cache 11 layers' of 32."""
    s = api.setting("H100-SXM", "Llama-3-8B", pp=3)
    t = 2048
    stage0 = 2 * (11 * LAYER + V * D)
    assert stage0 == 5_849_137_152
    assert held_bytes(s, "weights", t) == pytest.approx(stage0, rel=1e-12)
    kv = 11 * 2 * 8 * 128 * 2 * t  # 11 layers' keys and values, 8 KV heads of 128, bf16
    assert held_bytes(s, "kv_cache", t) == pytest.approx(kv, rel=1e-12)
    weights, cache = stage_bytes(s, t)
    expected = [stage0, 2 * 11 * LAYER, 2 * (10 * LAYER + D + V * D)]
    assert list(weights) == pytest.approx(expected, rel=1e-12)
    assert list(cache) == pytest.approx([kv, kv, kv * 10 / 11], rel=1e-12)
    # the stages hold the whole model between them, once (untied: no copy of the table)
    assert sum(weights) == pytest.approx(2 * 8_030_261_248, rel=1e-12)
    assert memory_bytes(s, t) == pytest.approx(stage0 + kv, rel=1e-12)


def test_an_inner_stage_is_the_fullest_of_deepseek_v3s_four():
    """DeepSeek-V3 at TP 8, PP 4: 61 layers as 15, 15, 16, 15; the third stage, with no edge,
    holds 16/15 of the second's (every layer the mean layer: see the README) and is the
    fullest; the four hold the device's whole share between them, the table and head once."""
    s = _quiet(api.setting, "H100-SXM", "DeepSeek-V3", tp=8, pp=4,
               network="InfiniBand-NDR")
    whole = _quiet(api.setting, "H100-SXM", "DeepSeek-V3", tp=8)
    t = 4096
    weights, cache = stage_bytes(s, t)
    assert list(cache) == pytest.approx(
        [n / 61 * held_bytes(whole, "kv_cache", t) for n in (15, 15, 16, 15)], rel=1e-12)
    assert weights[2] == pytest.approx(weights[1] * 16 / 15, rel=1e-12)
    assert sum(weights) == pytest.approx(held_bytes(whole, "weights", t), rel=1e-12)
    held = (weights + cache).max()
    assert held == pytest.approx(weights[2] + cache[2], rel=1e-12)
    assert memory_bytes(s, t) == pytest.approx(held, rel=1e-12)


def test_a_tied_model_keeps_a_copy_of_its_table_on_the_last_stage():
    """OPT-13B ties its LM head to its token table; vLLM's last rank builds its own copy: the
    stages together hold one table more than the single device."""
    s = _quiet(api.setting, "A100-80GB-SXM", "OPT-13B", pp=2)
    whole = _quiet(api.setting, "A100-80GB-SXM", "OPT-13B")
    weights, _ = stage_bytes(s, 512)
    assert sum(weights) - held_bytes(whole, "weights", 512) == pytest.approx(
        2 * 50272 * 5120, rel=1e-12)


def _settings(split):
    for model in list_models():
        for mode in ("kernel", "naive"):
            try:
                yield _quiet(api.setting, "H100-SXM", model, attention=mode, **split)
            except InputError:  # a degree the model cannot take
                continue


@pytest.mark.parametrize("split", [{"pp": 3}, {"pp": 4}, {"pp": 5}, {"tp": 2, "pp": 4},
                                   {"tp": 8, "pp": 4, "network": "InfiniBand-NDR"}],
                         ids=lambda v: ",".join(f"{k}{n}" for k, n in v.items() if k != "network"))
def test_memory_crossovers_are_where_the_fullest_stage_stops_fitting(split):
    """Every shipped model on H100 (80 GB): at the floor of the memory crossover the fullest
    stage fits, one token later it does not (their closed forms give their values:
    ``test_closed_forms``)."""
    checked = 0
    for s in _settings(split):
        name = "kv_cache_exceeds_memory_tokens" if s.attention == "kernel" \
            else "naive_scores_exceed_memory_tokens"
        c = crossover_value(s, name)
        if not c.exists or c.value > 1e9:
            continue
        below, above = math.floor(c.value), math.floor(c.value) + 1
        cap = s.hardware.memory_capacity
        assert memory_bytes(s, below) <= cap * (1 + 1e-12), (s.model.name, name)
        assert memory_bytes(s, above) > cap * (1 - 1e-12), (s.model.name, name)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("model, split, index, layers", [
    ("Llama-3-8B", {"pp": 3}, 0, 11),  # 11, 11, 10: the first holds the embedding besides
    ("Llama-3-8B", {"pp": 2}, 1, 16),  # 16, 16: the head and the norm outweigh the table
    ("Llama-3-70B", {"pp": 4}, 3, 20),  # 20 each: likewise
    ("DeepSeek-V3", {"tp": 8, "pp": 4, "network": "InfiniBand-NDR"}, 2, 16),  # 15, 15, 16, 15
])
def test_prefill_names_the_fullest_stage(model, split, index, layers):
    """The memory line and its JSON name the stage whose memory they print: its index and its
    layers as the transcribed vLLM split gives them, its bytes the largest stage's."""
    table = _quiet(api.prefill, "H100-SXM", model, 2048, **split)
    m = table.memory
    assert m["stage"] == {"index": index, "layers": layers}
    assert _vllm_partitions(table.setting.model.num_layers, split["pp"])[index] == layers
    weights, cache = stage_bytes(table.setting, 2048)
    assert m["weights"] + m["kv_cache"] == pytest.approx(max(weights + cache), rel=1e-12)
    assert m["weights"] == pytest.approx(weights[index], rel=1e-12)
    line = str(table)
    assert f"stage {index} of 0 to {split['pp'] - 1}: {layers} of " in line
    assert table.as_dict()["memory"]["stage"] == m["stage"]


def test_without_pipeline_stages_no_stage_is_named():
    m = api.prefill("H100-SXM", "Llama-3-8B", 2048, tp=2).memory
    assert "stage" not in m
