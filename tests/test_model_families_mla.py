"""The families of issue 12's second part read directly: qwen2_moe, deepseek_v2, deepseek_v3.
Parameter counts (total and active) against the published figures and sums written out by
hand from the config numbers; bad configs refused in one line with status 2; `model show`;
every crossover of the new presets at its defining equality; the figures' two decode forms."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import cli
from roofline.errors import InputError, SpecError
from roofline.evaluate import Setting, crossover_value, crossover_values, decode, prefill
from roofline.specs.hardware import list_hardware, load_hardware
from roofline.specs.model import load_model, read_model

FIXTURES = Path(__file__).parent / "fixtures" / "models"
MODELS = Path(__file__).parents[1] / "models"

# --- parameter counts, by hand ------------------------------------------------------------
# DeepSeek-V2-Lite (HF config.json): D 2048, 27 layers, 16 heads, no query latent, kv_lora_rank
# 512, qk_nope = v_head 128, rope 64; layer 0 dense (intermediate 10944), layers 1–26 MoE: 64
# routed experts and 2 shared of 1408; vocabulary 102400, untied.
V2_LITE_ATTENTION = (2048 * 16 * (128 + 64)  # W^Q
                     + 2048 * (512 + 64) + 512  # W^DKV with W^KR, the latent's norm
                     + 512 * 16 * (128 + 128)  # W^UK, W^UV
                     + 16 * 128 * 2048)  # W^O
V2_LITE_LAYERS = (27 * (V2_LITE_ATTENTION + 2 * 2048)  # attention and two norms a layer
                  + 1 * 3 * 2048 * 10944  # the dense layer's MLP
                  + 26 * (64 * 3 * 2048 * 1408 + 64 * 2048 + 2 * 3 * 2048 * 1408))
V2_LITE = V2_LITE_LAYERS + 2048 + 2 * 102400 * 2048  # final norm, embeddings and LM head
V2_LITE_ACTIVE = V2_LITE - 26 * (64 - 6) * 3 * 2048 * 1408

# DeepSeek-V3 (HF config.json): D 7168, 61 layers, 128 heads, q_lora_rank 1536, kv_lora_rank 512;
# layers 0–2 dense (18432), layers 3–60 MoE: 256 routed experts and 1 shared of 2048, 8 routed
# per token; vocabulary 129280, untied; the multi-token-prediction layer not counted.
V3_ATTENTION = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)  # W^DQ, its norm, W^UQ with W^QR
                + 7168 * (512 + 64) + 512 + 512 * 128 * 256 + 128 * 128 * 7168)
V3 = (61 * (V3_ATTENTION + 2 * 7168) + 3 * 3 * 7168 * 18432
      + 58 * (256 * 3 * 7168 * 2048 + 256 * 7168 + 3 * 7168 * 2048)
      + 7168 + 2 * 129280 * 7168)
V3_ACTIVE = V3 - 58 * (256 - 8) * 3 * 7168 * 2048

# Qwen1.5-MoE-A2.7B (HF config.json): D 2048, 24 layers, 16 heads of 128 with Q, K, V biases;
# every layer MoE: 60 routed experts of 1408 (4 per token), one shared expert of 5632 and its
# gate (D → 1); vocabulary 151936, untied.
QWEN = (24 * (2048 * 3 * 2048 + 3 * 2048 + 2048 * 2048 + 2 * 2048
              + 60 * 3 * 2048 * 1408 + 60 * 2048 + 3 * 2048 * 5632 + 2048)
        + 2048 + 2 * 151936 * 2048)
QWEN_ACTIVE = QWEN - 24 * (60 - 4) * 3 * 2048 * 1408

# (exact total, exact active, published total in billions and its digits, published active)
PUBLISHED = {
    # DeepSeek-V2 paper (arXiv 2405.04434) Appendix B and the model card: 15.7B in total. The
    # card's "2.4B activated" is not this count (2.66B, the embedding table and LM head
    # included, as Qwen's and DeepSeek-V3's figures are counted): not held here.
    "DeepSeek-V2-Lite": (V2_LITE, V2_LITE_ACTIVE, 15.7, 1, None),
    # DeepSeek-V3 report (arXiv 2412.19437): 671B in total without the MTP module, 37B
    # activated (37.6B to a tenth)
    "DeepSeek-V3": (V3, V3_ACTIVE, 671, 0, 37.6),
    # Qwen1.5-MoE-A2.7B model card: 14.3B in total, 2.7B activated
    "Qwen1.5-MoE-A2.7B": (QWEN, QWEN_ACTIVE, 14.3, 1, 2.7),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameters_by_hand_and_published(name: str) -> None:
    total, active, published, digits, published_active = PUBLISHED[name]
    m = load_model(name)
    assert (m.parameters, m.active_parameters) == (total, active)
    assert round(total / 1e9, digits) == published
    if published_active is not None:
        assert round(active / 1e9, 1) == published_active


def test_the_sums_the_issue_states() -> None:
    assert V3 == 671_026_404_352 and V2_LITE == 15_706_484_224
    assert QWEN == 14_315_784_192 and QWEN_ACTIVE == 2_689_173_504
    assert V3_ACTIVE == 37_552_282_624


def test_deepseek_v2_236b() -> None:
    """DeepSeek-V2 (HF config in the fixtures): 236B in total, 21B activated (the paper)."""
    m = read_model(FIXTURES / "deepseek-v2.json")
    attention = (5120 * 1536 + 1536 + 1536 * 128 * 192 + 5120 * 576 + 512 + 512 * 128 * 256
                 + 128 * 128 * 5120)
    total = (60 * (attention + 2 * 5120) + 3 * 5120 * 12288
             + 59 * (160 * 3 * 5120 * 1536 + 160 * 5120 + 2 * 3 * 5120 * 1536)
             + 5120 + 2 * 102400 * 5120)
    assert m.parameters == total == 235_741_434_880
    assert m.active_parameters == total - 59 * (160 - 6) * 3 * 5120 * 1536
    assert round(total / 1e9) == 236 and int(m.active_parameters / 1e9) == 21


def test_mixtral_active_parameters() -> None:
    """Mixtral (arXiv 2401.04088): 47B in total, 13B active (HF card: 12.9B)."""
    m = load_model("Mixtral-8x7B")
    assert m.active_parameters == m.parameters - 32 * (8 - 2) * 3 * 4096 * 14336
    assert round(m.active_parameters / 1e9, 1) == 12.9
    assert load_model("Llama-3-8B").active_parameters == load_model("Llama-3-8B").parameters


def test_structure_of_the_presets() -> None:
    v3, lite, qwen = (load_model(n) for n in ("DeepSeek-V3", "DeepSeek-V2-Lite",
                                              "Qwen1.5-MoE-A2.7B"))
    assert (v3.attention_kind, v3.kv_lora_rank, v3.q_lora_rank, v3.rope_head_dim) \
        == ("MLA", 512, 1536, 64)
    assert (v3.moe_layers, v3.dense_intermediate_size, v3.mtp_layers) == (58, 18432, 1)
    assert (lite.q_lora_rank, lite.moe_layers, lite.shared_experts) == (0, 26, 2)
    assert lite.architecture.mla and not lite.architecture.q_lora
    assert (qwen.attention_kind, qwen.shared_expert_size, qwen.shared_expert_gate,
            qwen.moe_layers, qwen.qkv_bias) == ("MHA", 5632, True, 0, True)
    assert v3.values()["L_moe"] == 58 and "L_moe" not in qwen.values()


def test_rope_scaling_changes_nothing() -> None:
    config = json.loads((MODELS / "DeepSeek-V2-Lite.json").read_text(encoding="utf-8"))
    assert config["rope_scaling"]["type"] == "yarn"


# --- readers: which layers have experts ----------------------------------------------------
def _write(tmp_path: Path, name: str, **change) -> Path:
    config = json.loads((MODELS / f"{name}.json").read_text(encoding="utf-8"))
    config.update(change)
    config = {k: v for k, v in config.items() if v != "absent"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("name, change, moe, dense", [
    ("DeepSeek-V3", {"first_k_dense_replace": 0}, 0, 0),  # every layer MoE: no dense layers
    ("DeepSeek-V3", {"moe_layer_freq": 2}, 29, 18432),  # layers 4, 6, ..., 60
    ("DeepSeek-V3", {"first_k_dense_replace": 61}, None, None),  # no MoE layer: dense model
    ("DeepSeek-V3", {"n_routed_experts": None}, None, None),
    ("Qwen1.5-MoE-A2.7B", {"decoder_sparse_step": 2}, 12, 5632),  # layers 1, 3, ..., 23
    ("Qwen1.5-MoE-A2.7B", {"mlp_only_layers": [0, 5]}, 22, 5632),
])
def test_moe_layers_as_the_family_decides(tmp_path, name, change, moe, dense) -> None:
    m = read_model(_write(tmp_path, name, **change))
    if moe is None:
        assert m.num_experts == 1 and m.moe_layer_count == 0
        assert m.intermediate_size == json.loads(
            (MODELS / f"{name}.json").read_text())["intermediate_size"]
        return
    assert (m.moe_layers, m.dense_intermediate_size) == (moe, dense)
    assert m.moe_layer_count == (moe or m.num_layers)


def test_v3_without_shared_experts(tmp_path) -> None:
    m = read_model(_write(tmp_path, "DeepSeek-V3", n_shared_experts=0))
    assert m.shared_experts == 0 and m.parameters == V3 - 58 * 3 * 7168 * 2048


@pytest.mark.parametrize("name, change, message", [
    ("DeepSeek-V3", {"kv_lora_rank": "512"},
     "kv_lora_rank: must be a positive integer (got '512')"),
    ("DeepSeek-V3", {"kv_lora_rank": 512.0},
     "kv_lora_rank: must be a positive integer (got 512.0)"),
    ("DeepSeek-V3", {"kv_lora_rank": True},
     "kv_lora_rank: must be a positive integer (got True)"),
    ("DeepSeek-V3", {"kv_lora_rank": "absent"}, "kv_lora_rank: missing required key"),
    ("DeepSeek-V3", {"q_lora_rank": [1536]}, "q_lora_rank: must be a positive integer"),
    ("DeepSeek-V3", {"qk_rope_head_dim": 0},
     "qk_rope_head_dim: must be a positive integer (got 0)"),
    ("DeepSeek-V3", {"v_head_dim": 64},
     "v_head_dim: not supported: must equal qk_nope_head_dim 128 (one head dimension H) (got 64)"),
    ("DeepSeek-V3", {"attention_bias": True}, "attention_bias: not supported: biases"),
    ("DeepSeek-V3", {"attention_bias": "false"}, "attention_bias: must be true or false"),
    ("DeepSeek-V3", {"n_routed_experts": "256"}, "n_routed_experts: must be a positive integer"),
    ("DeepSeek-V3", {"num_experts_per_tok": 300},
     "num_experts_per_tok: must be at most the 256 experts (got 300)"),
    ("DeepSeek-V3", {"moe_layer_freq": 0}, "moe_layer_freq: must be a positive integer (got 0)"),
    ("DeepSeek-V3", {"first_k_dense_replace": -1},
     "first_k_dense_replace: must be 0 or a positive integer (got -1)"),
    ("DeepSeek-V3", {"num_nextn_predict_layers": "1"},
     "num_nextn_predict_layers: must be 0 or a positive integer (got '1')"),
    ("DeepSeek-V2-Lite", {"moe_intermediate_size": 10**8},
     "moe_intermediate_size: must be at most 10,000,000"),
    ("Qwen1.5-MoE-A2.7B", {"mlp_only_layers": [30]},
     "mlp_only_layers: must be a list of layer indices from 0 to 23 (got [30])"),
    ("Qwen1.5-MoE-A2.7B", {"shared_expert_intermediate_size": "5632"},
     "shared_expert_intermediate_size: must be a positive integer (got '5632')"),
    ("Qwen1.5-MoE-A2.7B", {"decoder_sparse_step": False},
     "decoder_sparse_step: must be a positive integer (got False)"),
])
def test_bad_config_is_one_line_and_status_2(tmp_path, capsys, name, change, message) -> None:
    path = _write(tmp_path, name, **change)
    with pytest.raises(SpecError) as info:
        read_model(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)
    assert cli.main(["model", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err


def test_latent_attention_with_a_window_is_refused(tmp_path, capsys) -> None:
    """No published model has both: a shape file that asks for both is one line, status 2."""
    path = tmp_path / "mla-window.toml"
    path.write_text("\n".join([
        'source = "made up for the tests"', "hidden_size = 64", "num_layers = 4",
        "num_heads = 4", "intermediate_size = 128", "vocab_size = 100",
        "max_position = 1024", "kv_lora_rank = 32", "rope_head_dim = 8",
        "sliding_window = 16", ""]), encoding="utf-8")
    with pytest.raises(SpecError, match=r"sliding_window: not supported with multi-head latent "
                                        r"attention \(no published model has both\) \(got 16\)"):
        read_model(path)
    assert cli.main(["model", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1


def test_shape_file_of_latent_attention_and_shared_experts(tmp_path) -> None:
    """A shape file in the project's schema describes a DeepSeek-like model: the same count as
    its sum by hand."""
    path = tmp_path / "toy.toml"
    path.write_text("\n".join([
        'family = "toy-mla"', 'source = "made up for the tests"', "hidden_size = 64",
        "num_layers = 4", "num_heads = 4", "head_dim = 16", "intermediate_size = 32",
        "vocab_size = 100", "max_position = 1024", "kv_lora_rank = 32", "rope_head_dim = 8",
        "num_experts = 8", "experts_per_token = 2", "shared_experts = 1",
        "shared_expert_size = 32", "moe_layers = 3", "dense_intermediate_size = 128", ""]),
        encoding="utf-8")
    m = read_model(path)
    attention = 64 * 4 * 24 + 64 * 40 + 32 + 32 * 4 * 32 + 4 * 16 * 64
    total = (4 * (attention + 2 * 64) + 1 * 3 * 64 * 128
             + 3 * (8 * 3 * 64 * 32 + 8 * 64 + 3 * 64 * 32) + 64 + 2 * 100 * 64)
    assert (m.attention_kind, m.parameters) == ("MLA", total)
    assert m.active_parameters == total - 3 * 6 * 3 * 64 * 32


@pytest.mark.parametrize("edit, message", [
    ({"shared_experts": 1, "num_experts": 4, "experts_per_token": 2},
     "shared_expert_size: must be positive with shared experts"),
    ({"moe_layers": 2, "num_experts": 4, "experts_per_token": 2},
     "dense_intermediate_size: must be positive where some layers are dense"),
    ({"moe_layers": 4, "num_experts": 4, "experts_per_token": 2, "dense_intermediate_size": 8},
     "moe_layers: must be below the 4 layers"),
    ({"q_lora_rank": 16}, "q_lora_rank: needs kv_lora_rank (latent attention)"),
    ({"kv_lora_rank": 16}, "rope_head_dim: must be a positive integer with latent attention"),
    ({"moe_layers": -1}, "moe_layers: must be at least 0"),
])
def test_bad_shape_file_of_the_new_keys(tmp_path, edit, message) -> None:
    lines = ['source = "made up"', "hidden_size = 64", "num_layers = 4", "num_heads = 4",
             "intermediate_size = 128", "vocab_size = 100", "max_position = 1024"]
    lines += [f"{k} = {v}" for k, v in edit.items()]
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        read_model(path)
    assert message in str(info.value)


# --- model show -----------------------------------------------------------------------------
def test_model_show_prints_kind_ranks_experts(capsys) -> None:
    assert cli.main(["model", "show", "DeepSeek-V3"]) == 0
    out = capsys.readouterr().out
    assert "671,026,404,352 in total, 37,552,282,624 active per token" in out
    assert "MLA, multi-head latent attention" in out
    assert "keys and values 512, rotary key 64; queries through a latent of" in out
    assert "576 elements per token per layer" in out
    assert "256 routed, 1 shared; 9 active per token (8 routed + 1 shared)" in out
    assert "58 of 61 layers (first_k_dense_replace 3" in out
    assert "1 multi-token-prediction layer" in out
    assert cli.main(["model", "show", "Qwen1.5-MoE-A2.7B", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["parameters"], data["active_parameters"], data["attention_kind"]) \
        == (QWEN, QWEN_ACTIVE, "MHA")
    assert (data["shared_experts"], data["shared_expert_gate"]) == (1, True)
    assert cli.main(["model", "list"]) == 0
    assert "6 of 64 + 2 shared" in capsys.readouterr().out


# --- numbers ----------------------------------------------------------------------------------
def test_absorption_crossover_on_h100() -> None:
    """DeepSeek-V2-Lite on H100-SXM, batch 1: both forms memory-bound, so the crossover is
    (2·d_c − 2H − H_r)/(2H + H_r) = 2.2 tokens of context; the absorbed step is faster beyond."""
    hw, m = load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite")
    c = crossover_value(Setting(hw, m), "mla_absorption_pays_off_context")
    assert c.exists and math.isclose(c.value, 2.2, rel_tol=1e-12)
    fast = [decode(Setting(hw, m, mla_decode=f), 8192).time_s for f in ("absorbed", "naive")]
    assert fast[0] < fast[1]
    assert "mla_absorption_pays_off_context" not in crossover_values(
        Setting(hw, load_model("Llama-3-8B")))


def test_mla_decode_option() -> None:
    hw, m = load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite")
    with pytest.raises(InputError, match="mla_decode: must be one of absorbed, naive"):
        Setting(hw, m, mla_decode="fused")
    a, n = (decode(Setting(hw, m, mla_decode=f), 4096) for f in ("absorbed", "naive"))
    assert a.kv_cache_bytes == n.kv_cache_bytes == 27 * 576 * 4096 * 2
    llama = load_model("Llama-3-8B")  # no latent attention: the option would do nothing
    with pytest.raises(InputError, match="mla_decode: applies to a latent-attention model"):
        Setting(hw, llama, mla_decode="naive")


def test_prefill_of_the_new_presets() -> None:
    """A prefill of DeepSeek-V3's 3 dense and 58 MoE layers: the dense MLP counts 3 layers."""
    s = Setting(load_hardware("H100-SXM"), load_model("DeepSeek-V3"))
    ops = {o.name: o for o in prefill(s, [1024])[0].operations}
    assert ops["mlp.up"].count == 3 and ops["moe.up"].count == 58
    assert ops["moe.shared.up"].flops == 58 * 2 * 1024 * 7168 * 2 * 2048
    assert ops["attention.kernel"].count == 61 and "qkv_proj" not in ops
    qwen = Setting(s.hardware, load_model("Qwen1.5-MoE-A2.7B"))
    ops = {o.name: o for o in prefill(qwen, [100])[0].operations}
    assert ops["moe.shared_gate"].flops == 24 * 2 * 100 * 2048


def test_chunked_prefill_of_latent_attention_is_refused() -> None:
    from roofline.serving.schedule import chunking

    s = Setting(load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite"))
    with pytest.raises(InputError, match="chunked prefill is not modelled for multi-head "
                                         "latent attention"):
        chunking(s, 8192, 1024)


NEW = ("DeepSeek-V2-Lite", "DeepSeek-V3", "Qwen1.5-MoE-A2.7B")
DEVICES = list_hardware()


@settings(max_examples=30, deadline=None)
@given(model=st.sampled_from(NEW), device=st.sampled_from(DEVICES),
       mode=st.sampled_from(("naive", "tiled", "tiled_fa2", "kernel", "ideal")),
       batch=st.integers(1, 64), form=st.sampled_from(("absorbed", "naive")))
def test_every_crossover_satisfies_its_equality(model, device, mode, batch, form,
                                               crossovers_hold) -> None:
    """At each crossover that exists, grows = other, evaluated from the equality's own text at
    the root, independently of the solved closed form (as in test_model_families)."""
    if mode.startswith("tiled") and device.sram_per_sm is None:
        mode = "ideal"
    m = load_model(model)  # the decode form applies to a latent-attention model only
    crossovers_hold(Setting(device, m, attention=mode, batch=batch,
                            mla_decode=form if m.architecture.mla else "absorbed"))


# --- figures --------------------------------------------------------------------------------
def test_roofline_figure_draws_both_decode_forms() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from roofline.plot.roofline import roofline_figure

    s = Setting(load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite"))
    fig = roofline_figure(s, prompts=(2048,), batches=(1,), context=8192)
    points = {str(a.get_gid()): a for a in fig.findobj() if str(a.get_gid()).startswith("point:")}
    for form, group, label in (("absorbed", "decode", "decode step, batch 1"),
                               ("naive", "decode.naive", "decode step, naive MLA, batch 1")):
        x, y = points[f"point:H100-SXM:{group}:{label}"].get_data()
        d = decode(Setting(s.hardware, s.model, mla_decode=form), 8192)
        assert x[0] == pytest.approx(d.intensity) and y[0] == pytest.approx(d.flops / d.time_s)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("naive MLA" in t for t in texts) and any("absorbed MLA" in t for t in texts)
    llama = roofline_figure(Setting(s.hardware, load_model("Llama-3-8B")), prompts=(2048,))
    assert not any("decode.naive" in str(a.get_gid()) for a in llama.findobj())


def test_phases_figure_draws_both_decode_forms() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    from roofline.plot.phases import phases_figure

    s = Setting(load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite"))
    fig = phases_figure(s, context=8192)
    lines = {str(a.get_gid()): a for a in fig.findobj() if str(a.get_gid()).startswith("decode:")}
    for gid, form in (("decode:step", "absorbed"), ("decode:step:naive", "naive")):
        x, y = (np.asarray(v, dtype=float) for v in lines[gid].get_data())
        one = decode(Setting(s.hardware, s.model, mla_decode=form), 8192)
        assert x[0] == 1 and y[0] == pytest.approx(one.intensity)


def test_report_and_cli_name_both_forms(capsys) -> None:
    """The report's decode paragraph gives the other form too; `--mla-decode` picks the form
    that `prefill` reports."""
    from roofline import api
    from roofline.report import _prefill

    table = api.prefill("H100-SXM", "DeepSeek-V2-Lite", [128], context=8192)
    text = "\n".join(_prefill(table, []))
    assert "latent attention's absorbed form; the naive one, expanding the latent cache" in text
    for form in ("absorbed", "naive"):
        assert cli.main(["prefill", "--hardware", "H100-SXM", "--model", "DeepSeek-V2-Lite",
                         "--prompt", "128", "--context", "8192", "--mla-decode", form,
                         "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        d = decode(Setting(load_hardware("H100-SXM"), load_model("DeepSeek-V2-Lite"),
                           mla_decode=form), 8192)
        assert data["decode"]["flops"] == pytest.approx(d.flops)
