"""The command line's promises, whatever the command: an output that cannot be written, Ctrl-C,
strict JSON, and the same setting options in every command that evaluates a setting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli import INTERRUPTED, main, print_json

SETTING = ["--hardware", "H100-SXM", "--model", "Llama-3-8B"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_standard_output_that_cannot_be_written_is_one_line_and_status_2():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "roofline", "prefill", *SETTING],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ("roofline: error: standard output: cannot write: "
                           "No space left on device\n")


def test_ctrl_c_is_one_line_and_status_130(capsys, monkeypatch):
    import roofline.api

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(roofline.api, "prefill", interrupted)
    code, out, err = run(capsys, "prefill", *SETTING)
    assert (code, out, err) == (INTERRUPTED, "", "roofline: interrupted\n")


def test_ctrl_c_during_docs_leaves_no_temporary_file(capsys, monkeypatch, tmp_path):
    import os

    from roofline import docs

    monkeypatch.setattr(docs, "generate", lambda: {"README.md": "x\n", "a.md": "y\n"})
    real = os.replace

    def interrupted(src, dst):
        if Path(dst).name == "a.md":
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    code, _, err = run(capsys, "docs", "-o", str(tmp_path / "d"))
    assert (code, err) == (INTERRUPTED, "roofline: interrupted\n")
    # README.md (sorted first) was renamed into place, then taken back: all pages or none; a.md
    # was never renamed, its temporary file is gone, and so is the folder the command made
    assert not (tmp_path / "d").exists()


def test_json_is_strict_a_non_finite_number_is_null(capsys, monkeypatch):
    from roofline import api, evaluate

    real = evaluate.prefill

    def with_an_operation_that_moves_no_bytes(s, prompts):
        points = list(real(s, prompts))  # the records, to change one
        ops = points[0].operations
        ops[0] = ops[0]._replace(bytes=0.0, intensity=float("inf"))
        return points

    monkeypatch.setattr(api.evaluate, "prefill", with_an_operation_that_moves_no_bytes)
    code, out, _ = run(capsys, "prefill", *SETTING, "--prompt", "128", "--json")
    assert code == 0 and "Infinity" not in out and "NaN" not in out
    op = json.loads(out)["results"][0]["operations"][0]
    assert op["bytes"] == 0 and op["intensity"] is None


def test_print_json_turns_every_non_finite_float_into_null(capsys):
    print_json({"b": [float("nan"), 1.5, (float("-inf"), 2)], "a": {"c": float("inf")}})
    out = capsys.readouterr().out
    assert json.loads(out) == {"a": {"c": None}, "b": [None, 1.5, [None, 2]]}
    assert out.index('"a"') < out.index('"b"')  # keys sorted


def test_report_takes_the_setting_options_of_prefill(capsys, small_figures, tmp_path):
    code, out, err = run(capsys, "report", "--weight-dtype", "int4", "--kv-dtype", "fp8",
                         "--batch", "4", "--attention", "naive", "-o", str(tmp_path / "r"))
    assert code == 0, err
    text = (tmp_path / "r" / "report.md").read_text()
    assert text.startswith("# Prefill roofline: Llama-3-8B on H100-SXM (bf16")  # the defaults
    assert "| precision | compute bf16, weights int4, activations bf16, kv_cache fp8 |" in text
    assert "| attention | naive; batch 4 |" in text


@pytest.mark.parametrize("argv,message", [
    (["--batch", "0"], "--batch: "),
    (["--weight-dtype", "int3"], "--weight-dtype: must be one of"),
])
def test_report_setting_options_are_checked_as_in_prefill(capsys, tmp_path, argv, message):
    code, out, err = run(capsys, "report", *argv, "-o", str(tmp_path / "r"))
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_the_title_names_weight_and_kv_dtypes_that_differ(capsys):
    code, out, _ = run(capsys, "prefill", *SETTING, "--prompt", "128", "--weight-dtype", "int4",
                       "--kv-dtype", "fp8")
    assert code == 0 and out.startswith("Prefill of Llama-3-8B on H100-SXM (bf16, weights int4, "
                                        "KV cache fp8, kernel attention, batch 1;")
    code, out, _ = run(capsys, "crossover", *SETTING, "--weight-dtype", "bf16", "--kv-dtype",
                       "fp8")
    assert code == 0 and out.startswith("Crossovers of Llama-3-8B on H100-SXM (bf16, KV cache "
                                        "fp8, batch 1;")


def test_an_error_quoting_a_line_break_is_still_one_line(capsys):
    code, out, err = run(capsys, "prefill", *SETTING, "--dtype", "fp\n99\x1c\u2028")
    assert code == 2 and out == "" and err.count("\n") == 1 and len(err.splitlines()) == 1
    assert err.startswith("roofline: error: --dtype: H100-SXM has no fp\\n99\\x1c\\u2028;")


def test_an_error_quoting_a_huge_value_is_cut(capsys, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "z" * 100_000}), encoding="utf-8")
    code, out, err = run(capsys, "model", "show", str(config))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert len(err) < 2100 and err.endswith(" more characters)\n")


def _as_from_a_shell() -> None:
    """The child's Ctrl-C as a terminal gives it: the default action, not blocked. A test
    worker's own (ignored or blocked, as a parallel runner may leave it) would be inherited
    through fork and exec, and the run would never see the signal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_in_a_real_run_of_report_is_one_line_and_removes_its_temporary_folder(tmp_path):
    import shutil
    import signal
    import time

    for _ in range(5):  # a run that ends between the look and the signal is run again
        run = subprocess.Popen([sys.executable, "-m", "roofline", "report", "-o", "r"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=_as_from_a_shell)
        try:
            deadline = time.monotonic() + 60
            while not list(tmp_path.glob(".r.tmp-*")) and run.poll() is None:  # drawing
                assert time.monotonic() < deadline
                time.sleep(0.02)
            run.send_signal(signal.SIGINT)
            out, err = run.communicate(timeout=60)
        finally:
            run.kill()
        if run.returncode != 0:
            break
        shutil.rmtree(tmp_path / "r")  # done before the signal came (a loaded machine)
    worker = (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, []))
    assert (run.returncode, err) == (INTERRUPTED, "roofline: interrupted\n"), (worker, out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["prefill", "--context", "2" * 60], "--context: must be at most 1,000,000,000"),
    (["prefill", "--context", "0"], "--context: must be a positive integer"),
    (["ttft", "--prompt", "128", "--rate", "1", "--replicas", "9" * 50],
     "--replicas: must be at most 1,000,000"),
])
def test_counts_are_bounded(argv, message, capsys):
    """A count of 10⁵⁰ replicas or a context of 10⁵⁹ tokens was evaluated (a decode step of
    10⁹⁷ s, a queue of 10⁵⁰ replicas); now one line."""
    from roofline.cli import main

    assert main([*argv, "--hardware", "H100-SXM", "--model", "Llama-3-8B"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"roofline: error: {message}") and err.count("\n") == 1


def test_a_warning_given_twice_is_printed_once(capsys, monkeypatch):
    """The same warning from several figures or operations (matplotlib's missing glyph of a
    device's name, once per label) is one line, in the order first given."""
    import warnings

    from roofline import api

    real = api.prefill

    def warning_twice(*args, **kwargs):
        for text in ("the same thing", "another", "the same thing"):
            warnings.warn(text, UserWarning)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "prefill", warning_twice)
    code, out, err = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                         "--prompt", "128")
    assert code == 0 and out
    assert err.splitlines() == ["roofline: warning: the same thing", "roofline: warning: another"]


def test_an_error_is_the_one_line_without_the_warnings_before_it(capsys):
    # 100,000 tokens are beyond Llama-3-8B's 8,192 (a warning), and 1,000 prompts a second is
    # past the queue's steady state (the error): the warning came after the error, two lines
    code, out, err = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                         "--prompt", "100000", "--rate", "1000")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("roofline: error: --rate: the queue has no steady state")
    code, _, err = run(capsys, "ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "100000", "--rate", "0.1")
    assert code == 0 and "roofline: warning: prompt: 100000 tokens is beyond" in err
