"""End to end: derive, prefill and crossover as a newcomer runs them."""

import json

import pytest
from sympy import parse_expr

from roofline.cli import main
from roofline.symbols import local_dict


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_derive_lists_and_prints_json(capsys):
    code, out, _ = run(capsys, "derive")
    assert code == 0 and "crossover.decode_critical_batch" in out
    code, out, _ = run(capsys, "derive", "projection.flops", "--format", "json")
    (entry,) = json.loads(out)
    assert entry["expr"] == "2*T*d_in*d_out" and entry["latex"] == r"2 T d_{\mathrm{in}} d_{\mathrm{out}}"
    assert {s["name"] for s in entry["symbols"]} == {"T", "d_in", "d_out"}
    assert parse_expr(entry["expr"], local_dict=local_dict()) == 2 * local_dict()["T"] \
        * local_dict()["d_in"] * local_dict()["d_out"]


def test_derive_unknown_name_is_one_line_and_status_2(capsys):
    code, out, err = run(capsys, "derive", "attention.flop")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "unknown derivation 'attention.flop'; close matches: attention.flops" in err


def test_prefill_names_what_binds_each_operation(capsys):
    # kernel attention at T = 2048 on H100-SXM (Llama-3-8B, bf16), by hand: 32 layers of
    # 2·n_q·H·T(T+1) = 34.4 GFLOP, 1.10 TFLOP at 989.4 TFLOP/s: 1.11 ms; its K/V re-reads at the
    # L2, 32 × 318,898,176 bytes (136 block reads of 128 rows per head) at 6.2 TB/s: 1.65 ms,
    # longer: the L2 binds, not the HBM (1.35 GB at 3.35 TB/s: 0.40 ms)
    code, out, _ = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "2048")
    table = out.split("Per operation at T = 2048 (all layers):\n")[1].splitlines()
    assert code == 0 and table[0].split()[-2:] == ["bound", "by"]
    binds = {row.split()[0]: row.split()[-1] for row in table[1:]}
    assert binds["attention.kernel"] == "L2" and 32 * 318_898_176 / 6.2e12 > 1.10e12 / 989.4e12
    assert binds["qkv_proj"] == "compute" and binds["attn_norm"] == "HBM"
    assert "1.65 ms" in next(row for row in table if row.startswith("attention.kernel"))


def test_prefill_json_has_the_documented_shape(capsys):
    code, out, _ = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--prompt", "128,2048", "--json")
    d = json.loads(out)
    assert code == 0 and d["hardware"] == "H100-SXM" and d["attention"] == "kernel"
    assert [r["prompt_tokens"] for r in d["results"]] == [128, 2048]
    first = d["results"][0]
    assert set(first) >= {"time_s", "flops", "bytes", "intensity", "bound", "operations"}
    assert sum(o["time_s"] for o in first["operations"]) == pytest.approx(first["time_s"])
    assert d["decode"]["kv_cache_bytes"] == 2048 * 128 * 1024


def test_prefill_beyond_context_warns(capsys):
    code, _, err = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-2-7B",
                       "--prompt", "8192")
    assert code == 0 and "beyond Llama-2-7B's context of 4096 tokens" in err


@pytest.mark.parametrize("argv,message", [
    (["--prompt", "0"], "--prompt: each value must be a positive integer (got '0')"),
    (["--prompt", ","], "--prompt: needs at least one value"),
    (["--prompt", "12x"], "--prompt: each value must be a positive integer (got '12x')"),
    (["--batch", "-3"], "--batch: must be a positive integer (got '-3')"),
    (["--dtype", "fp64"], "--dtype: H100-SXM has no fp64"),
    (["--attention", "flash"], "--attention: must be one of naive, tiled, tiled_fa2, kernel, ideal"),
    (["--weight-dtype", "int3"], "--weight-dtype: must be one of fp64, fp32, tf32, bf16"),
    (["--prompt", "128,,256"], "--prompt: has an empty value between commas (got '128,,256')"),
])
def test_prefill_bad_options(capsys, argv, message):
    code, out, err = run(capsys, "prefill", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                         *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_crossover_json(capsys):
    code, out, _ = run(capsys, "crossover", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--json")
    d = json.loads(out)
    assert code == 0 and d["ridge_intensity"] == pytest.approx(989.4 / 3.35)
    proj = d["crossovers"]["projection_compute_bound_tokens"]
    assert proj["exists"] and proj["unit"] == "tokens" and 295 < proj["value"] < 400
    assert parse_expr(proj["expr"], local_dict=local_dict()).free_symbols
    naive = d["crossovers"]["attention_compute_bound_tokens.naive"]
    assert naive["exists"] is False and naive["value"] is None and "never" in naive["reason"]


def test_warnings_name_what_does_not_fit(capsys):
    code, out, err = run(capsys, "prefill", "--hardware", "TPU-v4", "--model", "Mixtral-8x7B",
                         "--prompt", "128")
    assert code == 0 and out
    lines = err.strip().splitlines()
    assert lines[0] == ("roofline: warning: Mixtral-8x7B's weights (93.41 GB in bf16) do not fit "
                        "in TPU-v4's memory (34.36 GB): the model assumes they do")


def test_crossover_attention_option_selects_one_mode(capsys):
    code, out, _ = run(capsys, "crossover", "--hardware", "H100-SXM", "--model", "Llama-3-8B",
                       "--attention", "naive", "--json")
    names = set(json.loads(out)["crossovers"])
    assert "prefill_compute_bound_tokens.naive" in names
    assert "decode_critical_batch" in names
    assert not any(n.endswith((".tiled", ".ideal", ".tiled_fa2")) for n in names)


def test_no_command_prints_the_overview(capsys):
    code, out, _ = run(capsys)
    assert code == 0 and "report" in out and "crossover" in out

