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
    assert code == 2 and "--speedup: cannot be derived" in err and "give --speedup K" in err
