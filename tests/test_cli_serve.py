"""``roofline hybrid`` and ``roofline request`` end to end: the numbers they print agree with
the API's and with each other, and each bad input is one line with exit status 2."""

from __future__ import annotations

import json

import pytest

from roofline import cli

HYBRID = ["hybrid", "--hardware", "H100-SXM", "--model", "Llama-3-8B"]
REQUEST = ["request", "--hardware", "H100-SXM", "--model", "Llama-3-8B"]
GOODPUT = ["goodput", "--hardware", "A100-80GB-SXM", "--model", "OPT-13B", "--prompt", "512",
           "--output", "128", "--ttft", "0.25", "--tpot", "0.1"]


def _json(capsys, argv):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_hybrid_json_agrees_with_the_prefill_command(capsys):
    """The decodes alone are `prefill`'s decode step at that batch and context."""
    out = _json(capsys, [*HYBRID, "--decodes", "16", "--context", "4096", "--tpot", "0.02",
                         "--json"])
    table = _json(capsys, ["prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                           "--prompt", "4096", "--batch", "16", "--json"])
    assert out["decodes_alone"]["time_s"] == pytest.approx(table["decode"]["time_s"])
    b = out["budget"]
    assert b["chunk"] + 1 == b["beyond"]["chunk"]
    assert b["at"]["time_s"] <= 0.02 < b["beyond"]["time_s"]


def test_hybrid_text_names_the_budget_and_its_crossover(capsys):
    assert cli.main([*HYBRID, "--decodes", "32", "--context", "2048", "--tpot", "0.03",
                     "--prompt", "4096"]) == 0
    text = capsys.readouterr().out
    assert "tpot_chunk_budget_tokens.kernel" in text and "over the objective" in text
    assert "steps of up to" in text


def test_request_text_and_json_agree(capsys):
    out = _json(capsys, [*REQUEST, "--prompt", "2048", "--output", "128", "--batch", "8",
                         "--json"])
    assert cli.main([*REQUEST, "--prompt", "2048", "--output", "128", "--batch", "8"]) == 0
    text = capsys.readouterr().out
    assert f"in {127} steps" in text and f"{out['max_batch_at_prompt']:,} sequences" in text
    assert out["total_s"] == pytest.approx(out["prefill_s"] + out["decode_s"])


@pytest.mark.parametrize("argv, words", [
    ([*HYBRID, "--decodes", "8", "--context", "100", "--tpot", "0"], "TPOT objective"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--tpot", "-1"], "TPOT objective"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--prompt", "500"], "needs a chunk"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--batch", "4"], "batch"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--pp", "2"], "pp, ep and cp"),
    ([*HYBRID, "--decodes", "0", "--context", "100"], "with no decodes give none"),
    ([*HYBRID, "--decodes", "0", "--context", "100", "--chunk", "512"],
     "with no decodes give none"),
    ([*HYBRID, "--decodes", "0"], "a step of nothing"),
    ([*HYBRID, "--decodes", "4"], "give it with the decodes"),
    (["hybrid", "--hardware", "H100-SXM", "--model", "DeepSeek-V2-Lite", "--decodes", "8",
      "--context", "100", "--tpot", "0.1"], "latent attention"),
    ([*REQUEST, "--prompt", "100", "--output", "0"], "positive integer"),
    ([*REQUEST, "--prompt", "100", "--output", "20000000"], "at most"),
    ([*REQUEST, "--prompt", "100", "--output", "10", "--pp", "2"], "--pp"),
    ([*REQUEST, "--prompt", "100", "--output", "10", "--cp", "2"], "--cp"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--pp", "2"], "--pp"),
    ([*HYBRID, "--decodes", "8", "--context", "100", "--done", "50"], "--done"),
    ([*REQUEST, "--prompt", "100", "--output", "99999999999"], "10,000,000"),
    ([*GOODPUT, "--attainment", "1"], "attainment"),
    ([*GOODPUT, "--tp", "2"], "searches the parallelism"),
    ([*GOODPUT[:7], "--output", "1", "--ttft", "0.25", "--tpot", "0.1"], "at least 2"),
])
def test_bad_input_is_one_line(capsys, argv, words):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert "\n" not in err and err.startswith("roofline: error:") and words in err


def test_goodput_text_and_json_agree(capsys):
    out = _json(capsys, [*GOODPUT, "--json"])
    assert cli.main(GOODPUT) == 0
    text = capsys.readouterr().out
    assert f"better         {out['winner']}" in text
    assert f"TP {out['prefill']['tp']} PP {out['prefill']['pp']}" in text
    assert out["disaggregated_per_device"] == pytest.approx(
        1 / (out["prefill"]["devices"] / out["prefill"]["rate_per_s"]
             + out["decode"]["devices"] / out["decode"]["rate_per_s"]))


def test_hybrid_prompt_under_a_budget_meets_the_objective(capsys):
    """Each chunk the budget at its own offset: no step over the objective."""
    out = _json(capsys, [*HYBRID, "--decodes", "32", "--context", "2048", "--tpot", "0.05",
                         "--prompt", "8192", "--json"])
    steps = out["prompt"]["steps"]
    assert sum(s["chunk"] for s in steps) == 8192
    assert all(s["time_s"] <= 0.05 for s in steps) and out["prompt"]["slowest_step_s"] <= 0.05


def test_a_chunk_alone_with_no_decodes(capsys):
    """--decodes 0: the chunk's step alone (B_d = 0: the chunk's prefill, by substitution in
    tests/test_serving_hybrid.py), the same as a chunk beside decodes less what the decodes add
    (a second road: the step with decodes and the decodes alone, one weight read shared)."""
    from roofline.api import setting
    from roofline.serving.hybrid import step

    assert cli.main([*HYBRID, "--decodes", "0", "--chunk", "512", "--done", "1024",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decodes_alone"] is None and out["budget"] is None
    s = setting("H100-SXM", "Llama-3-8B")
    both, decodes = step(s, 512, 1024, 32, 2048), step(s, 0, 0, 32, 2048)
    weights = both.bytes - out["step"]["bytes"] - decodes.bytes  # −(one read of the layers)
    assert out["step"]["flops"] == pytest.approx(both.flops - decodes.flops, rel=1e-12)
    assert -weights == pytest.approx(2 * (32 * (4096 * 10240 + 3 * 4096 * 14336)
                                          + 32 * 2 * 4096), rel=1e-12)
    assert cli.main([*HYBRID, "--decodes", "0", "--chunk", "512", "--prompt", "2048"]) == 0
    text = capsys.readouterr().out
    assert "no decodes" in text and "in 4 steps of up to 512 alone" in text
    assert "TPOT" not in text
