"""Issue "Third sweep": a config's quantization_config sets the weights' data type (said in the
output; --weight-dtype still overrides it), held against the parameter count by hand."""

import json
import warnings

import pytest

from roofline import api, evaluate
from roofline.cli import main
from roofline.errors import SpecError
from roofline.specs.model import load_model, read_model

LLAMA = load_model("Llama-3-8B").path


def _config(tmp_path, quantization):
    config = json.loads(LLAMA.read_text())
    config["quantization_config"] = quantization
    path = tmp_path / "quantized.json"
    path.write_text(json.dumps(config))
    return path


# Llama-3-8B: 8,030,261,248 parameters (Meta's model card rounds to 8.0 B), of which the
# embedding table and the untied LM head are 2 · 128,256 · 4,096 = 1,050,673,152
EDGES = 2 * 128_256 * 4_096
LAYERS = 8_030_261_248 - EDGES


@pytest.mark.parametrize("quantization, dtype, weight", [
    # fp8 with one fp32 scale per 128 × 128 block: 1 + 32/(128·128)/8 bytes
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8",
     1 + 32 / 16384 / 8),
    ({"quant_method": "fbgemm_fp8"}, "fp8", 1),
    # 4 bits and an fp16 scale and a 4-bit zero per group of 128: (4 + 20/128)/8 bytes
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4", (4 + 20 / 128) / 8),
    ({"quant_method": "gptq", "bits": 8}, "int8", (8 + 24 / 128) / 8),
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, "int4", 0.5),
    ({"quant_method": "awq", "bits": 4, "version": "gemm", "group_size": 64}, "int4",
     (4 + 20 / 64) / 8),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 128}, "int4", (4 + 20 / 128) / 8),
    # AWQ without zero points: the fp16 scale alone
    ({"quant_method": "awq", "bits": 4, "zero_point": False}, "int4", (4 + 16 / 128) / 8),
    # QLoRA §2: an fp32 absmax per block of 64 (0.5 bit), 0.127 bit when double-quantized
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
     "int4", 4.5 / 8),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True},
     "int4", (4 + 8 / 64 + 32 / (64 * 256)) / 8),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8", 1),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 8, "type": "float"}}}}, "fp8", 1),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                "group_size": 128, "symmetric": False}}}}, "int4",
     (4 + 20 / 128) / 8),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "channel"}}}},
     "int4", 0.5),
    # OCP MX: one 8-bit scale per 32 elements
    ({"quant_method": "mxfp4"}, "fp4", (4 + 8 / 32) / 8),
])
def test_the_weights_are_stored_as_the_config_says(tmp_path, quantization, dtype, weight):
    """The weights' bytes: the layers' parameters at the type's bytes with its scales, the
    embedding table and LM head at the checkpoint's bf16, one device, by hand."""
    model = read_model(_config(tmp_path, quantization))
    assert model.weight_dtype == dtype
    s = api.setting("H100-SXM", model)
    assert s.precision["weights"] == dtype and "the config's quantization" in s.precision_words
    assert evaluate.held_bytes(s, "weights") == pytest.approx(LAYERS * weight + EDGES * 2)
    given = api.setting("H100-SXM", model, weight_dtype="bf16")  # the option still overrides
    assert evaluate.held_bytes(given, "weights") == pytest.approx(8_030_261_248 * 2)
    assert "quantization" not in given.precision_words


def test_a_gptq_llama_reads_and_writes_its_embeddings_in_fp16(tmp_path):
    """GPTQ leaves the embedding table and LM head at the checkpoint's torch_dtype: fp16 here.
    The LM head's prefill bytes are its weights, 128,256 · 4,096 · 2, and one row in and its
    logits out at bf16 activations, (4,096 + 128,256) · 2, by hand; the layers' q_proj reads
    its 4,096 · 4,096 · 0.5 bytes of int4 with 20/128 bits per weight of scales."""
    config = json.loads(LLAMA.read_text())
    config.update(torch_dtype="float16",
                  quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128})
    path = tmp_path / "gptq.json"
    path.write_text(json.dumps(config))
    s = api.setting("H100-SXM", read_model(path))
    assert s.precision["embeddings"] == "fp16"
    assert "embeddings and LM head fp16" in s.precision_words
    ops = {o.name: o for o in api.prefill(s.hardware, s.model, 2048).points[0].operations}
    assert ops["lm_head"].bytes == 128_256 * 4_096 * 2 + (4_096 + 128_256) * 2
    qkv = 4_096 * (32 + 2 * 8) * 128  # weights of the fused QKV projection
    rows = 2048 * (4_096 + (32 + 2 * 8) * 128) * 2
    assert ops["qkv_proj"].bytes == pytest.approx(32 * (qkv * (4 + 20 / 128) / 8 + rows))


def test_a_method_it_does_not_read_needs_weight_dtype(tmp_path, capsys):
    """An unknown quant_method loads; a setting without --weight-dtype is one line naming it,
    and with it the layers run at the given type, the embeddings at the checkpoint's bf16."""
    path = _config(tmp_path, {"quant_method": "hqq", "nbits": 4})
    model = read_model(path)
    assert model.weight_dtype is None
    assert main(["prefill", "--hardware", "H100-SXM", "--model", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "quantization_config" in err and "hqq" in err
    assert "--weight-dtype" in err
    s = api.setting("H100-SXM", model, weight_dtype="int4")
    assert evaluate.held_bytes(s, "weights") == pytest.approx(LAYERS * 0.5 + EDGES * 2)
    assert main(["prefill", "--hardware", "H100-SXM", "--model", str(path), "--weight-dtype",
                 "int4"]) == 0


def test_deepseek_v3_runs_in_its_published_fp8(capsys):
    """DeepSeek-V3 ships fp8 weights (its config's quantization_config): 671,026,404,352
    parameters (the paper's 671B), of which the embedding table and LM head, 2 · 129,280 ·
    7,168, stay bf16 and the rest are one byte each with an fp32 scale per 128 × 128 block:
    673.04 GB, not the 1,342 GB of bf16."""
    s = api.setting("H200-SXM", "DeepSeek-V3")
    edges = 2 * 129_280 * 7_168
    held = (671_026_404_352 - edges) * (1 + 4 / (128 * 128)) + edges * 2
    assert evaluate.held_bytes(s, "weights") == pytest.approx(held)
    assert main(["prefill", "--hardware", "H200-SXM", "--model", "DeepSeek-V3",
                 "--prompt", "4096", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["precision"]["weights"] == "fp8"
    assert main(["prefill", "--hardware", "H200-SXM", "--model", "DeepSeek-V3",
                 "--prompt", "4096"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "weights fp8 (the config's quantization: fp8, blocks 128×128" in head
    assert "embeddings and LM head bf16" in head


@pytest.mark.parametrize("quantization, where, rule", [
    ({"quant_method": "gptq", "bits": 3}, "quantization_config.bits", "4 or 8 bits"),
    ("fp8", "quantization_config", "must be a JSON object"),
    ({"quant_method": "bitsandbytes"}, "quantization_config.load_in_4bit", "load_in_8bit"),
])
def test_a_quantization_it_cannot_read_is_one_line(tmp_path, capsys, quantization, where, rule):
    path = _config(tmp_path, quantization)
    with pytest.raises(SpecError) as err:
        read_model(path)
    assert f"{path}: {where}" in str(err.value) and rule in str(err.value)
    assert main(["prefill", "--hardware", "H100-SXM", "--model", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and where in err


def test_act_dtype_counts_the_activations_as_stored(capsys):
    """--act-dtype bf16 under fp8 compute: a residual add reads two and writes one T×D tensor
    per layer, 3·T·D·2 bytes (Llama-3-8B: D = 4,096, 32 layers), by hand; the option reaches
    crossover, ttft and the figures' settings as it reaches prefill."""
    T, D, L = 2048, 4096, 32
    for act, size in ((None, 1), ("bf16", 2)):
        table = api.prefill("H100-SXM", "Llama-3-8B", T, dtype="fp8", act_dtype=act)
        (add,) = [o for o in table.points[0].operations if o.name == "residual_add.attn"]
        assert add.bytes == 3 * T * D * size * L
    assert main(["crossover", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--dtype",
                 "fp8", "--act-dtype", "bf16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["precision"]["activations"] == "bf16"
    assert main(["ttft", "--hardware", "H100-SXM", "--model", "Llama-3-8B", "--dtype", "fp8",
                 "--act-dtype", "bf16", "--prompt", "2048", "--rate", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["act_dtype"] == "bf16"
    fp8 = api.setting("H100-SXM", "Llama-3-8B", dtype="fp8")
    bf16 = api.setting("H100-SXM", "Llama-3-8B", dtype="fp8", act_dtype="bf16")
    assert fp8.numbers()["b_a"] == 1 and bf16.numbers()["b_a"] == 2
    assert "activations bf16" in bf16.precision_words


def test_modules_kept_unquantized_are_named_in_a_warning(tmp_path):
    """AWQ's modules_to_not_convert (attention kept in 16 bits): one weight type counts them at
    4 bits, fewer bytes than they hold, so reading the file warns, naming them; the embeddings
    and LM head, which are counted at their own width, do not."""
    path = _config(tmp_path, {"quant_method": "awq", "bits": 4,
                              "modules_to_not_convert": ["self_attn", "lm_head"]})
    with pytest.warns(UserWarning, match=r"modules_to_not_convert: self_attn kept unquantized"):
        read_model(path)
    quiet = _config(tmp_path, {"quant_method": "gptq", "bits": 4,
                               "modules_to_not_convert": ["lm_head"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_model(quiet)
