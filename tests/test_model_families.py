"""The families read directly since issue 12 (gemma, gemma2, phi3; Llama-3.1's rope_scaling),
sliding windows as each family's config switches them, shape files for any other family, and
the crossovers of windowed models: parameter counts against published figures and sums written
out by hand, every bad window a one-line error with status 2."""

from __future__ import annotations

import json
import re
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import cli
from roofline.errors import InputError, SpecError
from roofline.evaluate import Setting, crossover_value, prefill
from roofline.specs.hardware import list_hardware, load_hardware
from roofline.specs.model import load_model, read_model

FIXTURES = Path(__file__).parent / "fixtures" / "models"

# Parameter totals: the sum over the config's shape written out by hand (per layer: Q, K, V and
# O, gate, up and down, the norms; then the final norm and the embeddings, once if tied), and
# the figure the model card or paper publishes, to its published precision.
HAND = {
    # Gemma 2 (arXiv 2408.00118): 9.24B; four RMSNorms per layer; tied embeddings
    "Gemma-2-9B": (42 * (3584 * (16 + 2 * 8) * 256 + 16 * 256 * 3584 + 3 * 3584 * 14336
                         + 4 * 3584) + 3584 + 256000 * 3584, 9.24, 2),
    # Phi-3 report (arXiv 2404.14219) §2: 3.8B; fused qkv_proj and gate_up_proj count the same
    "Phi-3-mini-4k": (32 * (3072 * 3 * 3072 + 3072 * 3072 + 3 * 3072 * 8192 + 2 * 3072)
                      + 3072 + 2 * 32064 * 3072, 3.8, 1),
    # Llama 3.1 model card: 8.03B, 70.6B; 405B: 405.9B on its HF page (8 key/value heads)
    "Llama-3.1-8B": (32 * (4096 * (32 + 16) * 128 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096)
                     + 4096 + 2 * 128256 * 4096, 8.03, 2),
    "Llama-3.1-70B": (80 * (8192 * (64 + 16) * 128 + 8192 * 8192 + 3 * 8192 * 28672
                            + 2 * 8192) + 8192 + 2 * 128256 * 8192, 70.6, 1),
    "Llama-3.1-405B": (126 * (16384 * (128 + 16) * 128 + 16384 * 16384 + 3 * 16384 * 53248
                              + 2 * 16384) + 16384 + 2 * 128256 * 16384, 405.9, 1),
}


@pytest.mark.parametrize("name", HAND)
def test_preset_parameters(name: str) -> None:
    total, published, digits = HAND[name]
    m = load_model(name)
    assert m.parameters == total
    assert round(m.parameters / 1e9, digits) == published


def test_gemma_v1_against_its_cards() -> None:
    """HF google/gemma-7b: 8.54B; google/gemma-2b: 2.51B (multi-query: one key/value head)."""
    seven = read_model(FIXTURES / "gemma-7b.json")
    assert seven.parameters == 28 * (3072 * 48 * 256 + 4096 * 3072 + 3 * 3072 * 24576
                                     + 2 * 3072) + 3072 + 256000 * 3072 == 8_537_680_896
    two = read_model(FIXTURES / "gemma-2b.json")
    assert two.parameters == 2_506_172_416 and two.attention_kind == "MQA"
    assert (seven.tied_embeddings, seven.embed_scale, seven.post_norms, seven.window) \
        == (True, True, False, "none")
    assert seven.activation == "gelu" and seven.attention_kind == "MHA"


def test_gemma2_structure() -> None:
    m = load_model("Gemma-2-9B")
    assert (m.sliding_window, m.window_layers, m.window) == (4096, 21, "some")
    assert m.head_dim * m.num_heads == 4096 != m.hidden_size  # head_dim apart from D/n_q
    assert m.post_norms and m.embed_scale and m.tied_embeddings
    assert m.values()["L_w"] == 21 and m.values()["W"] == 4096
    ops = [op.name for op in prefill(Setting(load_hardware("H100-SXM"), m), [16])[0].operations]
    for name in ("embed_scale", "post_attn_norm", "post_mlp_norm", "attention.kernel",
                 "attention.kernel.window"):
        assert name in ops


def test_llama31_rope_scaling_changes_nothing() -> None:
    a, b = load_model("Llama-3.1-8B"), load_model("Llama-3-8B")
    assert a.architecture == b.architecture and a.values() == b.values()
    assert a.max_position == 131072


# --- which layers a config windows ------------------------------------------------------------
def _config(tmp_path: Path, model_type: str, **change) -> Path:
    config = {"model_type": model_type, "hidden_size": 64, "num_hidden_layers": 6,
              "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
              "max_position_embeddings": 1024, **change}
    config = {k: v for k, v in config.items() if v != "absent"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("model_type, change, window, layers", [
    ("mistral", {"sliding_window": 32}, 32, 6),
    ("mistral", {}, 4096, 6),  # MistralConfig's default window
    ("mistral", {"sliding_window": None}, None, 0),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2}, None, 0),
    ("phi3", {"sliding_window": 2047}, 2047, 6),
    ("llama", {"sliding_window": 32}, None, 0),  # LlamaConfig has no window: ignored
    ("qwen2", {"sliding_window": 32, "max_window_layers": 2}, None, 0),  # switch off
    ("qwen2", {"use_sliding_window": True, "sliding_window": 32, "max_window_layers": 2}, 32, 4),
    ("qwen2", {"use_sliding_window": True, "sliding_window": 32, "max_window_layers": 6},
     None, 0),
    ("gemma2", {}, 4096, 3),  # layers 0, 2, 4
    ("gemma2", {"num_hidden_layers": 5}, 4096, 3),
    ("gemma2", {"layer_types": ["full_attention"] * 5 + ["sliding_attention"]}, 4096, 1),
    ("gemma", {"sliding_window": 32}, None, 0),
])
def test_window_as_the_family_decides(tmp_path, model_type, change, window, layers) -> None:
    m = read_model(_config(tmp_path, model_type, **change))
    assert (m.sliding_window, m.window_layers) == (window, layers)


@pytest.mark.parametrize("value", [0, -4096, 4096.5, "4096", True, [4096]])
def test_bad_window_is_one_line_and_status_2(tmp_path, capsys, value) -> None:
    path = _config(tmp_path, "mistral", sliding_window=value)
    with pytest.raises(SpecError, match=r"sliding_window: must be a positive integer"):
        read_model(path)
    assert cli.main(["model", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "sliding_window" in err


def test_bad_layer_types(tmp_path) -> None:
    with pytest.raises(SpecError, match=r"layer_types: must be a list of 6 entries"):
        read_model(_config(tmp_path, "gemma2", layer_types=["full_attention"]))
    with pytest.raises(SpecError, match=r"layer_types: entries must be one of sliding_"):
        read_model(_config(tmp_path, "gemma2", layer_types=["local"] * 6))


def test_unsupported_names_the_type_families_and_fields(tmp_path) -> None:
    with pytest.raises(SpecError) as info:
        read_model(_config(tmp_path, "internlm2"))
    message = str(info.value)
    assert "model_type: unsupported; supported: llama," in message and "gemma2" in message
    assert "hidden_size, num_layers, num_heads, intermediate_size, vocab_size, max_position" \
        in message and message.endswith("(got 'internlm2')") and "\n" not in message


# --- shape files ----------------------------------------------------------------------------
def test_shape_file_equals_the_preset() -> None:
    m = load_model(str(FIXTURES / "shape-llama-3-8b.toml"))
    assert m.parameters == load_model("Llama-3-8B").parameters == 8_030_261_248
    assert (m.model_type, m.head_dim, m.window) == ("llama-like", 128, "none")
    assert m.source.startswith("HF meta-llama")


def test_shape_file_with_a_window() -> None:
    m = read_model(FIXTURES / "shape-windowed.toml")
    assert (m.window, m.sliding_window, m.window_layers) == ("some", 16, 3)
    # by hand: 4 · (64·(4 + 4)·16 + 64·64 + 3·64·128 + 2·64) + 64 + 2·100·64
    assert m.parameters == 4 * (64 * 8 * 16 + 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64 + 12800


SHAPE = Path(FIXTURES / "shape-windowed.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("edit, message", [
    (("num_layers = 4", "num_layer = 4"), "unknown key 'num_layer'; close matches: num_layers"),
    (("vocab_size = 100\n", ""), "vocab_size: missing required key"),
    (("hidden_size = 64", "hidden_size = 64.0"), "hidden_size: must be an integer (got 64.0)"),
    (("hidden_size = 64", "hidden_size = \"64\""), "hidden_size: must be an integer (got '64')"),
    (("sliding_window = 16", "sliding_window = 0"),
     "sliding_window: must be a positive integer (got 0)"),
    (("window_layers = 3", "window_layers = 5"),
     "window_layers: must be an integer from 0 to the 4 layers (got 5)"),
    (("source = \"made up for the tests\"", "source = \" \""),
     "source: must be a non-empty string"),
    (("family = \"toy\"", "qkv_bias = 1"), "qkv_bias: must be true or false (got 1)"),
    (("max_position = 1024", "max_position = [1024]"), "max_position: must be an integer"),
    (("num_heads = 4", "num_heads = 4 ="), "is not valid TOML"),
])
def test_bad_shape_file(tmp_path, capsys, edit, message) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(SHAPE.replace(*edit), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        read_model(path)
    assert str(info.value).startswith(f"{path}") and message in str(info.value)
    assert cli.main(["model", "show", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1


# --- model show ------------------------------------------------------------------------------
def test_model_show_prints_window_and_attention_kind(capsys) -> None:
    assert cli.main(["model", "show", "Gemma-2-9B"]) == 0
    out = capsys.readouterr().out
    assert "GQA, grouped-query: 2 query heads share each key/value head" in out
    assert "4,096 tokens on 21 of 42 layers (local and global alternate" in out
    assert cli.main(["model", "show", "Mistral-7B", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["sliding_window"], data["window"], data["attention_kind"]) \
        == (4096, "all", "GQA")
    assert data["symbols"]["W"] == 4096


# --- windowed models in numbers -------------------------------------------------------------
def test_mistral_crossovers_that_the_window_removes() -> None:
    s = Setting(load_hardware("H100-SXM"), load_model("Mistral-7B"))
    flops = crossover_value(s, "attention_equals_projection_flops_tokens")
    assert not flops.exists and "sliding window W = 4,096" in flops.reason
    kv = crossover_value(s, "kv_cache_exceeds_memory_tokens")
    assert not kv.exists and kv.reason.startswith("never: the sliding window keeps at most")
    full = crossover_value(Setting(s.hardware, s.model, kv_cache="full"),
                           "kv_cache_exceeds_memory_tokens")
    # the whole cache: (80e9 − weights) / (2·L·n_kv·H·b_kv) tokens
    weights = 2 * load_model("Mistral-7B").parameters
    assert full.exists and math.isclose(full.value, (80e9 - weights) / (2 * 32 * 8 * 128 * 2))


def test_kv_cache_option() -> None:
    hw, m = load_hardware("H100-SXM"), load_model("Mistral-7B")
    with pytest.raises(InputError, match="kv_cache: must be one of window, full"):
        Setting(hw, m, kv_cache="rolling")
    from roofline.evaluate import decode

    rolling = decode(Setting(hw, m), 32768).kv_cache_bytes
    whole = decode(Setting(hw, m, kv_cache="full"), 32768).kv_cache_bytes
    assert rolling == 2 * 32 * 8 * 128 * 4096 * 2 and whole == 8 * rolling
    llama = load_model("Llama-3-8B")  # no window: the option would do nothing
    with pytest.raises(InputError, match="kv_cache: applies to a model with a sliding window"):
        Setting(hw, llama, kv_cache="full")


def test_cli_kv_cache_flag(capsys) -> None:
    for flag, tokens in (("window", 4096), ("full", 32768)):
        assert cli.main(["prefill", "--hardware", "H100-SXM", "--model", "Mistral-7B",
                         "--prompt", "32768", "--kv-cache", flag, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["decode"]["kv_cache_bytes"] == 2 * 32 * 8 * 128 * tokens * 2


def test_chunked_prefill_of_a_windowed_model_is_refused() -> None:
    from roofline.serving.schedule import chunking

    s = Setting(load_hardware("H100-SXM"), load_model("Mistral-7B"))
    with pytest.raises(InputError, match="chunked prefill is not modelled for sliding-window"):
        chunking(s, 8192, 1024)


NEW = ("Mistral-7B", "Gemma-2-9B", "Phi-3-mini-4k", "Llama-3.1-8B", "Llama-3.1-405B")
DEVICES = list_hardware()


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(NEW), device=st.sampled_from(DEVICES),
       mode=st.sampled_from(("naive", "tiled", "tiled_fa2", "kernel", "ideal")),
       batch=st.integers(1, 64), kv=st.sampled_from(("window", "full")))
def test_every_crossover_satisfies_its_equality(model, device, mode, batch, kv,
                                               crossovers_hold) -> None:
    """At each crossover that exists, grows = other (the defining equality), evaluated from the
    equality's own text at the root, independently of the solved closed form."""
    if mode.startswith("tiled") and device.sram_per_sm is None:
        mode = "ideal"
    m = load_model(model)  # the cache option applies to a windowed model only
    crossovers_hold(Setting(device, m, attention=mode, batch=batch,
                            kv_cache=kv if m.window != "none" else "window"))


# --- the attention figure of a windowed model -----------------------------------------------
def test_window_panel_bends_from_T2_to_WT() -> None:
    """The third panel's data: a windowed layer's FLOPs equal 4·n_q·H·Σ min(i+1, W) (B = 1) and
    grow as T² below W and as T beyond it (log–log slope 2, then 1); a global layer's stay T²."""
    import numpy as np

    from roofline.plot.attention import attention_figure

    s = Setting(load_hardware("H100-SXM"), load_model("Mistral-7B"))
    fig = attention_figure(s)
    assert len(fig.axes) == 3
    lines = {a.get_gid(): a for a in fig.findobj() if str(a.get_gid()).startswith("window:")}
    x, y = (np.asarray(v, dtype=float) for v in lines["window:flops"].get_data())
    w = 4096
    pairs = np.where(x <= w, x * (x + 1) / 2, w * x - w * (w - 1) / 2)
    assert np.allclose(y, 4 * 32 * 128 * pairs, rtol=1e-12)
    slope = np.diff(np.log(y)) / np.diff(np.log(x))
    assert np.all(np.abs(slope[x[1:] < w / 2] - 2) < 0.1)
    assert np.all(np.abs(slope[x[:-1] > 64 * w] - 1) < 0.02)
    gx, gy = (np.asarray(v, dtype=float) for v in lines["window:flops:global"].get_data())
    assert np.all(np.abs(np.diff(np.log(gy))[gx[1:] > 64 * w] / np.diff(np.log(gx))[
        gx[1:] > 64 * w] - 2) < 0.02)
    bx, by = (np.asarray(v, dtype=float) for v in lines["window:bytes"].get_data())
    b_slope = np.diff(np.log(by)) / np.diff(np.log(bx))
    assert np.all(np.abs(b_slope[bx[:-1] > 64 * w] - 1) < 0.05)
    assert lines["window:W"].get_xdata()[0] == w


def test_a_shape_file_string_that_does_not_print_is_refused(tmp_path):
    text = (FIXTURES / "shape-llama-3-8b.toml").read_text()
    path = tmp_path / "s.toml"
    path.write_text(text.replace('family = "llama-like"', 'family = "llama\\u001b[2J"'))
    with pytest.raises(SpecError, match=re.escape(f"{path}: family: holds '\\x1b', which does "
                                                  "not print")):
        load_model(str(path))


@pytest.mark.parametrize("old, new, message", [
    ("num_kv_heads = 8", "num_kv_heads = 5", "num_kv_heads: must divide the 32 attention heads"),
])
def test_a_shape_file_error_names_the_shape_files_key(tmp_path, old, new, message):
    # it named config.json's key (num_key_value_heads), which a shape file does not have
    text = (FIXTURES / "shape-llama-3-8b.toml").read_text()
    assert old in text
    path = tmp_path / "s.toml"
    path.write_text(text.replace(old, new))
    with pytest.raises(SpecError, match=re.escape(f"{path}: {message} (got 5)")):
        load_model(str(path))
