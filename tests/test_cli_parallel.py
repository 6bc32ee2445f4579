"""End to end: --tp, --overlap, --pp on the commands, bad values one line and status 2; the
intra-op speedup K derived for ttft."""

from __future__ import annotations

import json
import warnings

import pytest

from roofline import api
from roofline.cli import main

warnings.filterwarnings("ignore")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_prefill_tp_lists_the_all_reduces(capsys):
    code, out, _ = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-2-70B",
                       "--prompt", "2048", "--tp", "8")
    assert code == 0
    assert "tensor parallel over 8 devices" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("tp.all_reduce.attn"))
    assert "communication" in line and line.split()[-1] == "link"


def test_prefill_tp_json(capsys):
    code, out, _ = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-2-70B",
                       "--prompt", "2048", "--tp", "2", "--overlap", "--json")
    assert code == 0
    d = json.loads(out)
    assert "tp.all_reduce.mlp" in json.dumps(d)


@pytest.mark.parametrize("argv, message", [
    (("--tp", "0"), "--tp: must be a positive integer"),
    (("--tp", "-2"), "--tp: must be a positive integer"),
    (("--tp", "3"), "--tp: must divide Llama-2-70B's 64 query heads"),
    (("--pp", "81"), "--pp: must be at most Llama-2-70B's 80 layers"),
])
def test_bad_parallel_options(capsys, argv, message):
    code, out, err = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-2-70B",
                         *argv)
    assert code == 2 and out == ""
    errors = [ln for ln in err.splitlines() if "error" in ln]
    assert len(errors) == 1 and message in errors[0]


def test_no_interconnect(capsys):
    code, _, err = run(capsys, "crossover", "--hardware", "TPU-v4", "--model", "Llama-2-7B",
                       "--tp", "2")
    assert code == 2 and "--tp: 2 devices need an interconnect, which TPU-v4" in err


def test_ttft_intra_derives_k(capsys):
    code, out, _ = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-2-70B",
                       "--prompt", "2048", "--rate", "1", "--parallel", "intra")
    assert code == 0 and "derived: t(1 device)/t(2 devices, tensor parallel)" in out
    one = api.prefill("H100-SXM", "Llama-2-70B", [2048]).points[0].time_s
    two = api.prefill("H100-SXM", "Llama-2-70B", [2048], tp=2).points[0].time_s
    result = api.ttft("H100-SXM", "Llama-2-70B", prompt=2048, rate=1.0, parallel="intra")
    assert result.speedup == pytest.approx(one / two, rel=1e-9) and result.speedup_derived
    assert 1 < result.speedup < 2
    given = api.ttft("H100-SXM", "Llama-2-70B", prompt=2048, rate=1.0, parallel="intra",
                     speedup=1.5)
    assert given.speedup == 1.5 and not given.speedup_derived


def test_ttft_intra_without_interconnect(capsys):
    code, _, err = run(capsys, "ttft", "--hardware", "TPU-v4", "--model", "Llama-2-7B",
                       "--prompt", "128", "--rate", "1", "--parallel", "intra")
    assert code == 2 and "--speedup: cannot be derived" in err and "give the speedup K" in err


# --- expert and context parallelism, the network, inter-op from the model (issue 13) --------
@pytest.mark.parametrize("argv, message", [
    (("--model", "Llama-3-8B", "--ep", "2"),
     "--ep: needs a mixture-of-experts model; Llama-3-8B is dense"),
    (("--model", "Mixtral-8x7B", "--ep", "3"), "--ep: must divide Mixtral-8x7B's 8 routed experts"),
    (("--model", "Mixtral-8x7B", "--ep", "0"), "--ep: must be a positive integer"),
    (("--model", "Llama-3-8B", "--cp", "0"), "--cp: must be a positive integer"),
    (("--model", "Llama-3-8B", "--cp", "2.5"), "--cp: must be a positive integer"),
    (("--model", "Llama-3-8B", "--cp", "16"), "--network: the cp group spans 16 devices"),
    (("--model", "Llama-3-8B", "--cp", "2", "--hardware", "TPU-v4"),
     "--cp: 2 devices need an interconnect, which TPU-v4"),
    (("--model", "Llama-3-8B", "--network", "Ethernet"), "unknown network 'Ethernet'"),
])
@pytest.mark.parametrize("command", ["prefill", "crossover", "ttft", "plot", "report"])
def test_bad_ep_cp_network_options(capsys, tmp_path, command, argv, message):
    options = dict(zip(argv[::2], argv[1::2]))
    options.setdefault("--hardware", "H100-SXM")
    flat = [x for kv in options.items() for x in kv]
    extra = {"ttft": ["--prompt", "128", "--rate", "1"], "plot": ["-o", str(tmp_path / "f.png")],
             "report": ["-o", str(tmp_path / "r")]}.get(command, [])
    head = ["plot", "scaling"] if command == "plot" else [command]
    code, out, err = run(capsys, *head, *flat, *extra)
    assert code == 2 and out == ""
    errors = [ln for ln in err.splitlines() if "error" in ln]
    assert len(errors) == 1 and message in errors[0]


@pytest.mark.parametrize("command", ["prefill", "crossover", "ttft"])
def test_ep_and_cp_run_on_each_command(capsys, command):
    extra = ["--prompt", "2048", "--rate", "1"] if command == "ttft" else []
    code, out, _ = run(capsys, command, "--hardware", "H100-SXM", "--model", "Mixtral-8x7B",
                       "--ep", "4", "--cp", "2", *extra)
    assert code == 0 and out
    if command == "prefill":
        assert "expert parallel over 4" in out and "context parallel over 2" in out
        for name in ("ep.dispatch", "ep.combine", "cp.kv_pass"):
            line = next(ln for ln in out.splitlines() if ln.startswith(name))
            assert "communication" in line
    if command == "crossover":
        assert "ep_alltoall_hidden_tokens" in out and "cp_kv_pass_hidden_tokens" in out


def test_plot_and_report_take_ep_and_cp(capsys, tmp_path, small_figures):
    code, out, _ = run(capsys, "plot", "time", "--hardware", "H100-SXM", "--model",
                       "Mixtral-8x7B", "--ep", "8", "-o", str(tmp_path / "t.svg"))
    assert code == 0 and (tmp_path / "t.svg").exists()
    code, out, _ = run(capsys, "report", "--model", "Llama-3-8B", "--cp", "2", "-o",
                       str(tmp_path / "r"))
    assert code == 0 and "context parallel over 2" in (tmp_path / "r" / "report.md").read_text()


def test_ttft_inter_takes_the_stage_times_from_the_model(capsys):
    """Llama-3-8B, 2 stages of 16 layers, prompts whole through each (DistServe's inter-op):
    the stages differ by their edges (the first holds the embedding and sends 2048·4096·2
    bytes on, the last the final norm and the LM head); the execution is their sum, the queue
    is served at the slower."""
    from dataclasses import replace

    from roofline.evaluate import phases, points

    code, out, _ = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "2048", "--rate", "10", "--parallel", "inter",
                       "--pipeline", "whole")
    assert code == 0 and "stage times from the model" in out
    r = api.ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=10.0, parallel="inter",
                 pipeline="whole")
    first, last = r.stage_s
    two = replace(api.setting("H100-SXM", "Llama-3-8B", pipeline="whole"), pp=2)
    ops = {o.name: o for o in points.prefill(two, [2048])[0].operations}
    send = 0.47e-6 + 2048 * 4096 * 2 / 450e9
    assert ops["pp.send"].time_s == pytest.approx(send)
    edges = ops["embedding"].time_s + send - ops["final_norm"].time_s - ops["lm_head"].time_s
    assert first - last == pytest.approx(edges, rel=1e-9)
    assert r.queue.execution == pytest.approx(first + last, rel=1e-12)
    assert r.queue.execution == pytest.approx(float(phases.prefill_time(two, [2048])[0]),
                                              rel=1e-12)
    assert r.queue.mean == max(first, last) and r.queue.stable_rate == 1 / max(first, last)
    one = api.ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=10.0)
    assert r.queue.mean < 0.51 * one.mean_s  # about half: the rate doubles


def test_ttft_inter_refusals(capsys):
    code, _, err = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "2048", "--rate", "1", "--parallel", "inter", "--speedup",
                       "1.5")
    assert code == 2 and "--speedup: applies only with intra-op parallelism" in err
    code, _, err = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "2048", "--rate", "1", "--parallel", "inter", "--pp", "17",
                       "--network", "InfiniBand-NDR")
    assert code == 2 and "--parallel: inter-op needs the layers split over 34 pipeline " \
        "stages (pp: must be at most Llama-3-8B's 32 layers)" in err
