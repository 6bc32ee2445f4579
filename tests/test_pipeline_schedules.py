"""The two schedules of one prompt through pipeline stages (``roofline.derive.pipeline``):
``chunked``, the default bound (a stage's mean share of the work, the sends hidden), and
``whole`` (DistServe's inter-op instance: the stages' sum and the sends); each held against a
second computation: the one-device prefill, the per-stage times of
:func:`roofline.evaluate.parallel.stage_times` (vLLM's split of the layers), and a published
chunked-pipeline measurement."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from roofline import api
from roofline.evaluate.crossover import crossover_value
from roofline.evaluate.parallel import stage_times
from roofline.specs.hardware import load_hardware



def _quiet(call, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kw)


def test_chunked_is_a_stage_mean_share_of_one_devices_prefill():
    """Llama-2-70B over 4 stages of one device each: every number of the one-device prefill
    over 4 (80 layers, 20 a stage), no send; the intensity and the regime unchanged."""
    one = _quiet(api.prefill, "H100-SXM", "Llama-2-70B", [512, 8192]).points
    four = _quiet(api.prefill, "H100-SXM", "Llama-2-70B", [512, 8192], pp=4).points
    for a, b in zip(one, four):
        assert b.time_s == pytest.approx(a.time_s / 4, rel=1e-12)
        assert b.flops == pytest.approx(a.flops / 4, rel=1e-12)
        assert b.bytes == pytest.approx(a.bytes / 4, rel=1e-12)
        assert b.bound == a.bound
        assert not any(o.name.startswith("pp.") for o in b.operations)
        counts = {o.name: o.count for o in b.operations}
        assert counts["mlp.up"] == 20 and counts["lm_head"] == 0.25


# (model, options): layers that split evenly and not (Mixtral's 32 over 3: 11, 11, 10), a
# tensor-parallel stage, stages across nodes, a mixture of experts with dense first layers
CASES = [("Llama-3-8B", {"pp": 2}), ("Llama-3-8B", {"pp": 4}), ("Mixtral-8x7B", {"pp": 3}),
         ("Llama-2-70B", {"tp": 4, "pp": 4, "network": "InfiniBand-NDR"}),
         ("DeepSeek-V3", {"tp": 8, "pp": 4, "network": "InfiniBand-NDR", "dtype": "fp8"})]


@pytest.mark.parametrize("model, options", CASES,
                         ids=[f"{m}-pp{o['pp']}" for m, o in CASES])
def test_chunked_bound_lies_under_the_slowest_stage_and_the_sum(model, options):
    """The chunked bound is at most the busiest stage's time, which any schedule takes; it is
    the mean of stages that differ by a layer and their edges, within 8 % of the busiest from
    4,096 tokens (DeepSeek-V3's 61 layers over 4: 16 on the busiest, 15.25 the mean) (short prompts, where the last stage's LM head weighs most, are looser:
    Llama-3-8B's last of 4 stages is 11 % above the mean at 512 tokens, 20 % at 16); the
    whole schedule is the stages' sum."""
    prompts = [16, 512, 4096, 32768]
    s = _quiet(api.setting, "H100-SXM", model, **options)
    stages = stage_times(s, prompts)  # vLLM's split, the sends in: the whole schedule's
    chunked = [p.time_s for p in _quiet(api.prefill, "H100-SXM", model, prompts,
                                        **options).points]
    whole = [p.time_s for p in _quiet(api.prefill, "H100-SXM", model, prompts,
                                      pipeline="whole", **options).points]
    for k, t in enumerate(chunked):
        slowest = stages[:, k].max()
        assert t <= slowest * (1 + 1e-12)
        assert t >= (0.92 if prompts[k] >= 4096 else 0.75) * slowest
        assert whole[k] == pytest.approx(stages[:, k].sum(), rel=1e-9)


def test_published_chunked_pipeline_is_not_beaten():
    """SGLang's chunked pipeline parallelism (LMSYS blog "Pipeline Parallelism in SGLang",
    2026-01-15, lmsys.org/blog/2026-01-15-chunked-pipeline): DeepSeek-V3.1 (DeepSeek-V3's
    shape, fp8 weights) at 128K (128,000) input tokens on 4 nodes of 8 H20, TP 8 and PP 4, first
    token in 15.7 s. The chunked bound (fp8 GEMMs at the fp8 peak, the permissive reading) stays
    under it; the whole-prompt schedule's sum, the default before, is beaten by it."""
    hw = load_hardware("H20")  # also a row of published/parallel.toml
    options = {"dtype": "fp8", "tp": 8, "pp": 4, "network": "InfiniBand-NDR"}
    measured = 15.7
    (chunked,) = _quiet(api.prefill, hw, "DeepSeek-V3", [128_000], **options).points
    (whole,) = _quiet(api.prefill, hw, "DeepSeek-V3", [128_000], pipeline="whole",
                      **options).points
    assert chunked.time_s <= measured < whole.time_s
    assert 2 < measured / chunked.time_s < 3.5  # how tight: about 2.7×


def test_crossovers_under_a_chunked_pipeline_are_one_devices():
    """Every time of a stage's mean share is the one device's over N_pp, so the crossovers
    between two of its times do not move; and ``prefill`` changes regime between the floor and
    the ceiling of the crossover printed for the same setting."""
    for name in ("prefill_compute_bound_tokens.kernel", "attention_dominates_time_tokens.kernel"):
        one = crossover_value(_quiet(api.setting, "H100-SXM", "Llama-3-8B"), name).value
        s = _quiet(api.setting, "H100-SXM", "Llama-3-8B", pp=2)
        assert crossover_value(s, name).value == pytest.approx(one, rel=1e-9)
    c = crossover_value(s, "prefill_compute_bound_tokens.kernel").value
    below, above = _quiet(api.prefill, "H100-SXM", "Llama-3-8B", [int(c), int(c) + 1],
                          pp=2).points
    assert (below.bound, above.bound) == ("memory", "compute")


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "roofline", *argv], capture_output=True,
                          text=True, timeout=300)


def test_cli_names_the_schedule_and_refuses_an_unknown_one():
    base = ("prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "4096",
            "--pp", "2")
    out = _cli(*base).stdout
    assert "2 pipeline stages (chunked: a prompt takes at least a stage's mean share)" in out
    assert "(a stage's mean share: 1/2 of each, 16 of 32 layers)" in out
    out = _cli(*base, "--pipeline", "whole").stdout
    assert "whole: a prompt passes through each in turn" in out and "pp.send" in out
    d = json.loads(_cli(*base, "--pipeline", "whole", "--json").stdout)
    assert d["parallel"]["pipeline"] == "whole"
    bad = _cli(*base, "--pipeline", "staggered")
    assert bad.returncode == 2 and "--pipeline" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) <= 2
