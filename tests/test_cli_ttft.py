"""``roofline ttft`` end to end: output, JSON keys, and one line with exit status 2 per bad input.

Most tests replace the roofline prefill time by a stand-in (1 ms per 10 tokens) so that they
check the command's wiring; one test runs the real model when hardware and model files exist.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline import cli
from roofline.cli import ttft as ttft_cli


@pytest.fixture(autouse=True)
def _registered(monkeypatch):
    if "ttft" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "ttft"))


@pytest.fixture
def stand_in(monkeypatch):
    """Prefill time = 1e-4 s per token: a 1000-token prompt takes 0.1 s."""
    monkeypatch.setattr(ttft_cli, "_prefill_times",
                        lambda args, lengths: np.asarray(lengths, dtype=float) * 1e-4)


BASE = ["ttft", "--hardware", "H100-SXM", "--model", "m"]


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
    assert "--speedup: applies only with --parallel intra" in err


def test_bad_prompt(stand_in, capsys):
    err = _error(capsys, [*BASE, "--prompt", "0", "--rate", "1"])
    assert "--prompt: a prompt length must be a positive integer (got 0)" in err


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
