"""Issue "Third sweep": a config's quantization_config sets the weights' data type (said in the
output; --weight-dtype still overrides it), held against the parameter count by hand."""

import json

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


@pytest.mark.parametrize("quantization, dtype", [
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
    ({"quant_method": "fbgemm_fp8"}, "fp8"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4"),
    ({"quant_method": "gptq", "bits": 8}, "int8"),
    ({"quant_method": "awq", "bits": 4, "version": "gemm"}, "int4"),
    ({"quant_method": "awq", "w_bit": 4}, "int4"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
     "int4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 8, "type": "float"}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 4, "type": "int"}}}}, "int4"),
    ({"quant_method": "mxfp4"}, "fp4"),
])
def test_the_weights_are_stored_as_the_config_says(tmp_path, quantization, dtype):
    """The weights' bytes are the parameters (Llama-3-8B: 8,030,261,248, Meta's model card
    rounds to 8.0 B) times the type's bytes (fp8: 1, int4: 1/2), one device, by hand."""
    bytes_of = {"fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5}[dtype]
    model = read_model(_config(tmp_path, quantization))
    assert model.weight_dtype == dtype
    s = api.setting("H100-SXM", model)
    assert s.precision["weights"] == dtype and "the config's quantization" in s.precision_words
    assert evaluate.held_bytes(s, "weights") == pytest.approx(8_030_261_248 * bytes_of)
    given = api.setting("H100-SXM", model, weight_dtype="bf16")  # the option still overrides
    assert evaluate.held_bytes(given, "weights") == pytest.approx(8_030_261_248 * 2)
    assert "quantization" not in given.precision_words


def test_deepseek_v3_runs_in_its_published_fp8(capsys):
    """DeepSeek-V3 ships fp8 weights (its config's quantization_config): 671,026,404,352
    parameters (the paper's 671B) at one byte each, not the 1,342 GB of bf16."""
    s = api.setting("H200-SXM", "DeepSeek-V3")
    assert evaluate.held_bytes(s, "weights") == pytest.approx(671_026_404_352)
    assert main(["prefill", "--hardware", "H200-SXM", "--model", "DeepSeek-V3",
                 "--prompt", "4096", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["precision"]["weights"] == "fp8"
    assert main(["prefill", "--hardware", "H200-SXM", "--model", "DeepSeek-V3",
                 "--prompt", "4096"]) == 0
    assert "weights fp8 (the config's quantization)" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("quantization, where, rule", [
    ({"quant_method": "hqq"}, "quantization_config.quant_method", "not read: must be one of"),
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
