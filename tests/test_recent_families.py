"""This year's families (issue 31): Qwen3, Qwen3-MoE, Gemma-3, gpt-oss read from their configs,
their parameter counts against the published ones and hand-expanded sums, QK-norm and sinks
counted by hand, and bad configs refused in one line."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from sympy import expand

from roofline.derive.layers import qk_norm_op
from roofline.errors import SpecError
from roofline.specs.model import load_model, read_model
from roofline.symbols import B, H, T, b_a, b_w, n_kv, n_q


def _config(tmp_path: Path, name: str, **keys: object) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(keys))
    return path


# --- QK-norm and sinks --------------------------------------------------------------------------

def test_qk_norm_by_hand() -> None:
    # an RMSNorm (4 FLOPs an element) over every query and key head of every token; the elements
    # read and written once, the 2·H gains read once
    op = qk_norm_op(B * T)
    elements = B * T * (n_q + n_kv) * H
    assert expand(op.flops - 4 * elements) == 0
    assert expand(op.bytes - (2 * elements * b_a + 2 * H * b_w)) == 0


def test_qk_norm_in_the_prefill_of_qwen3() -> None:
    # Qwen3-8B at T = 2,048, B = 1: 36 layers × 4 × 2048 × (32 + 8) × 128 = 1.51 GFLOP
    import roofline

    table = roofline.prefill("H100-SXM", "Qwen3-8B", prompts=[2048])
    op = next(o for o in table.points[0].operations if o.name == "qk_norm")
    assert op.flops == 36 * 4 * 2048 * 40 * 128


def test_qwen3_gains_and_gpt_oss_sinks_in_the_count() -> None:
    qwen = load_model("Qwen3-8B")
    plain = dataclasses.replace(qwen, qk_norm=False)
    assert qwen.parameters - plain.parameters == 36 * 2 * 128  # q_norm and k_norm, H each
    oss = load_model("gpt-oss-20b")
    assert oss.parameters - dataclasses.replace(oss, attention_sinks=False).parameters == 24 * 64


def test_gpt_oss_active_as_its_card_counts() -> None:
    # gpt-oss model card (arXiv 2508.10925) Table 1: 20.91B total, 3.61B active, the embedding
    # table not counted as active (the unembedding is); hand-expanded: per layer attention
    # 2880·(64 + 16)·64 + (64 + 16)·64 + 4096·2880 + 2880 + 64 sinks, four experts of
    # 2·2880·2880·... with biases, the router 2880·32 + 32, two norms
    m = load_model("gpt-oss-20b")
    D, F, V = 2880, 2880, 201088
    attention = D * 80 * 64 + 80 * 64 + 4096 * D + D + 64
    expert = D * 2 * F + 2 * F + F * D + D
    active = 24 * (attention + 4 * expert + D * 32 + 32 + 2 * D) + D + V * D
    assert m.active_parameters - V * D == active
    assert round((m.active_parameters - V * D) / 1e9, 2) == 3.61
    assert round(m.parameters / 1e9, 2) == 20.91


def test_gpt_oss_windows_and_biases() -> None:
    m = load_model("gpt-oss-20b")
    assert (m.sliding_window, m.window_layers, m.linear_bias, m.attention_sinks) == \
        (128, 12, True, True)
    assert m.architecture.sinks and m.architecture.window == "some"
    assert m.weight_dtype == "fp4" and m.embedding_dtype == "bf16"


def test_qwen3_moe_has_no_shared_expert() -> None:
    m = load_model("Qwen3-30B-A3B")
    assert (m.num_experts, m.experts_per_token, m.intermediate_size, m.shared_experts) == \
        (128, 8, 768, 0)
    assert m.qk_norm and not m.qkv_bias
    assert round(m.active_parameters / 1e9, 1) == 3.4  # the card: "3.3B activated", ≈ 3.35


# --- Gemma-3: the text decoder of a multimodal config --------------------------------------------

GEMMA3_27B_TEXT = dict(  # the text_config of google/gemma-3-27b-it's config.json
    head_dim=128, hidden_size=5376, intermediate_size=21504, model_type="gemma3_text",
    num_attention_heads=32, num_hidden_layers=62, num_key_value_heads=16,
    query_pre_attn_scalar=168, rope_scaling={"factor": 8.0, "rope_type": "linear"},
    sliding_window=1024)


def test_gemma3_text_config_and_defaults(tmp_path: Path) -> None:
    m = read_model(_config(tmp_path, "g3", model_type="gemma3", text_config=GEMMA3_27B_TEXT,
                           vision_config={"hidden_size": 1152}))
    # Gemma3TextConfig's defaults fill what the text_config leaves out
    assert (m.vocab_size, m.max_position, m.tied_embeddings) == (262208, 131072, True)
    # five local layers to one global: layers 5, 11, ..., 59 are global (10 of 62)
    assert (m.sliding_window, m.window_layers) == (1024, 62 - 10)
    assert m.qk_norm and m.post_norms and m.embed_scale
    # Gemma 3 report (arXiv 2503.19786) Table 1: 27B has 25,600M non-embedding parameters
    non_embedding = m.parameters - m.vocab_size * m.hidden_size
    assert round(non_embedding / 1e6, -2) == 25_600


def test_gemma3_1b_as_published() -> None:
    # Gemma 3 report (arXiv 2503.19786) Table 1: 1B has 302M embedding and 698M non-embedding
    # parameters; layers 5, 11, 17 and 23 are global, the 22 others local (window 512)
    m = load_model("Gemma-3-1B")
    embedding = m.vocab_size * m.hidden_size
    assert (round(embedding / 1e6), round((m.parameters - embedding) / 1e6)) == (302, 698)
    assert (m.sliding_window, m.window_layers, m.num_kv_heads) == (512, 22, 1)


def test_gemma3_layer_types_decide(tmp_path: Path) -> None:
    kinds = ["sliding_attention"] * 3 + ["full_attention"] * 3
    text = dict(GEMMA3_27B_TEXT, num_hidden_layers=6, layer_types=kinds)
    m = read_model(_config(tmp_path, "g3", **text))
    assert m.window_layers == 3


def test_gemma3_without_text_config_is_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, "g3", model_type="gemma3", text_config=[1])
    with pytest.raises(SpecError, match=re.escape(
            "g3.json: text_config: must be a JSON object (the text decoder's config) (got [1])")):
        read_model(path)


def test_bad_text_config_key_names_its_place(tmp_path: Path) -> None:
    text = dict(GEMMA3_27B_TEXT, num_hidden_layers="62")
    with pytest.raises(SpecError, match=re.escape("g3.json: text_config: num_hidden_layers")):
        read_model(_config(tmp_path, "g3", model_type="gemma3", text_config=text))


@pytest.mark.parametrize("model_type, bias", [("qwen3", True), ("gpt_oss", False)])
def test_attention_biases_the_code_lacks_are_refused(tmp_path: Path, model_type: str,
                                                     bias: bool) -> None:
    keys = dict(json.loads(Path(load_model("Qwen3-8B" if model_type == "qwen3"
                                           else "gpt-oss-20b").path).read_text()))
    keys["attention_bias"] = bias
    with pytest.raises(SpecError, match=re.escape("attention_bias: not supported")):
        read_model(_config(tmp_path, model_type, **keys))


def test_qwen3_window_from_max_window_layers(tmp_path: Path) -> None:
    keys = dict(json.loads(Path(load_model("Qwen3-8B").path).read_text()))
    keys.update(use_sliding_window=True, sliding_window=4096, max_window_layers=28)
    m = read_model(_config(tmp_path, "q", **keys))
    assert (m.sliding_window, m.window_layers) == (4096, 36 - 28)


# --- Qwen3-Next: a linear-attention hybrid -----------------------------------------------------

def test_qwen3_next_as_published() -> None:
    # model card (Qwen/Qwen3-Next-80B-A3B-Instruct): 80B in total, 79B non-embedding; 12 of 48
    # layers full attention (every 4th), 36 Gated DeltaNet. Hand-expanded: a Gated DeltaNet
    # layer holds in_proj_qkvz 2048·(2·16·128 + 2·32·128), in_proj_ba 2048·64, conv1d
    # 8192·4, A_log and dt_bias 32 each, norm 128, out_proj 4096·2048; a full layer's attention
    # q_proj 2048·(2·16·256) (query and gate), k_proj and v_proj 2048·512, o_proj 4096·2048,
    # q_norm and k_norm 256 each; every layer's MoE a router 2048·512, 512 experts and one
    # shared expert of 3·2048·512, the shared gate 2048; two norms of 2048 a layer
    m = load_model("Qwen3-Next-80B-A3B")
    D, V = 2048, 151936
    linear = D * 12288 + D * 64 + 8192 * 4 + 64 + 128 + 4096 * D
    full = D * 8192 + 2 * D * 512 + 4096 * D + 2 * 256
    moe = D * 512 + 513 * 3 * D * 512 + D
    total = 36 * linear + 12 * full + 48 * (moe + 2 * D) + D + 2 * V * D
    assert m.parameters == total
    assert (round(total / 1e9), round((total - 2 * V * D) / 1e9)) == (80, 79)
    assert (m.linear_layers, m.linear_value_heads, m.attn_output_gate) == (36, 32, True)


def test_hybrid_without_linear_layers_is_the_dense_model() -> None:
    # L_lin = 0 in the hybrid's forms gives the dense model's operations exactly
    from dataclasses import replace as arch_with

    from roofline.derive.decode import decode_operations, model_kv_cache_bytes
    from roofline.derive.transformer import (Architecture, parameter_count, prefill_operations,
                                             total_bytes, total_flops)
    from roofline.symbols import L_lin

    dense = Architecture(moe=True, shared_experts=True, shared_gate=True, qk_norm=True)
    hybrid = arch_with(dense, linear_attention=True)
    for mode in ("naive", "kernel", "ideal"):
        a, b = prefill_operations(dense, mode), prefill_operations(hybrid, mode)
        for total in (total_flops, total_bytes):
            assert expand(total(b).subs(L_lin, 0) - total(a)) == 0
    assert expand(parameter_count(hybrid).subs(L_lin, 0) - parameter_count(dense)) == 0
    assert expand(model_kv_cache_bytes(hybrid).subs(L_lin, 0) - model_kv_cache_bytes(dense)) == 0
    assert expand(total_bytes(decode_operations(hybrid)).subs(L_lin, 0)
                  - total_bytes(decode_operations(dense))) == 0


def test_hybrid_state_does_not_grow() -> None:
    # the KV cache of Qwen3-Next at T: 12 full layers × 2 × 2 heads × 256 × T × 2 bytes, and
    # 36 linear layers' state of 32·128·128 + 3·(2·16·128 + 32·128) elements, 2 bytes each
    import roofline

    for t in (4096, 65536):
        table = roofline.prefill("H200-SXM", "Qwen3-Next-80B-A3B", prompts=[t])
        state = 36 * (32 * 128 * 128 + 3 * 8192) * 2
        assert table.memory["kv_cache"] == 12 * 2 * 2 * 256 * t * 2 + state


# --- DeepSeek-V3.2: sparse attention -----------------------------------------------------------

def test_deepseek_v32_adds_the_indexer() -> None:
    # DeepSeek-V3's 671,026,404,352 (the same config's shape: the 671B of arXiv 2412.19437) and
    # 61 indexers of wq_b 1536·64·128, wk 7168·128, k_norm 2·128, weights_proj 7168·64
    # (DeepSeek-V3.2-Exp inference/model.py, class Indexer); the MTP layer not counted
    m = load_model("DeepSeek-V3.2")
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert m.parameters == 671_026_404_352 + 61 * indexer
    assert (m.index_topk, m.index_heads, m.index_head_dim) == (2048, 64, 128)


def test_sparse_equals_dense_at_short_prompts() -> None:
    # at T ≤ k_top every query attends to all its keys: the sparse model's attention FLOPs in
    # the kernel mode are dense latent attention's (the masked MHA mode), plus the indexer's
    import roofline

    def attention_flops(model: str, t: int, name: str) -> float:
        table = roofline.prefill("H200-SXM", model, prompts=[t])
        return sum(o.flops for o in table.points[0].operations if o.name.startswith(name))

    for t in (512, 2048):
        dense = attention_flops("DeepSeek-V3", t, "attention.")
        assert attention_flops("DeepSeek-V3.2", t, "dsa.attention") == pytest.approx(dense)
    # beyond k_top the sparse attention grows linearly: equal steps in T, equal steps in FLOPs
    a, b, c = (attention_flops("DeepSeek-V3.2", t, "dsa.attention")
               for t in (40_000, 60_000, 80_000))
    assert b - a == pytest.approx(c - b)


def test_bad_hybrid_and_sparse_shapes_are_refused(tmp_path: Path) -> None:
    keys = dict(json.loads(Path(load_model("Qwen3-Next-80B-A3B").path).read_text()))
    keys["linear_num_value_heads"] = 24  # not a multiple of the 16 key heads
    with pytest.raises(SpecError, match=re.escape(
            "linear_num_value_heads: must be a multiple of the 16 linear key heads (got 24)")):
        read_model(_config(tmp_path, "n", **keys))
    keys = dict(json.loads(Path(load_model("DeepSeek-V3.2").path).read_text()))
    keys["q_lora_rank"] = None
    with pytest.raises(SpecError, match=re.escape("q_lora_rank: must be a positive integer "
                                                  "with sparse attention")):
        read_model(_config(tmp_path, "d", **keys))


# --- Llama 4: chunked attention, NoPE layers, interleaved experts --------------------------------

def test_llama4_scout_as_published() -> None:
    # Meta's model card: 17B active, 109B total with the vision encoder. The text decoder by
    # hand: per layer attention 5120·(40 + 16)·128 + 40·128·5120, a router 5120·16, 16 experts
    # and one shared expert of 3·5120·8192, two norms; embeddings and head 2·202048·5120
    m = load_model("Llama-4-Scout-17B-16E")
    D, V = 5120, 202048
    attention = D * 56 * 128 + 40 * 128 * D
    expert = 3 * D * 8192
    total = 48 * (attention + D * 16 + 17 * expert + 2 * D) + D + 2 * V * D
    active = 48 * (attention + D * 16 + 2 * expert + 2 * D) + D + 2 * V * D
    assert (m.parameters, m.active_parameters) == (total, active)
    assert round(active / 1e9) == 17 and 107e9 < total < 109e9
    assert (m.attention_chunk_size, m.window_layers, m.local_rope, m.qk_l2_norm) == \
        (8192, 36, True, True)


def test_llama4_defaults_and_interleaving(tmp_path: Path) -> None:
    text = dict(model_type="llama4_text", num_hidden_layers=8, interleave_moe_layer_step=2,
                intermediate_size=64, intermediate_size_mlp=128, hidden_size=64,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=100)
    m = read_model(_config(tmp_path, "l4", **text))
    # layers 1, 3, 5, 7 have experts (range(step − 1, L, step)); 3 and 7 are global (every 4th)
    assert (m.moe_layers, m.dense_intermediate_size, m.window_layers) == (4, 128, 6)
    bad = dict(text, no_rope_layers=[1, 1, 2, 0, 1, 1, 1, 0])
    with pytest.raises(SpecError, match=re.escape("no_rope_layers: must be a list of 8 "
                                                  "entries, each 0 or 1")):
        read_model(_config(tmp_path, "l4", **bad))
