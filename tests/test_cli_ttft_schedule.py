"""``roofline ttft --batch-prompts/--chunk`` end to end, and the command-line side of issue 14:
chunks in the chosen attention mode, mixture-of-experts models, bounded and ASCII-only counts,
the setting options of ``roofline prefill``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from roofline import api, cli


@pytest.fixture
def stand_in(monkeypatch):
    """Prefill time = 1e-4 s per token: a 1000-token prompt takes 0.1 s."""
    monkeypatch.setattr(api, "_prefill_times",
                        lambda setting, lengths: np.asarray(lengths, dtype=float) * 1e-4)


BASE = ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B"]


def _json(capsys, argv):
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _first_line(capsys, argv) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out.splitlines()[0]


def _warnings(capsys, argv) -> tuple[str, list[str]]:
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    return out, [line for line in err.splitlines() if line.startswith("roofline: warning: ")]


def _error(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


# --- --batch-prompts and --chunk -----------------------------------------------------------------
LLAMA = ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "2048"]


def test_batching_and_chunking_text(capsys):
    assert cli.main([*LLAMA, "--rate", "10"]) == 0
    plain = capsys.readouterr().out
    assert cli.main([*LLAMA, "--rate", "10", "--batch-prompts", "4", "--chunk", "512"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(plain)  # the existing output is unchanged
    added = text[len(plain):].splitlines()
    assert added[0] == ("batching 4 prompts of 2048 tokens into one prefill (arrivals at "
                        "10 requests/s)")
    # the first prompt waits (4 − 1)/10 s for the batch to fill
    assert added[2].startswith("  TTFT first prompt  ") and "(waits 300 ms for 3 more " \
        "arrivals)" in added[2]
    # the projection crossover of Llama-3-8B on H100 lies at ~326 rows: 326/2048 ≈ 0.159
    assert added[4] == ("  stops helping at   0.159 prompts = projection crossover 326 rows / "
                        "2048 tokens")
    assert "one prompt is compute-bound already" in added[6]
    assert added[7] == ("chunked prefill of 2048 tokens in chunks of 512 (4 chunks; kernel "
                        "attention; the layers only, batch 1)")
    assert added[8].startswith("  chunk 0            ") and added[8].endswith(" ms (tokens 0–511)")
    assert added[11].endswith(" ms (tokens 1536–2047)")
    assert added[12].startswith("  total              ") and "× the one-shot" in added[12]
    assert added[13].startswith("  extra HBM bytes    ")
    assert added[14] == ("  smallest chunk     326.1 tokens keeps the projections compute-bound "
                         "(the projection crossover)")


def test_batching_and_chunking_json(capsys):
    from dataclasses import replace

    from roofline.api import setting
    from roofline.evaluate import crossover_values, prefill_time

    out = _json(capsys, [*LLAMA, "--rate", "10", "--batch-prompts", "4", "--chunk", "500",
                         "--json"])
    s = setting("H100-SXM", "Llama-3-8B")
    b, c = out["batching"], out["chunking"]
    assert b["ttft_last_s"] == pytest.approx(float(prefill_time(replace(s, batch=4), [2048])[0]))
    assert b["ttft_first_s"] - b["ttft_last_s"] == pytest.approx(0.3)  # (4 − 1)/10
    assert b["prompts"] == 4 and b["rate_per_s"] == 10
    cross = crossover_values(s)["projection_compute_bound_tokens"].value
    assert b["stops_helping_batch"] * 2048 == pytest.approx(cross)
    assert c["min_compute_bound_chunk"] == pytest.approx(cross)
    assert c["sizes"] == [500, 500, 500, 500, 48] and c["chunks"] == 5
    assert sum(c["times_s"]) == pytest.approx(c["total_s"])
    assert c["total_s"] > c["one_shot_s"]
    plain = _json(capsys, [*LLAMA, "--rate", "10", "--json"])
    assert "batching" not in plain and "chunking" not in plain
    assert {k: v for k, v in out.items() if k not in ("batching", "chunking")} == plain


def test_batches_fill_at_the_rate_of_one_replica(capsys):
    out = _json(capsys, [*LLAMA, "--rate", "10", "--replicas", "2", "--batch-prompts", "4",
                         "--json"])
    assert out["batching"]["rate_per_s"] == 5
    assert out["batching"]["wait_s"] == pytest.approx(0.6)  # (4 − 1)/(10/2)
    assert "chunking" not in out


def test_short_prompts_batch_until_the_crossover(capsys):
    assert cli.main(["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--prompt", "16",
                     "--rate", "10", "--batch-prompts", "2", "--chunk", "7"]) == 0
    text = capsys.readouterr().out
    assert "stops helping at   20.4 prompts = projection crossover 326 rows / 16 tokens" in text
    assert "compute-bound already" not in text
    assert "(3 chunks; the last 2 tokens; kernel attention; the layers only, batch 1)" in text
    assert "(tokens 14–15)" in text and "waits 100 ms for 1 more arrival)" in text


@pytest.mark.parametrize("given, name", [(["--batch-prompts", "2"], "--batch-prompts"),
                                         (["--chunk", "8"], "--chunk"),
                                         (["--batch-prompts", "2", "--chunk", "8"],
                                          "--batch-prompts")])
def test_batching_and_chunking_need_one_prompt_length(stand_in, capsys, tmp_path, given, name):
    path = tmp_path / "d.txt"
    path.write_text("500\n")
    err = _error(capsys, [*BASE, "--prompt-dist", str(path), "--rate", "1", *given])
    assert err == (f"roofline: error: {name}: needs one prompt length (prompt), not a "
                   f"distribution (prompt_dist) (got '{path}')\n")


def test_batching_and_chunking_not_with_parallelism(stand_in, capsys):
    err = _error(capsys, [*BASE, "--prompt", "1000", "--rate", "1", "--parallel", "inter",
                          "--chunk", "100"])
    assert err == ("roofline: error: --chunk: models one prefill instance on one device, not "
                   "parallel (got 'inter')\n")


@pytest.mark.parametrize("option, value, message", [
    ("--batch-prompts", "0", "--batch-prompts: the number of prompts in a batch must be an "
                             "integer from 1 to 1,000,000 (got 0)"),
    ("--chunk", "0", "--chunk: a chunk must be an integer from 1 to the prompt length 1000 "
                     "tokens (got 0)"),
    ("--chunk", "1001", "--chunk: a chunk must be an integer from 1 to the prompt length 1000 "
                        "tokens (got 1001)"),
])
def test_bad_batch_or_chunk(stand_in, capsys, option, value, message):
    err = _error(capsys, [*BASE, "--prompt", "1000", "--rate", "1", option, value])
    assert err == f"roofline: error: {message}\n"


def test_setting_warnings_appear_once_with_batching(capsys):
    # OPT-13B's bf16 weights (25.71 GB) exceed TPU-v5e's 16 GiB
    _, warned = _warnings(capsys, ["ttft", "--hardware", "TPU-v5e", "--model", "OPT-13B",
                                   "--prompt", "128", "--rate", "0.01", "--batch-prompts", "2",
                                   "--chunk", "64", "--attention", "ideal"])
    assert len(warned) == 1 and "do not fit" in warned[0]


# --- issue 14 ------------------------------------------------------------------------------------
def test_chunks_in_the_chosen_attention_mode(capsys):
    # issue 14: --attention naive chunked to the same total as tiled, "1 × the one-shot", the
    # one-shot being ideal attention while the execution line was tiled
    def chunk_lines(mode):
        out = _json(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                             "--prompt", "8192", "--rate", "1", "--chunk", "512",
                             "--attention", mode, "--json"])
        return out["execution_s"], out["chunking"]

    from roofline.api import prefill

    for mode in ("tiled", "naive"):
        execution, c = chunk_lines(mode)
        assert c["attention"] == mode
        # the one-shot is the prefill's layers in that mode: the execution less the embedding,
        # final norm and LM head (a second method: the core's per-operation table)
        (point,) = prefill("H100-SXM", "Llama-3-8B", [8192], attention=mode).points
        edges = sum(o.time_s for o in point.operations if o.count == 1)
        assert c["one_shot_s"] == pytest.approx(execution - edges, rel=1e-9)
    assert chunk_lines("naive")[1]["total_s"] != pytest.approx(chunk_lines("tiled")[1]["total_s"])


def test_ideal_chunks_extra_bytes(capsys):
    assert cli.main([*LLAMA, "--rate", "10", "--chunk", "512", "--attention", "ideal"]) == 0
    text = capsys.readouterr().out
    # 32 layers · (3 more reads of 2·218,112,000 weight bytes + 4096 bytes · 3072 cached tokens)
    assert "  extra HBM bytes    42.3 GB" in text and "× the one-shot" in text


def test_mixture_of_experts_batches_and_chunks(capsys):
    # issue 14: NotImplementedError (multiple generators [Min(n_e, T_chunk*n_a), T_chunk])
    out = _json(capsys, ["ttft", "--hardware", "H100-SXM", "--model", "Mixtral-8x7B", "--prompt",
                         "2048", "--rate", "1", "--chunk", "512", "--batch-prompts", "4",
                         "--json"])
    assert 1100 < out["chunking"]["min_compute_bound_chunk"] < 1300
    assert out["batching"]["crossover_rows"] == out["chunking"]["min_compute_bound_chunk"]


@pytest.mark.parametrize("value", ["18446744073709551615", "1000000001"])
def test_prompt_beyond_the_bound(capsys, value):
    # issue 14: 2⁶⁴ − 1 tokens wrapped to −1 token
    err = _error(capsys, [*BASE, "--prompt", value, "--rate", "1"])
    assert err == ("roofline: error: --prompt: a prompt length must be a positive integer of at "
                   f"most 1,000,000,000 tokens (got {value})\n")


@pytest.mark.parametrize("value", ["٥١٢", "1_0", "+5", "²"])
def test_prompt_in_ascii_digits(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*BASE, "--prompt", value, "--rate", "1"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("roofline: error: ttft: argument --prompt: must be a "
                                       f"positive integer in ASCII digits: {value!r}\n")


def test_setting_options_as_prefill(capsys):
    from roofline.api import ttft

    base = _json(capsys, [*LLAMA, "--rate", "1", "--json"])
    out = _json(capsys, [*LLAMA, "--rate", "1", "--weight-dtype", "int4", "--kv-dtype", "fp8",
                         "--json"])
    assert out["weight_dtype"] == "int4" and out["kv_dtype"] == "fp8"
    expected = ttft("H100-SXM", "Llama-3-8B", prompt=2048, rate=1, weight_dtype="int4",
                    kv_dtype="fp8")
    assert out["execution_s"] == pytest.approx(expected.queue.execution, rel=1e-12)
    assert out["execution_s"] < base["execution_s"]  # a quarter of the weight bytes
    first = _first_line(capsys, [*LLAMA, "--rate", "1", "--weight-dtype", "int4"])
    assert "(H100-SXM, Llama-3-8B, bf16, weights int4, kernel attention;" in first  # as prefill


def test_batch_is_one_prompt_per_prefill(capsys):
    err = _error(capsys, [*LLAMA, "--rate", "1", "--batch", "2"])
    assert err == ("roofline: error: --batch: a TTFT prefill serves one prompt: batch prompts "
                   "with --batch-prompts B (got '2')\n")
