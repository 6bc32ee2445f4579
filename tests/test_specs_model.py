"""Model shapes from Hugging Face config.json files: presets against their configs and published
totals, small models against their published parameter counts, every bad input rejected with a
message that names the file, the key, the rule and the value."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from roofline.derive.transformer import Architecture
from roofline.errors import SpecError, UnknownNameError
from roofline.specs.model import ModelShape, list_models, load_model, read_model

FIXTURES = Path(__file__).parent / "fixtures" / "models"
PRESETS = ("Llama-2-7B", "Llama-2-70B", "Llama-3-8B", "Llama-3-70B", "Mistral-7B",
           "Mixtral-8x7B", "Qwen2.5-7B", "OPT-13B", "GPT-3-175B", "Llama-3.1-8B",
           "Llama-3.1-70B", "Llama-3.1-405B", "Gemma-2-9B", "Phi-3-mini-4k", "DeepSeek-V2-Lite",
           "DeepSeek-V3", "Qwen1.5-MoE-A2.7B", "Qwen3-8B", "Qwen3-30B-A3B", "gpt-oss-20b",
           "Gemma-3-1B", "Qwen3-Next-80B-A3B", "DeepSeek-V3.2", "Llama-4-Scout-17B-16E", "Yi-34B-200K")

# The presets' shapes and exact parameter totals, copied here with their public sources (one per
# row) so that nothing outside the repository is read. Shape: the config.json on the row (GPT-3:
# its paper). Total: counted from that shape outside roofline (embeddings and head, every
# projection and bias, every norm), equal to the rounded total the model card or paper publishes
# (in the comment).
# Columns: (D, L, n_q, n_kv, H, F, V, max positions, experts, experts per token), activation,
# tied embeddings, biases, norm, gated MLP, total parameters.
REFERENCE = {
    # huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json; Llama 2 paper (arXiv
    # 2307.09288) Table 1: 7B
    "Llama-2-7B": ((4096, 32, 32, 32, 128, 11008, 32000, 4096, 1, 1),
                   "silu", False, False, "rms", True, 6_738_415_616),
    # huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json; Llama 2 paper: 70B
    "Llama-2-70B": ((8192, 80, 64, 8, 128, 28672, 32000, 4096, 1, 1),
                    "silu", False, False, "rms", True, 68_976_648_192),
    # huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json; card: 8.03B params
    "Llama-3-8B": ((4096, 32, 32, 8, 128, 14336, 128256, 8192, 1, 1),
                   "silu", False, False, "rms", True, 8_030_261_248),
    # huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json; card: 70.6B params
    "Llama-3-70B": ((8192, 80, 64, 8, 128, 28672, 128256, 8192, 1, 1),
                    "silu", False, False, "rms", True, 70_553_706_496),
    # huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json; card: 7.24B params
    "Mistral-7B": ((4096, 32, 32, 8, 128, 14336, 32000, 32768, 1, 1),
                   "silu", False, False, "rms", True, 7_241_732_096),
    # huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/main/config.json (as the base
    # v0.1); card: 46.7B params (Mixtral paper, arXiv 2401.04088: 47B total, 13B active)
    "Mixtral-8x7B": ((4096, 32, 32, 8, 128, 14336, 32000, 32768, 8, 2),
                     "silu", False, False, "rms", True, 46_702_792_704),
    # huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json (biases on Q, K, V: Qwen2's
    # modelling code); card: "Number of Parameters: 7.61B"
    "Qwen2.5-7B": ((3584, 28, 28, 4, 128, 18944, 152064, 131072, 1, 1),
                   "silu", False, True, "rms", True, 7_615_616_512),
    # huggingface.co/facebook/opt-13b/blob/main/config.json (tied embeddings: HF's default;
    # every linear layer has a bias); OPT paper, arXiv 2205.01068, Table 1: 13B
    "OPT-13B": ((5120, 40, 40, 40, 128, 20480, 50272, 2048, 1, 1),
                "relu", True, True, "layer", False, 12_853_473_280),
    # Brown et al. 2020, arXiv 2005.14165, Table 2.1 and §2.1 (175.0B; n_ctx 2048); vocabulary
    # 50257 and tied embeddings as GPT-2
    "GPT-3-175B": ((12288, 96, 96, 96, 128, 49152, 50257, 2048, 1, 1),
                   "gelu", True, True, "layer", False, 174_604_259_328),
    # huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json; card: 8.03B params
    "Llama-3.1-8B": ((4096, 32, 32, 8, 128, 14336, 128256, 131072, 1, 1),
                     "silu", False, False, "rms", True, 8_030_261_248),
    # huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json; card: 70.6B params
    "Llama-3.1-70B": ((8192, 80, 64, 8, 128, 28672, 128256, 131072, 1, 1),
                      "silu", False, False, "rms", True, 70_553_706_496),
    # huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json (8 key/value heads: the
    # Llama 3 paper, arXiv 2407.21783, Table 3); HF model page: 406B (405.9B) params
    "Llama-3.1-405B": ((16384, 126, 128, 8, 128, 53248, 128256, 131072, 1, 1),
                       "silu", False, False, "rms", True, 405_853_388_800),
    # huggingface.co/google/gemma-2-9b/blob/main/config.json; Gemma 2 paper (arXiv 2408.00118)
    # Table 2 and the model page: 9.24B params (tied embeddings, four norms per layer)
    "Gemma-2-9B": ((3584, 42, 16, 8, 256, 14336, 256000, 8192, 1, 1),
                   "gelu", True, False, "rms", True, 9_241_705_984),
    # huggingface.co/microsoft/Phi-3-mini-4k-instruct/blob/main/config.json; Phi-3 report
    # (arXiv 2404.14219) §2: 3.8B params
    "Phi-3-mini-4k": ((3072, 32, 32, 32, 96, 8192, 32064, 4096, 1, 1),
                      "silu", False, False, "rms", True, 3_821_079_552),
    # huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json (F: the routed experts'
    # moe_intermediate_size); DeepSeek-V2 paper (arXiv 2405.04434) Appendix B: 15.7B params
    "DeepSeek-V2-Lite": ((2048, 27, 16, 16, 128, 1408, 102400, 163840, 64, 6),
                         "silu", False, False, "rms", True, 15_706_484_224),
    # huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json; DeepSeek-V3 report (arXiv
    # 2412.19437): 671B params without the multi-token-prediction module
    "DeepSeek-V3": ((7168, 61, 128, 128, 128, 2048, 129280, 163840, 256, 8),
                    "silu", False, False, "rms", True, 671_026_404_352),
    # huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/blob/main/config.json; model card: 14.3B params
    # (2.7B activated)
    "Qwen1.5-MoE-A2.7B": ((2048, 24, 16, 16, 128, 1408, 151936, 8192, 60, 4),
                          "silu", False, True, "rms", True, 14_315_784_192),
    # huggingface.co/Qwen/Qwen3-8B/blob/main/config.json (QK-norm: 2·128 gains a layer);
    # Qwen3 report (arXiv 2505.09388) and model card: 8.2B params, 6.95B non-embedding
    "Qwen3-8B": ((4096, 36, 32, 8, 128, 12288, 151936, 40960, 1, 1),
                 "silu", False, False, "rms", True, 8_190_735_360),
    # huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json; model card: 30.5B params, 3.3B
    # activated
    "Qwen3-30B-A3B": ((2048, 48, 32, 4, 128, 768, 151936, 40960, 128, 8),
                      "silu", False, False, "rms", True, 30_532_122_624),
    # huggingface.co/openai/gpt-oss-20b/blob/main/config.json (biases on Q, K, V, O, the
    # experts and the router; 64 sinks a layer); gpt-oss model card (arXiv 2508.10925) Table 1:
    # 20.91B params
    "gpt-oss-20b": ((2880, 24, 64, 8, 64, 2880, 201088, 131072, 32, 4),
                    "silu", False, True, "rms", True, 20_914_757_184),
    # huggingface.co/google/gemma-3-1b-it/blob/main/config.json (QK-norm, four norms a layer,
    # tied embeddings); Gemma 3 report (arXiv 2503.19786) Table 1: 302M embedding, 698M
    # non-embedding parameters
    "Gemma-3-1B": ((1152, 26, 4, 1, 256, 6912, 262144, 32768, 1, 1),
                   "gelu", True, False, "rms", True, 999_885_952),
    # huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json (36 Gated DeltaNet
    # layers, 12 full; hand-expanded in tests/test_recent_families.py); model card: 80B in
    # total, 79B non-embedding
    "Qwen3-Next-80B-A3B": ((2048, 48, 16, 2, 256, 512, 151936, 262144, 512, 10),
                           "silu", False, False, "rms", True, 79_674_391_296),
    # huggingface.co/deepseek-ai/DeepSeek-V3.2/blob/main/config.json: DeepSeek-V3's shape and
    # 61 indexers of 13,959,424 (DeepSeek-V3.2-Exp inference/model.py, class Indexer); 685B on
    # the model page with the multi-token-prediction layer, not counted (as DeepSeek-V3's)
    "DeepSeek-V3.2": ((7168, 61, 128, 128, 128, 2048, 129280, 163840, 256, 8),
                      "silu", False, False, "rms", True, 671_877_929_216),
    # huggingface.co/meta-llama/Llama-4-Scout-17B-16E config.json (its text_config, as
    # transformers prints Llama4Config; hand-expanded in tests/test_recent_families.py);
    # Meta's card: 17B active, 109B with the vision encoder (not counted here)
    "Llama-4-Scout-17B-16E": ((5120, 48, 40, 8, 128, 8192, 202048, 10485760, 16, 1),
                              "silu", False, False, "rms", True, 107_769_861_120),
    # huggingface.co/01-ai/Yi-34B-200K/blob/main/config.json (a llama-type config: 56 query and
    # 8 key/value heads, untied embeddings); Yi report (arXiv 2403.04652) Table 1: hidden 7168,
    # 56 query and 8 key/value heads, 60 layers; 34B. Total by hand: 60 layers of
    # 7168·(2·7168 + 2·1024) + 3·7168·20480 + 2·7168 = 557,856,768, two 64,000 × 7168 tables
    # and the final norm: 34,388,917,248
    "Yi-34B-200K": ((7168, 60, 56, 8, 128, 20480, 64000, 200000, 1, 1),
                    "silu", False, False, "rms", True, 34_388_917_248),
}


def test_every_preset_is_shipped() -> None:
    assert sorted(m.name for m in list_models()) == sorted(PRESETS) == sorted(REFERENCE)


@pytest.mark.parametrize("name", PRESETS)
def test_parameters_against_published(name: str) -> None:
    assert load_model(name).parameters == REFERENCE[name][-1]


@pytest.mark.parametrize("name", PRESETS)
def test_shape_against_config(name: str) -> None:
    shape, activation, tied, biases, norm, gated, _ = REFERENCE[name]
    m = load_model(name)
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim,
            m.intermediate_size, m.vocab_size, m.max_position, m.num_experts,
            m.experts_per_token) == shape
    assert m.activation == activation
    assert m.tied_embeddings == tied
    assert (m.linear_bias or m.qkv_bias) == biases
    assert m.norm == norm
    assert m.gated_mlp == gated


def test_gpt2_small_published_count() -> None:
    # HF GPT2LMHeadModel (gpt2): 124,439,808 parameters, tied head, 1024 learned positions.
    m = read_model(FIXTURES / "gpt2-small.json")
    assert (m.intermediate_size, m.position_table_rows, m.activation) == (3072, 1024, "gelu")
    assert m.parameters == 124_439_808


def test_pythia_70m_published_count() -> None:
    # Pythia paper / HF EleutherAI/pythia-70m: 70,426,624 total, 18,915,328 non-embedding.
    m = read_model(FIXTURES / "pythia-70m.json")
    assert m.architecture == Architecture(gated_mlp=False, norm="layer", activation="gelu",
                                          position="rope", linear_bias=True)
    assert m.parameters == 70_426_624
    assert m.parameters - 2 * m.vocab_size * m.hidden_size == 18_915_328


def test_tiny_llama_hand_expanded() -> None:
    # D=64, L=2, 4 heads of 16, F=128, V=100, untied:
    # per layer: attention 64·(4+2·4)·16 + 64·64 = 16384; MLP 64·256 + 128·64 = 24576;
    # norms 128
    # → 2·41088 + final norm 64 + embeddings 2·100·64 = 95040.
    m = read_model(FIXTURES / "tiny-llama.json")
    assert (m.num_kv_heads, m.head_dim, m.tied_embeddings) == (4, 16, False)  # HF defaults
    assert m.parameters == 95_040


def test_defaults_per_family() -> None:
    opt = load_model("OPT-13B")
    assert opt.tied_embeddings and opt.linear_bias and not opt.qkv_bias
    assert opt.position_table_rows == 2048 + 2  # OPT's offset of 2
    gpt3 = load_model("GPT-3-175B")
    assert (gpt3.intermediate_size, gpt3.position_table_rows) == (4 * 12288, 2048)
    qwen = load_model("Qwen2.5-7B")
    assert qwen.qkv_bias and not qwen.linear_bias and not qwen.tied_embeddings
    mixtral = load_model("Mixtral-8x7B")
    assert mixtral.architecture.moe and (mixtral.num_experts, mixtral.experts_per_token) == (8, 2)
    assert not load_model("Llama-3-8B").architecture.moe


def test_values_substitution() -> None:
    assert load_model("Llama-3-8B").values() == {
        "D": 4096, "F": 14336, "n_q": 32, "n_kv": 8, "H": 128, "L": 32, "V": 128256, "n_e": 1,
        "n_a": 1, "T_pos": 0}
    assert load_model("OPT-13B").values()["T_pos"] == 2050


def test_architecture_is_derived_not_passed() -> None:
    fields = {f.name: f for f in dataclasses.fields(ModelShape)}
    assert not fields["architecture"].init
    with pytest.raises(TypeError):
        ModelShape(name="x", path=Path("x"), model_type="llama", hidden_size=8, num_layers=1,
                   num_heads=2, num_kv_heads=2, head_dim=4, intermediate_size=8, vocab_size=10,
                   max_position=16, architecture=Architecture())  # type: ignore[call-arg]


def test_model_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_model("Llama-3-8B").hidden_size = 1  # type: ignore[misc]


def test_direct_construction_is_validated() -> None:
    with pytest.raises(SpecError, match=re.escape(
            "x.json: position_table_rows: must be positive for learned positions and 0 "
            "otherwise (got 0)")):
        ModelShape(name="x", path=Path("x.json"), model_type="gpt2", hidden_size=8,
                   num_layers=1, num_heads=2, num_kv_heads=2, head_dim=4, intermediate_size=8,
                   vocab_size=10, max_position=16, position="learned")
    with pytest.raises(SpecError, match=re.escape(
            "x.json: num_experts_per_tok: must be at most the 1 experts (got 2)")):
        ModelShape(name="x", path=Path("x.json"), model_type="mixtral", hidden_size=8,
                   num_layers=1, num_heads=2, num_kv_heads=2, head_dim=4, intermediate_size=8,
                   vocab_size=10, max_position=16, experts_per_token=2)


def test_as_dict_is_json_ready() -> None:
    data = json.loads(json.dumps(load_model("Llama-3-8B").as_dict()))
    assert data["path"].endswith("Llama-3-8B.json")
    assert data["parameters"] == 8_030_261_248
    assert data["symbols"]["n_kv"] == 8


# --- names and paths -----------------------------------------------------------------------
def test_load_by_path_names_by_stem(tmp_path: Path) -> None:
    copy = tmp_path / "my-model.json"
    shutil.copy(FIXTURES / "tiny-llama.json", copy)
    assert load_model(str(copy)).name == "my-model"
    assert load_model(copy).path == copy


def test_unknown_name_lists_valid_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown model 'BERT'; valid names: "
                       r"DeepSeek-V2-Lite, DeepSeek-V3, DeepSeek-V3.2, GPT-3-175B, Gemma-2-9B, .*Qwen2.5-7B, Qwen3-30B-A3B, Qwen3-8B, Qwen3-Next-80B-A3B, Yi-34B-200K, gpt-oss-20b$"):
        load_model("BERT")


def test_names_match_exactly() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown model 'llama-3-8b'; close matches: "):
        load_model("llama-3-8b")


def test_list_of_a_directory(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "tiny-llama.json", tmp_path / "tiny.json")
    assert [m.name for m in list_models(directory=tmp_path)] == ["tiny"]
    assert load_model("tiny", directory=tmp_path).parameters == 95_040


# --- bad input: one fixture each -----------------------------------------------------------
BAD = [
    ("invalid_json", "", "is not valid JSON", None),
    ("not_utf8", "", "is not UTF-8 text (byte 0)", None),
    ("not_an_object", "", "must hold a JSON object", "list"),
    ("missing_key", "intermediate_size", "missing required key", None),
    ("unsupported_type", "model_type",
     "unsupported; supported: llama, mistral, mixtral, qwen2, phi3, gemma, gemma2, opt, gpt2, gpt_neox, qwen2_moe, deepseek_v2, deepseek_v3, deepseek_v32, qwen3, qwen3_moe, gemma3, gemma3_text, gpt_oss, qwen3_next, llama4, llama4_text"
     "; describe the model in a shape file (.toml, models/README.md) with hidden_size, num_layers, num_heads, intermediate_size, vocab_size, max_position and a source", "t5"),
    ("not_an_integer", "hidden_size", "must be a positive integer", "4096"),
    ("zero", "num_hidden_layers", "must be a positive integer", 0),
    ("kv_heads_not_dividing", "num_key_value_heads", "must divide the 4 attention heads", 3),
    ("mixtral_missing_experts", "num_local_experts", "missing required key", None),
    ("unknown_activation", "hidden_act", "must be relu, silu (swish) or gelu*", "tanh"),
]


@pytest.mark.parametrize("fixture, key, rule, value", BAD, ids=[b[0] for b in BAD])
def test_bad_input(fixture: str, key: str, rule: str, value: object) -> None:
    path = FIXTURES / f"{fixture}.json"
    with pytest.raises(SpecError) as info:
        read_model(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}" if key else f"{path}: ")
    assert rule in message
    if value is not None:
        assert message.endswith(f"(got {value!r})")


@pytest.mark.parametrize("change, key, rule", [
    ({"model_type": "opt", "ffn_dim": 128, "word_embed_proj_dim": 32}, "word_embed_proj_dim",
     "not supported: must equal hidden_size 64"),
    ({"model_type": "opt", "ffn_dim": 128, "do_layer_norm_before": False},
     "do_layer_norm_before", "not supported: post-LayerNorm OPT"),
    ({"attention_bias": True}, "attention_bias", "not supported"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings", "must be true or false"),
    ({"num_attention_heads": 5}, "num_attention_heads", "must divide the width 64"),
    ({"model_type": None}, "model_type", "missing required key"),
])
def test_unsupported_variants(tmp_path: Path, change: dict, key: str, rule: str) -> None:
    config = json.loads((FIXTURES / "tiny-llama.json").read_text())
    config.update(change)
    if config["model_type"] is None:
        del config["model_type"]
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(config))
    with pytest.raises(SpecError, match=re.escape(f"{path}: {key}: {rule}")):
        read_model(path)


def test_null_keys_take_hf_defaults(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "tiny-llama.json").read_text())
    config.update(num_key_value_heads=None, head_dim=None)
    path = tmp_path / "nulls.json"
    path.write_text(json.dumps(config))
    m = read_model(path)
    assert (m.num_kv_heads, m.head_dim) == (4, 16)


# --- types where the value matters, and plausible counts -------------------------------------
def _variant(tmp_path: Path, change: dict, drop: tuple[str, ...] = ()) -> Path:
    config = json.loads((FIXTURES / "tiny-llama.json").read_text())
    config.update(change)
    for key in drop:
        config.pop(key, None)
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("change, key, rule, value", [
    ({"model_type": "opt", "ffn_dim": 128, "do_layer_norm_before": "false"},
     "do_layer_norm_before", "must be true or false", "false"),
    ({"model_type": "opt", "ffn_dim": 128, "_remove_final_layer_norm": 1},
     "_remove_final_layer_norm", "must be true or false", 1),
    ({"attention_bias": [True]}, "attention_bias", "must be true or false", [True]),
    ({"mlp_bias": "true"}, "mlp_bias", "must be true or false", "true"),
    ({"model_type": ["llama"]}, "model_type",
     "must be a string, one of: llama, mistral, mixtral, qwen2, phi3, gemma, gemma2, opt, gpt2, gpt_neox, qwen2_moe, deepseek_v2, deepseek_v3, deepseek_v32, qwen3, qwen3_moe, gemma3, gemma3_text, gpt_oss, qwen3_next, llama4, llama4_text",
     ["llama"]),
    ({"model_type": {"name": "llama"}}, "model_type", "must be a string, one of:",
     {"name": "llama"}),
    ({"hidden_size": True}, "hidden_size", "must be a positive integer", True),
    ({"num_hidden_layers": 2.0}, "num_hidden_layers", "must be a positive integer", 2.0),
    ({"model_type": "opt", "ffn_dim": 128, "word_embed_proj_dim": "64"}, "word_embed_proj_dim",
     "must be a positive integer", "64"),
    ({"vocab_size": 10**8 + 1}, "vocab_size", "must be at most 100,000,000 (a plausible upper "
     "bound)", 10**8 + 1),
    ({"vocab_size": 10**400}, "vocab_size", "must be at most 100,000,000",
     "an integer of 401 digits"),
    ({"vocab_size": 1e400}, "vocab_size", "must be a positive integer", float("inf")),
    ({"hidden_size": 2 * 10**6}, "hidden_size", "must be at most 1,000,000", 2 * 10**6),
    ({"num_hidden_layers": 10**4 + 1}, "num_hidden_layers", "must be at most 10,000",
     10**4 + 1),
    ({"intermediate_size": 10**7 + 1}, "intermediate_size", "must be at most 10,000,000",
     10**7 + 1),
    ({"max_position_embeddings": 10**9 + 1}, "max_position_embeddings",
     "must be at most 1,000,000,000", 10**9 + 1),
    ({"num_key_value_heads": 10**5 + 1}, "num_key_value_heads", "must be at most 100,000",
     10**5 + 1),
])
def test_types_and_bounds(tmp_path: Path, change: dict, key: str, rule: str,
                          value: object) -> None:
    path = _variant(tmp_path, change)
    with pytest.raises(SpecError) as info:
        read_model(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: {rule}")
    assert message.endswith(f"(got {value!r})") and "\n" not in message
    assert isinstance(info.value, SpecError)


def test_flags_of_the_right_type_still_work(tmp_path: Path) -> None:
    m = read_model(_variant(tmp_path, {"attention_bias": False, "mlp_bias": None}))
    assert m.parameters == 95_040
    opt = read_model(_variant(tmp_path, {"model_type": "opt", "ffn_dim": 128,
                                         "do_layer_norm_before": True,
                                         "word_embed_proj_dim": 64}))
    assert opt.architecture.norm == "layer"


def test_the_largest_plausible_counts_are_accepted(tmp_path: Path) -> None:
    m = read_model(_variant(tmp_path, {"vocab_size": 10**8, "max_position_embeddings": 10**9}))
    assert (m.vocab_size, m.max_position) == (10**8, 10**9)


def test_direct_construction_is_bounded() -> None:
    with pytest.raises(SpecError, match=re.escape(
            "x.json: num_layers: must be at most 10,000 (a plausible upper bound) (got 20000)")):
        ModelShape(name="x", path=Path("x.json"), model_type="llama", hidden_size=8,
                   num_layers=20_000, num_heads=2, num_kv_heads=2, head_dim=4,
                   intermediate_size=8, vocab_size=10, max_position=16)
    with pytest.raises(SpecError, match=re.escape(
            "x.json: hidden_size: must be a positive integer (got True)")):
        ModelShape(name="x", path=Path("x.json"), model_type="llama", hidden_size=True,
                   num_layers=1, num_heads=2, num_kv_heads=2, head_dim=4,
                   intermediate_size=8, vocab_size=10, max_position=16)


def test_a_vocab_of_ten_to_the_400_through_the_cli(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.cli import main

    path = _variant(tmp_path, {"vocab_size": 10**400})
    assert main(["model", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"roofline: error: {path}: vocab_size: must be at most "
                                 "100,000,000 (a plausible upper bound) (got 'an integer of 401 "
                                 "digits')\n")
