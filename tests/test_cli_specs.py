"""``roofline hardware list|show`` and ``roofline model list|show``, end to end through main()."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import roofline.cli as cli

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _specs_command(monkeypatch: pytest.MonkeyPatch) -> None:
    if "specs" not in cli._COMMANDS:
        monkeypatch.setattr(cli, "_COMMANDS", (*cli._COMMANDS, "specs"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_hardware_list(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "list")
    assert status == 0
    header, rule, *rows = out.splitlines()
    assert header.split()[:3] == ["NAME", "VENDOR", "KIND"]
    assert set(rule) == {"-", " "}
    h100 = next(r for r in rows if r.startswith("H100-SXM "))
    assert re.search(r"989\.4 TFLOP/s .* 3\.35 TB/s\s+80 GB\s+295\.3$", h100)
    assert any(r.startswith("TPU-v5e ") and r.endswith("240.5") for r in rows)


def test_hardware_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "list", "--json")
    data = json.loads(out)
    assert status == 0 and len(data) == 19
    assert [d["name"] for d in data] == sorted(d["name"] for d in data)


def test_hardware_show_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "H100-SXM")
    assert status == 0
    assert out.startswith("H100-SXM (NVIDIA, gpu)\nfile: ")
    assert str(REPO / "hardware" / "H100-SXM.toml") in out
    assert re.search(r"^memory\.bandwidth\s+3\.35 TB/s", out, re.M)
    assert re.search(r"^on_chip\.sram_per_sm\s+233\.5 kB \(228 KiB\)", out, re.M)
    # 80e9 bytes / 2**30 = 74.506 GiB: the largest binary prefix that fits, 3 digits
    assert re.search(r"^memory\.capacity\s+80 GB \(74\.5 GiB\)\s", out, re.M)
    # 50e6 bytes / 2**20 = 47.68 MiB
    assert re.search(r"^on_chip\.l2\s+50 MB \(47\.7 MiB\)$", out, re.M)
    assert "bf16 295.3" in out
    assert "sources:" in out and "datasheet" in out


def test_hardware_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "H100-SXM", "--json")
    data = json.loads(out)
    assert status == 0
    assert data["path"] == str(REPO / "hardware" / "H100-SXM.toml")
    assert data["memory_bandwidth"] == pytest.approx(3.35e12)  # bytes/s
    assert data["memory_capacity"] == pytest.approx(80e9)  # bytes
    assert data["peak_flops"]["bf16"] == pytest.approx(989.4e12)  # FLOP/s
    assert data["sram_per_sm"] == 233472
    assert set(data["sources"]) >= {"memory.bandwidth", "peak_flops.bf16", "on_chip.l2"}
    assert out == json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_hardware_show_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.toml"
    shutil.copy(FIXTURES / "hardware" / "good.toml", path)
    status, out, _ = _run(capsys, "hardware", "show", str(path), "--json")
    data = json.loads(out)
    assert status == 0 and data["path"] == str(path)
    assert (data["flops_efficiency"], data["bandwidth_efficiency"]) == (0.7, 0.8)
    status, out, _ = _run(capsys, "hardware", "show", str(path))
    assert "provenance:" in out and "fixture CPU" in out


def test_hardware_show_wraps_long_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    words = " ".join(f"word{i:03d}" for i in range(60))  # 60 words of 7: 60 × 8 − 1 = 479
    text = (FIXTURES / "hardware" / "good.toml").read_text().replace(
        'source = "fixture", min = "0.9 TB/s"', f'source = "fixture", note = "{words}", '
        'min = "0.9 TB/s"')
    path = tmp_path / "long.toml"
    path.write_text(text)
    status, out, _ = _run(capsys, "hardware", "show", str(path))
    assert status == 0
    table = out.split("\n\n")[0].splitlines()[2:]  # after the header and its rule
    assert max(len(line) for line in table) < 120
    start = next(i for i, line in enumerate(table) if line.startswith("memory.bandwidth "))
    column = table[start].index("word000")
    # a 64-character line holds 8 words of 7 (8·8 − 1 = 63): 60 words take 8 lines
    lines = table[start:start + 8]
    assert all(line[:column].strip() == "" for line in lines[1:])
    assert " ".join(line[column:] for line in lines) == words  # every word, in order
    assert all(len(line[column:]) == 63 for line in lines[:7]) and len(lines[7][column:]) == 31
    assert not table[start + 8].startswith(" ")  # the next quantity follows
    status, out, _ = _run(capsys, "hardware", "show", str(path), "--json")
    assert json.loads(out)["quantity_notes"]["memory.bandwidth"] == words  # in full


def test_show_help_names_the_right_units(capsys: pytest.CaptureFixture[str]) -> None:
    for command, wanted, unwanted in (("hardware", "SI base units", "integers"),
                                      ("model", "the shape's fields", "FLOP/s")):
        with pytest.raises(SystemExit):
            cli.main([command, "show", "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert wanted in out and unwanted not in out


def test_model_list(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "model", "list")
    assert status == 0
    row = next(r for r in out.splitlines() if r.startswith("Llama-3-8B "))
    assert row.split() == ["Llama-3-8B", "llama", "8,030,261,248", "4096", "32", "32", "8",
                           "128", "14336", "128256", "-", "-"]
    assert "2 of 8" in next(r for r in out.splitlines() if r.startswith("Mixtral-8x7B "))
    assert next(r for r in out.splitlines() if r.startswith("Gemma-2-9B ")).endswith(
        "4096 on 21")


def test_model_show_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "model", "show", "OPT-13B")
    assert status == 0
    assert re.search(r"^parameters\s+12,853,473,280$", out, re.M)
    assert re.search(r"^positions\s+learned table of 2050 rows\s+T_pos$", out, re.M)


def test_model_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "model", "show", "Mixtral-8x7B", "--json")
    data = json.loads(out)
    assert status == 0
    assert data["path"] == str(REPO / "models" / "Mixtral-8x7B.json")
    assert data["parameters"] == 46_702_792_704
    assert (data["num_experts"], data["experts_per_token"]) == (8, 2)


def test_model_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "model", "list", "--json")
    assert status == 0
    assert {d["name"]: d["parameters"] for d in json.loads(out)}["GPT-3-175B"] == 174_604_259_328


@pytest.mark.parametrize("argv, message", [
    (("hardware", "show", "H100"),
     "roofline: error: unknown hardware 'H100'; close matches: H100-SXM, H100-PCIe"),
    (("model", "show", "GPT-4"), "roofline: error: unknown model 'GPT-4'; close matches: "),
    (("hardware", "show", str(FIXTURES / "hardware" / "zero.toml")),
     f"roofline: error: {FIXTURES / 'hardware' / 'zero.toml'}: memory.bandwidth: "
     "must be positive (> 0) (got '0 TB/s')"),
    (("model", "show", str(FIXTURES / "models" / "unsupported_type.json")),
     f"roofline: error: {FIXTURES / 'models' / 'unsupported_type.json'}: model_type: "
     "unsupported; supported: llama, mistral, mixtral, qwen2, phi3, gemma, gemma2, opt, gpt2, gpt_neox, qwen2_moe, deepseek_v2, deepseek_v3, deepseek_v32, qwen3, qwen3_moe, gemma3, gemma3_text, gpt_oss, qwen3_next, llama4, llama4_text"
     "; describe the model in a shape file (.toml, models/README.md) with hidden_size, num_layers, num_heads, intermediate_size, vocab_size, max_position and a source (got 't5')"),
])
def test_errors_are_one_line_and_status_2(capsys: pytest.CaptureFixture[str], argv: tuple,
                                          message: str) -> None:
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(message)


def test_action_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["hardware"])
    assert info.value.code == 2
    assert "ACTION" in capsys.readouterr().err


# --- new error paths, end to end: one line, status 2, no traceback ------------------------------
def _model_variant(tmp_path: Path, **change: object) -> Path:
    config = json.loads((FIXTURES / "models" / "tiny-llama.json").read_text())
    config.update(change)
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(config))
    return path


def test_cli_one_line_errors_of_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2**20 + 1))
    cases = [
        (("hardware", "show", str(folder)),
         f"{folder}: is not a regular file (a directory); a hardware file must be a regular file"),
        (("model", "show", str(deep)), f"{deep}: is not valid JSON: nested too deeply"),
        (("hardware", "show", str(big)), f"{big}: is too large (1,048,577 bytes); a hardware "
         "file must be at most 1,048,576 bytes"),
    ]
    for argv, message in cases:
        status, out, err = _run(capsys, *argv)
        assert status == 2 and out == "" and err == f"roofline: error: {message}\n"


@pytest.mark.parametrize("change, message", [
    ({"model_type": "opt", "ffn_dim": 128, "do_layer_norm_before": "false"},
     "do_layer_norm_before: must be true or false (got 'false')"),
    ({"attention_bias": [True]}, "attention_bias: must be true or false (got [True])"),
    ({"model_type": ["llama"]}, "model_type: must be a string, one of: llama, mistral, mixtral, "
     "qwen2, phi3, gemma, gemma2, opt, gpt2, gpt_neox, qwen2_moe, deepseek_v2, deepseek_v3, "
     "deepseek_v32, qwen3, qwen3_moe, gemma3, gemma3_text, gpt_oss, qwen3_next, llama4, llama4_text (got ['llama'])"),
    ({"hidden_size": True}, "hidden_size: must be a positive integer (got True)"),
])
def test_cli_model_types(tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict,
                         message: str) -> None:
    path = _model_variant(tmp_path, **change)
    status, out, err = _run(capsys, "model", "show", str(path))
    assert status == 2 and out == "" and err == f"roofline: error: {path}: {message}\n"


def test_cli_unit_outside_the_grammar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text((FIXTURES / "hardware" / "good.toml").read_text().replace(
        '"600 GB/s"', '"2 (GB/s)**9**9**9"'))
    status, out, err = _run(capsys, "hardware", "show", str(path))
    assert status == 2 and out == "" and err == (
        f"roofline: error: {path}: interconnect.bandwidth: unknown unit '(GB/s)**9**9**9'; "
        "accepted: [k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi]B/s (or byte/s, bytes/s) (got "
        "'2 (GB/s)**9**9**9')\n")


def test_hardware_show_tpu_v5e_capacity_in_gib(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "TPU-v5e", "--json")
    assert status == 0 and json.loads(out)["memory_capacity"] == 17_179_869_184  # 16 GiB


# --- memory levels: shown with their sources; rules as one line and status 2; warnings --------
def test_hardware_show_memory_levels(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "MI300X")
    assert status == 0
    table = out.split("\n\n")[0]
    # 128 B/clock/CU x 304 CUs x 2.1 GHz = 81.7152 TB/s (an ESTIMATE, so marked)
    assert re.search(r"^on_chip\.sram_bandwidth\s+81\.72 TB/s\s+ESTIMATE: ", table, re.M)
    assert re.search(r"^on_chip\.l2\s+33\.55 MB \(32 MiB\)\s", table, re.M)
    assert re.search(r"^on_chip\.l2_bandwidth\s+34\.4 TB/s\s", table, re.M)
    assert re.search(r"^on_chip\.l3\s+268\.4 MB \(256 MiB\)\s+Infinity Cache", table, re.M)
    assert re.search(r"^on_chip\.l3_bandwidth\s+17\.2 TB/s\s", table, re.M)
    order = [line.split()[0] for line in table.splitlines() if line.startswith("on_chip.")]
    assert order == ["on_chip.sram_per_sm", "on_chip.sram_bandwidth", "on_chip.sm_count",
                     "on_chip.l2", "on_chip.l2_bandwidth", "on_chip.l3", "on_chip.l3_bandwidth"]
    sources = out.split("\nsources:\n")[1]
    assert "on_chip.l3_bandwidth" in sources and "amd-cdna-3-white-paper.pdf" in sources


def test_hardware_show_leaves_absent_levels_out(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "H100-SXM")
    assert status == 0 and "on_chip.l3" not in out  # no L3 on an H100: no row, not a zero
    status, out, _ = _run(capsys, "hardware", "show", "H100-SXM", "--json")
    data = json.loads(out)
    assert data["l3_bytes"] is None and data["l3_bandwidth"] is None
    assert data["l2_bandwidth"] == pytest.approx(6.2e12)
    assert data["sram_bandwidth"] == pytest.approx(33.45e12)
    assert "ESTIMATE" in data["sources"]["on_chip.l2_bandwidth"]


def test_hardware_show_memory_levels_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "hardware", "show", "MI325X", "--json")
    data = json.loads(out)
    assert status == 0
    assert (data["l2_bytes"], data["l3_bytes"]) == (33_554_432, 268_435_456)  # 32, 256 MiB
    assert data["l3_bandwidth"] == pytest.approx(17.2e12)  # bytes/s
    assert {"on_chip.l3", "on_chip.l3_bandwidth", "on_chip.l2_bandwidth",
            "on_chip.sram_bandwidth"} <= set(data["sources"])


def _levels_file(tmp_path: Path, new: str, capacity: str = "16 GiB") -> Path:
    text = (FIXTURES / "hardware" / "good.toml").read_text()
    old = 'l2 = { value = "40 MB", source = "fixture" }'
    assert text.count(old) == 1
    path = tmp_path / "levels.toml"
    path.write_text(text.replace(old, new).replace('"16 GiB"', f'"{capacity}"'))
    return path


@pytest.mark.parametrize("new, capacity, message", [
    ('l3 = { value = "256 MiB", source = "x" }', "16 GiB",
     "on_chip.l3: needs on_chip.l2: levels are numbered from the compute units outwards, so a "
     "device with one cache level gives it as l2 (got '256 MiB')"),
    ('l2 = { value = "9 GB", source = "x" }', "8 GiB",
     "on_chip.l2: is larger than memory.capacity (8.59 GB); a cache holds a part of the memory "
     "behind it, never more (got '9 GB')"),
    ('l2 = { value = "40 MB", source = "x" }\nl2_bandwidth = { value = "5", source = "x" }',
     "16 GiB", 'on_chip.l2_bandwidth: has no unit; must be a bandwidth in bytes/s '
     '(e.g. "3.35 TB/s") (got \'5\')'),
    ('l2 = { value = "40 MB", source = "x" }\nl2_bandwidth = { value = "-5 TB/s", source = "x" }',
     "16 GiB", "on_chip.l2_bandwidth: must be positive (> 0) (got '-5 TB/s')"),
    ('l2 = { value = "40 MB", source = "x" }\nl3_bandwidth = { value = "3 TB/s", source = "x" }',
     "16 GiB", "on_chip.l3_bandwidth: needs on_chip.l3, the level it is the bandwidth of "
     "(got '3 TB/s')"),
], ids=["l3-without-l2", "l2-above-memory", "bandwidth-without-unit", "negative-bandwidth",
        "bandwidth-without-level"])
def test_cli_memory_level_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], new: str,
                                 capacity: str, message: str) -> None:
    path = _levels_file(tmp_path, new, capacity)
    status, out, err = _run(capsys, "hardware", "show", str(path))
    assert status == 2 and out == "" and err == f"roofline: error: {path}: {message}\n"


def test_cli_warns_of_a_level_slower_than_memory(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _levels_file(tmp_path, 'l2 = { value = "40 MB", source = "x" }\n'
                        'l2_bandwidth = { value = "500 GB/s", source = "x" }')
    status, out, err = _run(capsys, "hardware", "show", str(path))
    assert status == 0 and re.search(r"^on_chip\.l2_bandwidth\s+500 GB/s", out, re.M)
    assert err == (f"roofline: warning: {path}: on_chip.l2_bandwidth (500 GB/s) is below "
                   "memory.bandwidth (1 TB/s): a level nearer the compute units is expected to be "
                   "at least as fast as the levels behind it; check the figure and its unit\n")


def test_cli_shipped_devices_warn_of_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "hardware", "list")
    assert status == 0 and err == ""


def test_a_name_too_long_for_a_path_is_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    # the fuzz test's finding: 400 digits are no folder (the file system refuses the name), so
    # they are an unknown model's name, one line, status 2
    assert cli.main(["model", "show", "2" * 400]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: unknown model '222") and err.count("\n") == 1
