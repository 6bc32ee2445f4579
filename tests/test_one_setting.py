"""One setting in every output: the crossovers, the report, the figures' numbers, ``ttft`` and the
API's expressions apply the parallel setting that ``prefill`` applies. Each check holds an
output against another one that should agree (``prefill``'s own bound, its memory check, its
table) or against a number worked out by hand."""

import json
import math
import warnings

import pytest
from sympy import Symbol

from roofline import api, sweeps
from roofline.errors import InputError
from roofline.evaluate import check_memory, crossover_value, memory_bytes, prefill
from roofline.specs.hardware import list_hardware
from roofline.specs.model import list_models
from roofline.symbols import T

SPLITS = ({"tp": 2}, {"tp": 4}, {"tp": 8}, {"ep": 8}, {"cp": 2}, {"pp": 2})
TOLERANCE = 0.05  # conftest's changes_at


def _setting(hw, model, **split):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return api.setting(hw, model, **split)
        except InputError:  # a degree the model or the device cannot take
            return None


def _crossovers(hardware, split, name):
    """(setting, crossover ``name``) for every shipped model on each of ``hardware`` under
    ``split`` that the setting takes and where the crossover exists below 10⁸."""
    for hw in hardware:
        for model in list_models():
            s = _setting(hw, model, **split)
            if s is None:
                continue
            c = crossover_value(s, name)
            if c.exists and c.value <= 1e8:
                yield s, c


def _settings():
    """Each split on each device with a link and bf16 whose node holds the split's devices (a
    split beyond the node needs a network: its own tests)."""
    for split in SPLITS:
        for hw in list_hardware():
            inside = hw.devices_per_node is None or max(split.values()) <= hw.devices_per_node
            if hw.link_bandwidth() is not None and "bf16" in hw.peak_flops and inside:
                yield hw, split


@pytest.mark.parametrize("hw, split", list(_settings()),
                         ids=lambda v: getattr(v, "name", None) or
                         ",".join(f"{k}{n}" for k, n in v.items()))
def test_compute_bound_crossover_is_where_prefill_turns_compute_bound(hw, split, changes_at):
    """Under every split, ``prefill_compute_bound_tokens.kernel`` is where one device's share of
    the prefill (``prefill``'s own bound) turns compute-bound, and where it ends where it turns
    memory-bound again: the other regime on either side within 5 %, or where the root is
    ill-conditioned (a staircase crossing the ridge several times, a regime whose intensity
    stays within a few per cent of the ridge) the exact intensity within 2 % of the ridge at the
    root, the rule of ``test_crossover_roots`` for one device (conftest's ``changes_at``)."""
    checked = 0
    for s, c in _crossovers([hw], split, "prefill_compute_bound_tokens.kernel"):
        name = s.model.name
        assert _changes(s, c.value, ("memory", "compute"), c, changes_at), (name, c.value)
        if c.ends_at is not None:
            assert _changes(s, c.ends_at, ("compute", "memory"), c, changes_at), \
                (name, c.ends_at)
        checked += 1
    assert checked


def _changes(s, x, expected, c, changes_at) -> bool:
    """conftest's ``changes_at``, or the bound changing between the whole numbers of the
    kernel's 128-row tiles outside the tolerance, where its ⌈T/128⌉ staircase and the relaxed
    closed form are equal (Gaudi 3 at tp 2, Llama-3-8B: 1,348 tokens in closed form, memory-
    bound at 1,415 = 11.05 tiles, a tooth of the staircase, compute-bound at 1,536)."""
    if changes_at(s, x, expected, c):
        return True
    below = 128 * math.floor(x * (1 - TOLERANCE) / 128)
    above = 128 * math.ceil(x * (1 + TOLERANCE) / 128)
    return below >= 128 and tuple(prefill(s, [below, above]).bound) == expected


def test_the_issue_examples():
    """Llama-3-70B on H100 at tp 8: the crossover is where prefill flips (about 492-495
    tokens), not the one-device 338.7; DeepSeek-V3 on H200 with fp8 weights at tp 8: memory-
    bound at 4,096 tokens, and its crossover lies above 4,096."""
    s = api.setting("H100-SXM", "Llama-3-70B", tp=8)
    c = crossover_value(s, "prefill_compute_bound_tokens.kernel")
    assert 480 < c.value < 500
    assert tuple(prefill(s, [math.floor(c.value), math.ceil(c.value)]).bound) == \
        ("memory", "compute")
    s = _setting("H200-SXM", "DeepSeek-V3", weight_dtype="fp8", tp=8)
    assert prefill(s, [4096]).bound == ["memory"]
    assert crossover_value(s, "prefill_compute_bound_tokens.kernel").value > 4096


def _llama_70b_device_weights(n: int) -> int:
    """One tensor-parallel device's weight bytes of Llama-3-70B (bf16), by hand: its
    columns of Q (64/n heads of 128) and O, its KV heads (8/n), its third of the MLP's
    columns (28,672/n), the norms in full; the vocabulary split over the embedding and the
    LM head; 80 layers."""
    d, f, h, v, layers = 8192, 28672, 128, 128256, 80
    per_layer = 2 * d * (64 // n) * h + 2 * d * max(1, 8 // n) * h + 3 * d * f // n + 2 * d
    return 2 * (layers * per_layer + 2 * d * v // n + d)


def test_kv_cache_crossover_by_hand_at_tp8():
    """Llama-3-70B at tp 8 on H100 (80 GB): one device holds an eighth of the weights and one
    of the eight KV heads, 2·1·128·80·2 = 40,960 bytes per token: the KV cache fills it at
    (80e9 − weights)/40,960 tokens (not "never fits", as on one device), and prefill's memory
    check agrees on both sides."""
    s = api.setting("H100-SXM", "Llama-3-70B", tp=8)
    c = crossover_value(s, "kv_cache_exceeds_memory_tokens")
    by_hand = (80e9 - _llama_70b_device_weights(8)) / 40_960
    assert math.isclose(c.value, by_hand, rel_tol=1e-9)
    assert check_memory(s, math.floor(c.value), "x") is None
    assert check_memory(s, math.ceil(c.value) + 1, "x") is not None
    one = crossover_value(api.setting("H100-SXM", "Llama-3-70B"),
                          "kv_cache_exceeds_memory_tokens")
    assert not one.exists and "the weights alone" in one.reason


@pytest.mark.parametrize("split", SPLITS, ids=lambda v: ",".join(f"{k}{n}" for k, n in v.items()))
def test_memory_crossovers_agree_with_prefills_memory_check(split):
    """Where one device's share no longer fits, by the crossover and by ``prefill``'s memory
    (weights and KV cache; with naive attention one layer's scores as well), for every shipped
    model on H100 (80 GB) under each split."""
    for model in list_models():
        for mode, name in (("kernel", "kv_cache_exceeds_memory_tokens"),
                           ("naive", "naive_scores_exceed_memory_tokens")):
            s = _setting("H100-SXM", model, attention=mode, **split)
            if s is None:
                continue
            c = crossover_value(s, name)
            if not c.exists:
                continue
            cap = s.hardware.memory_capacity
            assert memory_bytes(s, math.floor(c.value)) <= cap * (1 + 1e-12), (model.name, name)
            assert memory_bytes(s, math.ceil(c.value) + 1) > cap, (model.name, name)


def test_naive_scores_crossover_counts_the_kv_cache():
    """RTX 4090 (24 GB), Llama-3-8B, naive attention: one layer's scores no longer fit beside
    the weights and the KV cache where the resident footprint (``memory_bytes``: weights, KV
    cache and one layer's scores) crosses the memory, not where the scores alone beside the
    weights would. ``prefill``'s memory check counts the live activations too (two score
    matrices at the softmax, the residual stream, QKV): it warns earlier, at its own crossover
    ``prefill_exceeds_memory_tokens.naive``."""
    s = api.setting("RTX-4090", "Llama-3-8B", attention="naive")
    c = crossover_value(s, "naive_scores_exceed_memory_tokens")
    assert memory_bytes(s, math.floor(c.value)) <= 24e9 < memory_bytes(s, math.ceil(c.value) + 1)
    peak = crossover_value(s, "prefill_exceeds_memory_tokens.naive")
    assert peak.value < c.value
    assert check_memory(s, math.floor(peak.value), "x") is None
    assert check_memory(s, math.floor(peak.value) + 1, "x") is not None
    # by hand: weights + 131,072 B of KV per token + 32 heads · 2 bytes · T² = 24e9
    w = memory_bytes(s, 1) - 131_072 - 64
    t = (-131_072 + math.sqrt(131_072**2 + 4 * 64 * (24e9 - w))) / (2 * 64)
    assert math.isclose(c.value, t, rel_tol=1e-6)


@pytest.mark.parametrize("split", [{"tp": 2}, {"cp": 2}, {"pp": 2}, {"tp": 2, "overlap": True},
                                   {"tp": 2, "cp": 2}],
                         ids=lambda v: ",".join(f"{k}{n}" for k, n in v.items()))
def test_api_expressions_are_the_tables(split):
    """``roofline.prefill(...).expressions`` at the setting's split gives the table's time,
    FLOPs and bytes at each prompt length."""
    r = api.prefill("H100-SXM", "Llama-3-8B", prompts=[300, 2048, 9000], **split)
    e = r.expressions
    for p in r.points:
        at = {T: p.prompt_tokens}
        assert math.isclose(float(e["time"].xreplace(at)), p.time_s, rel_tol=1e-12)
        assert math.isclose(float(e["flops"].xreplace(at)), p.flops, rel_tol=1e-12)
        assert math.isclose(float(e["bytes"].xreplace(at)), p.bytes, rel_tol=1e-12)
    assert not any(isinstance(s, Symbol) and s.name != "T" for s in e["time"].free_symbols)


def test_mixture_of_experts_expressions_at_ep8():
    r = api.prefill("H100-SXM", "Mixtral-8x7B", prompts=[2048], ep=8)
    (p,) = r.points
    assert math.isclose(float(r.expressions["time"].xreplace({T: 2048})), p.time_s,
                        rel_tol=1e-12)


def test_attention_traffic_is_one_devices_heads():
    """Llama-3-8B at tp 4: a device runs 8 of the 32 query heads and 2 of the 8 KV heads, so
    each attention mode's traffic is a quarter of one device's; at cp 2 half."""
    one = api.setting("H100-SXM", "Llama-3-8B")
    xs = [1024, 8192]
    for split, share in (({"tp": 4}, 4), ({"cp": 2}, 2)):
        s = api.setting("H100-SXM", "Llama-3-8B", **split)
        for mode in ("naive", "ideal"):
            for a, b in zip(sweeps.attention_bytes(s, xs, mode),
                            sweeps.attention_bytes(one, xs, mode)):
                assert math.isclose(a * share, b, rel_tol=1e-12)


def test_ttft_applies_the_setting():
    """``ttft --tp 2`` names the split (not "one device"), gives it in JSON, and its execution
    is ``prefill --tp 2``'s time; a chunked or batched TTFT under a split is refused."""
    r = api.ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=2.0, tp=2)
    assert "one device, no parallelism" not in str(r)
    assert "tensor parallel over 2" in str(r)
    assert r.as_dict()["splits"]["tp"] == 2
    (p,) = api.prefill("H100-SXM", "Llama-3-8B", prompts=[2048], tp=2).points
    assert math.isclose(r.as_dict()["execution_s"], p.time_s, rel_tol=1e-12)
    for option in ({"chunk": 512}, {"batch_prompts": 4}):
        with pytest.raises(InputError) as err:
            api.ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=2.0, tp=2, **option)
        assert err.value.option == next(iter(option))


def test_pipeline_stages_queue_at_the_slowest_stage():
    """Two pipeline stages, prompts whole through each, take a new prompt when the slower one
    is free: the steady state holds below 1/(slowest stage), not 1/(sum of the stages); the
    execution is the sum."""
    r = api.ttft("H100-SXM", "Llama-3-8B", prompt=4096, rate=2.0, pp=2,
                 pipeline="whole").as_dict()
    assert len(r["stage_s"]) == 2
    assert math.isclose(r["stable_rate_per_s"], 1 / max(r["stage_s"]), rel_tol=1e-9)
    assert r["execution_s"] >= sum(r["stage_s"]) * (1 - 1e-12)


def test_expert_parallel_ranks_are_servers():
    """At ep 8 each rank prefills its own prompts: eight servers of the arrivals, so the
    stable rate is 8 / execution, not 1 / execution."""
    r = api.ttft("H100-SXM", "Mixtral-8x7B", prompt=2048, rate=2.0, ep=8).as_dict()
    assert math.isclose(r["stable_rate_per_s"], 8 / r["execution_s"], rel_tol=1e-9)


def test_report_names_the_setting(tmp_path):
    """``report --weight-dtype fp8 --tp 8``: its summary and its crossover section name fp8
    weights and the split, and its compute-bound value is the parallel crossover's."""
    from roofline.report import build

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = build("H100-SXM", "Llama-3-8B", output=tmp_path / "r", figures=(),
                    weight_dtype="fp8", tp=8)
    assert "weights fp8" in rep.summary and "tensor parallel over 8" in rep.summary
    text = rep.markdown.read_text()
    c = crossover_value(api.setting("H100-SXM", "Llama-3-8B", weight_dtype="fp8", tp=8),
                        "prefill_compute_bound_tokens.kernel")
    assert f"compute-bound from T = {c.value:,.0f} tokens" in text
    assert "\\mathtt{\\text{}}" not in text  # no empty formula beside "never"


def test_crossover_json_gives_the_split():
    d = api.crossovers("H100-SXM", "Llama-3-70B", tp=8).as_dict()
    assert d["parallel"]["tp"] == 8
    json.dumps(d)


@pytest.mark.parametrize("pipeline", ["chunked", "whole"])
def test_pipeline_and_inter_op_are_one_model(pipeline):
    """``--pp 2`` and ``--parallel inter`` (two stages from the model) are the same queue, under
    either schedule: the same execution, queueing and stable rate, and every other part of the
    answer (the first token, the estimate, the setting's splits) but the word ``parallel``."""
    pp = api.ttft("H100-SXM", "Llama-3-8B", prompt=4096, rate=5.0, pp=2,
                  pipeline=pipeline).as_dict()
    inter = api.ttft("H100-SXM", "Llama-3-8B", prompt=4096, rate=5.0, parallel="inter",
                     pipeline=pipeline).as_dict()
    for key in ("execution_s", "queueing_s", "total_s", "stable_rate_per_s"):
        assert pp[key] == pytest.approx(inter[key], rel=1e-12), key
    # chunked: the pipeline serves one prompt at a time, no stage apart; whole: two stages
    if pipeline == "chunked":
        assert pp["stage_s"] is None and inter["stage_s"] is None
    else:
        assert pp["stage_s"] == pytest.approx(inter["stage_s"], rel=1e-12)
    assert pp.pop("parallel") is None and inter.pop("parallel") == "inter"
    assert inter["splits"]["pp"] == 2 and inter["first_token_s"] > 0 and pp == inter


@pytest.mark.parametrize("argv", [
    ["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--json"],
    ["crossover", "--hardware", "H100-SXM", "--model", "Mixtral-8x7B", "--json"],
    ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "2048",
     "--rate", "2"],
], ids=lambda a: a[0])
def test_degrees_of_one_are_no_degrees(argv, capsys):
    """``--tp 1 --pp 1 --ep 1 --cp 1`` gives byte for byte the output of no degree."""
    from roofline.cli import main

    outputs = []
    for extra in ([], ["--tp", "1", "--pp", "1", "--ep", "1", "--cp", "1"]):
        assert main([*argv, *extra]) in (0, None)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0]


@pytest.mark.parametrize("split", [{"tp": 2}, {"tp": 8}, {"cp": 2}, {"pp": 2}],
                         ids=lambda v: ",".join(f"{k}{n}" for k, n in v.items()))
def test_attention_overtakes_where_its_crossover_says_under_a_split(split):
    """``attention_dominates_time_tokens.kernel`` under a split, against ``prefill``'s own
    per-operation times of one device's share: the projections take longer below the value, the
    attention above it (within the kernel's staircase tolerance), for every model on H100 and
    MI300X (mixtures of experts too: each operation at its own roof on both sides)."""
    checked = 0
    for s, c in _crossovers(("H100-SXM", "MI300X"), split,
                            "attention_dominates_time_tokens.kernel"):
        below = max(1, math.floor(c.value * (1 - TOLERANCE)) - 1)
        above = math.ceil(c.value * (1 + TOLERANCE)) + 1
        shares = []
        for tokens in (below, above):
            (point,) = prefill(s, [tokens])
            times = {k: sum(o.time_s for o in point.operations if o.kind == k)
                     for k in ("attention", "projection")}
            shares.append(times["attention"] > times["projection"])
        assert shares == [False, True], (s.hardware.name, s.model.name, c.value)
        checked += 1
    assert checked > 5


def test_the_phases_figure_and_the_batch_crossover_agree_under_tp():
    """Llama-3-8B at tp 4 on H100 at its 8,192-token context: the largest decode batch memory
    holds (the phases figure's line) is the integer part of the batch crossover (the time
    figure's table), one device's share both: 4·59.5 = 238 or so, not one device's 59."""
    s = api.setting("H100-SXM", "Llama-3-8B", tp=4)
    c = crossover_value(s, "kv_cache_exceeds_memory_batch")
    assert sweeps.max_batch(s, 8192) == math.floor(c.value)
    assert c.value > 200


def test_plot_time_takes_the_batch_and_scaling_refuses_tp(tmp_path):
    """``plot time --batch 4`` draws the prefill of four sequences (a figure other than batch
    1's; a list of batches is refused there); ``plot scaling --tp 2`` is refused: it runs its
    own degrees."""
    from roofline.cli import main

    out = {}
    for batch in ("1", "4"):
        out[batch] = tmp_path / f"t{batch}.svg"
        assert main(["plot", "time", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                     "--batch", batch, "-o", str(out[batch])]) in (0, None)
    assert out["1"].read_bytes() != out["4"].read_bytes()
    for argv in (["time", "--batch", "1,4"], ["scaling", "--tp", "2"]):
        target = tmp_path / "refused.svg"
        assert main(["plot", argv[0], "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                     *argv[1:], "-o", str(target)]) == 2
        assert not target.exists()


def test_a_title_names_the_figure_and_the_whole_setting():
    """The time figure's title starts with its own name and names the KV cache's data type,
    the split and the overlap where they are set."""
    from roofline import plot
    from roofline.plot._common import title

    s = api.setting("H100-SXM", "Llama-3-8B", kv_dtype="fp8", tp=2, overlap=True)
    text = title("Prefill time", [s])
    assert text.startswith("Prefill time: Llama-3-8B on H100-SXM")
    assert "fp8 KV cache" in text and "TP 2" in text and "collectives overlapped" in text
    assert " ".join(plot.plot_time(s).get_title().split()) == text  # wrapped to the axes
