"""``roofline ttft`` end to end: output, JSON keys, and one line with exit status 2 per bad input.

Most tests replace the roofline prefill time by a stand-in (1 ms per 10 tokens) so that they
check the command's wiring; one test runs the real model when hardware and model files exist.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline import api, cli


@pytest.fixture(autouse=True)
def _registered(monkeypatch):
    if "ttft" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "ttft"))


@pytest.fixture
def stand_in(monkeypatch):
    """Prefill time = 1e-4 s per token: a 1000-token prompt takes 0.1 s."""
    monkeypatch.setattr(api, "_prefill_times",
                        lambda setting, lengths: np.asarray(lengths, dtype=float) * 1e-4)


BASE = ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B"]
M = "Llama-3-8B, bf16, kernel attention"


def _json(capsys, argv):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_hand_numbers(stand_in, capsys):
    out = _json(capsys, [*BASE, "--prompt", "1000", "--rate", "5", "--slo", "0.2", "--json"])
    assert out["execution_s"] == pytest.approx(0.1)
    assert out["queueing_s"] == pytest.approx(0.05)  # 5·0.01 / (2·0.5)
    assert out["total_s"] == pytest.approx(0.15)
    assert out["utilization"] == pytest.approx(0.5)
    assert out["max_rate_per_s"] == pytest.approx(20 / 3)
    assert out["stable_rate_per_s"] == pytest.approx(10)
    assert out["prompt"] == 1000 and out["rate_per_s"] == 5 and out["hardware"] == "H100-SXM"


def test_json_without_slo_has_no_max_rate(stand_in, capsys):
    out = _json(capsys, [*BASE, "--prompt", "1000", "--rate", "5", "--json"])
    assert out["max_rate_per_s"] is None


def test_intra_and_replicas(stand_in, capsys):
    out = _json(capsys, [*BASE, "--prompt", "1000", "--rate", "5", "--parallel", "intra",
                         "--speedup", "1.5", "--json"])
    assert out["total_s"] == pytest.approx(1 / 12)  # DistServe Eq. 3 at K = 1.5
    out = _json(capsys, [*BASE, "--prompt", "1000", "--rate", "10", "--replicas", "2", "--json"])
    assert out["total_s"] == pytest.approx(0.15)


def test_distribution_file(stand_in, capsys, tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("500\n2500  # long\n")  # 0.05 s and 0.25 s, equally likely
    out = _json(capsys, [*BASE, "--prompt-dist", str(path), "--rate", "5", "--json"])
    # E[t] = 0.15, E[t²] = 0.0325: 0.15 + 5·0.0325 / (2·0.25) = 0.475
    assert out["total_s"] == pytest.approx(0.475)
    assert out["prompt_dist"] == str(path)


def test_text_output(stand_in, capsys):
    assert cli.main([*BASE, "--prompt", "1000", "--rate", "5", "--slo", "0.05"]) == 0
    text = capsys.readouterr().out
    assert "execution    100 ms" in text and "queueing     50 ms" in text  # D = 0.1 s, R = 5/s
    assert "total        150 ms" in text
    assert "no arrival rate meets the target 0.05 s" in text


def _first_line(capsys, argv) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("extra, rate, config", [
    ([], "5", f"5 requests/s (H100-SXM, {M}; prompt 1000 tokens; one device, no parallelism)"),
    (["--parallel", "inter", "--pipeline", "whole"], "5",  # the model's stage times
     f"5 requests/s (H100-SXM, {M}; prompt 1000 tokens; two-way inter-op (pipeline) "
     "parallelism: 2 pipeline stages (whole: a prompt passes through each in turn, the stages "
     "summed); stage times from the model: * and *, the queue served at the slowest)"),
    (["--parallel", "inter"], "5",  # chunked, the default: one prompt at a time
     f"5 requests/s (H100-SXM, {M}; prompt 1000 tokens; two-way inter-op (pipeline) "
     "parallelism: 2 pipeline stages (chunked: a prompt takes at least a stage's mean share))"),
    (["--parallel", "intra", "--speedup", "1.6"], "5",
     f"5 requests/s (H100-SXM, {M}; prompt 1000 tokens; two-way intra-op parallelism, "
     "speedup K = 1.6)"),
    (["--replicas", "2"], "5",
     f"5 requests/s (H100-SXM, {M}; prompt 1000 tokens; one device, no parallelism; "
     "2 replicas, 2.5 requests/s each)"),
    ([], "1", f"1 request/s (H100-SXM, {M}; prompt 1000 tokens; one device, no parallelism)"),
])
def test_first_line_names_the_configuration(stand_in, capsys, extra, rate, config):
    from fnmatch import fnmatchcase

    line = _first_line(capsys, [*BASE, "--prompt", "1000", "--rate", rate, *extra])
    assert fnmatchcase(line, f"time to first token at {config}".replace("[", "[[]"))


def test_first_line_of_a_distribution_says_execution_is_a_mean(stand_in, capsys, tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("500\n2500\n")
    assert cli.main([*BASE, "--prompt-dist", str(path), "--rate", "1", "--slo", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"time to first token at 1 request/s (H100-SXM, {M}; prompt lengths "
                        f"from {path}: execution is the mean over them; one device, no "
                        "parallelism)")
    assert lines[1] == "  execution    150 ms (mean over the prompt lengths)"  # (0.05 + 0.25)/2
    # E[t] = 0.15 s: steady state below 1/0.15 = 6.667 requests/s
    assert lines[4] == "  utilization  0.150 (steady state below 6.667 requests/s)"


def test_rate_of_one_is_singular(monkeypatch, capsys):
    # prefill time 0.5 s: steady state below 1/0.5 = 2 requests/s; mean TTFT at rate R is
    # 0.5 + R·0.25/(2(1 − 0.5R)), which is 0.75 s at R = 1: the SLO 0.75 s is met up to 1 /s
    monkeypatch.setattr(api, "_prefill_times",
                        lambda setting, lengths: np.full(len(lengths), 0.5))
    assert cli.main([*BASE, "--prompt", "10", "--rate", "0.5", "--slo", "0.75"]) == 0
    out = capsys.readouterr().out
    assert "(steady state below 2 requests/s)" in out
    assert "highest rate meeting the target 0.75 s: 1 request/s" in out


def test_missing_distribution_file(stand_in, capsys, tmp_path):
    path = tmp_path / "none.txt"
    err = _error(capsys, [*BASE, "--prompt-dist", str(path), "--rate", "1"])
    assert err == (f"roofline: error: --prompt-dist: cannot read the file: No such file or "
                   f"directory (got '{path}')\n")


def _warnings(capsys, argv) -> tuple[str, list[str]]:
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    return out, [line for line in err.splitlines() if line.startswith("roofline: warning: ")]


def test_prompt_beyond_the_context_warns_like_prefill(capsys):
    out, warned = _warnings(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                                     "--prompt", "100000", "--rate", "0.01"])
    assert warned == ["roofline: warning: prompt: 100000 tokens is beyond Llama-3-8B's "
                      "context of 8192 tokens"]
    assert out.startswith("time to first token at 0.01 requests/s (H100-SXM, Llama-3-8B, bf16, "
                          "kernel attention; prompt 100000 tokens;")


def test_distribution_beyond_the_context_warns(capsys, tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("512\n9000\n")
    _, warned = _warnings(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                                   "--prompt-dist", str(path), "--rate", "0.01"])
    assert warned == [f"roofline: warning: prompt_dist: 9000 tokens (the longest in {path}) "
                      "is beyond Llama-3-8B's context of 8192 tokens"]


def test_no_warning_within_the_context(capsys):
    _, warned = _warnings(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                                   "--prompt", "8192", "--rate", "1"])
    assert warned == []


def test_default_attention_and_setting_warnings(capsys):
    # TPU-v4 gives no SRAM per SM: the default kernel mode needs none (its tiles are the
    # released kernels' own), so it is kept, without a warning
    out = _json(capsys, ["ttft", "--hardware", "TPU-v4", "--model", "Llama-3-8B", "--prompt",
                         "128", "--rate", "1", "--json"])
    assert out["attention"] == "kernel"
    _, warned = _warnings(capsys, ["ttft", "--hardware", "TPU-v4", "--model", "Llama-3-8B",
                                   "--prompt", "128", "--rate", "1"])
    assert warned == []
    # Llama-3-8B's bf16 weights, 2 × 8,030,261,248 bytes = 16.06 GB, fit in TPU-v5e's 16 GiB
    # (17.18 GB, Google's Cloud TPU v5e page); OPT-13B's, 2 × 12,853,473,280 = 25.71 GB, do not
    _, warned = _warnings(capsys, ["ttft", "--hardware", "TPU-v5e", "--model", "Llama-3-8B",
                                   "--prompt", "128", "--rate", "0.01"])
    assert warned == []
    _, warned = _warnings(capsys, ["ttft", "--hardware", "TPU-v5e", "--model", "OPT-13B",
                                   "--prompt", "128", "--rate", "0.01", "--attention", "ideal"])
    assert len(warned) == 1 and "OPT-13B's weights (25.71 GB in bf16) do not fit" in warned[0]
    # an explicit mode is kept
    out = _json(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt",
                         "128", "--rate", "1", "--attention", "naive", "--json"])
    assert out["attention"] == "naive"


def _error(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


@pytest.mark.parametrize("rate", ["0", "-2"])
def test_bad_rate(stand_in, capsys, rate):
    err = _error(capsys, [*BASE, "--prompt", "1000", "--rate", rate])
    assert err.startswith("roofline: error: --rate: the arrival rate must be a finite number > 0")


def test_no_steady_state(stand_in, capsys):
    err = _error(capsys, [*BASE, "--prompt", "1200", "--rate", "10"])
    assert err == ("roofline: error: --rate: the queue has no steady state at load R·t = 1.2 "
                   "≥ 1; the largest rate it can take is 8.33 /s (got 10)\n")


def test_empty_distribution(stand_in, capsys, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    err = _error(capsys, [*BASE, "--prompt-dist", str(path), "--rate", "1"])
    assert f"{path}: holds no prompt lengths" in err


def test_malformed_distribution(stand_in, capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("100\ntwelve\n")
    err = _error(capsys, [*BASE, "--prompt-dist", str(path), "--rate", "1"])
    assert f"{path}:2: a line is a positive integer length" in err and "'twelve'" in err


@pytest.mark.parametrize("k", ["1", "2.5"])
def test_bad_speedup(stand_in, capsys, k):
    err = _error(capsys, [*BASE, "--prompt", "1000", "--rate", "1", "--parallel", "intra",
                          "--speedup", k])
    assert "--speedup: a two-way intra-op speedup must lie in (1, 2]" in err


def test_speedup_needs_intra(stand_in, capsys):
    err = _error(capsys, [*BASE, "--prompt", "1000", "--rate", "1", "--speedup", "1.5"])
    assert "--speedup: applies only with intra-op parallelism" in err


def test_bad_prompt(stand_in, capsys):
    err = _error(capsys, [*BASE, "--prompt", "0", "--rate", "1"])
    assert "--prompt: a prompt length must be a positive integer of at most 1,000,000,000 " \
        "tokens (got 0)" in err


def test_real_model_end_to_end(capsys):
    """With the shipped files: execution is the roofline prefill time of the prompt."""
    evaluate = pytest.importorskip("roofline.evaluate")
    specs_model = pytest.importorskip("roofline.specs.model")
    from roofline.specs._shipped import shipped_files
    from roofline.specs.hardware import load_hardware

    models = shipped_files("models", ".json")
    if not models:
        pytest.skip("no shipped model files yet")
    model_path = str(models[0])
    setting = evaluate.Setting(hardware=load_hardware("H100-SXM"),
                               model=specs_model.load_model(model_path))
    t = float(evaluate.prefill_time(setting, np.array([2048]))[0])
    rate = 0.5 / t
    out = _json(capsys, ["ttft", "--hardware", "H100-SXM", "--model", model_path,
                         "--prompt", "2048", "--rate", repr(rate), "--json"])
    assert out["execution_s"] == pytest.approx(t)
    assert out["queueing_s"] == pytest.approx(rate * t**2 / (2 * (1 - 0.5)))
