"""The peak memory of a prefill beyond weights and KV cache (roofline.derive.workspace): Llama-3-8B
at 8,192 tokens by hand, the longest prompts that fit on an L4, the largest chunk of a chunked
prefill on an H100, every position's logits against the last one's, and the other families'
phases by hand."""

from __future__ import annotations

import math

import pytest
from sympy import Integer, floor, parse_expr, sstr

from roofline.derive import workspace
from roofline.derive.architecture import Architecture
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model
from roofline.symbols import (B, D, F, F_dense, F_sh, H, H_r, T, T_chunk, V, b_a, by_name, d_c,
                              local_dict, n_a, n_e, n_q, n_sh)

LLAMA = load_model("Llama-3-8B")
BF16 = {"B": 1, "b_a": 2, "b_w": 2, "b_kv": 2}

# Llama-3-8B (D = 4096, F = 14336, n_q = 32, n_kv = 8, H = 128, L = 32, V = 128256), bf16
WEIGHTS = 2 * (2 * 4096 * 128256  # embedding table and untied LM head
               + 4096  # final norm
               + 32 * (3 * 4096 * 14336  # gate, up, down
                       + 4096 * 128 * 32  # W^O
                       + 4096 * 128 * (32 + 2 * 8)  # W^Q, W^K, W^V
                       + 2 * 4096))  # two RMSNorm gains a layer
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 heads of 128, 2 bytes: 131,072


def _values(**more: int) -> dict:
    return by_name({**LLAMA.values(), **BF16, **more})


def test_the_shipped_shape_is_llama_3_8b() -> None:
    assert LLAMA.architecture == Architecture()
    assert {k: LLAMA.values()[k] for k in ("D", "F", "n_q", "n_kv", "H", "L", "V")} == {
        "D": 4096, "F": 14336, "n_q": 32, "n_kv": 8, "H": 128, "L": 32, "V": 128256}
    assert WEIGHTS == 16_060_522_496  # 8.03 B parameters


def test_llama_3_8b_at_8192_tokens_kernel_by_hand() -> None:
    t = 8192
    kv = KV_PER_TOKEN * t  # 1 GiB
    attention = (2 * t * (4096  # residual stream
                          + 4096  # normed input
                          + (32 + 2 * 8) * 128  # Q, K, V
                          + 32 * 128)  # the attention's output
                 + 4 * 32 * t)  # logsumexp, fp32, per head and row
    o_proj = 2 * t * (4096 + 4096 + 48 * 128 + 32 * 128  # as above, without the logsumexp
                      + 4096)  # o_proj's output
    mlp = 2 * t * (4096 + 4096  # residual, the MLP's input
                   + 2 * 14336  # gate_up
                   + 14336  # SiLU(gate)·up
                   + 4096)  # down_proj's output
    lm_head = (2 * t * 4096  # final hidden states
               + 2 * 4096  # the last row, gathered
               + 2 * 128256  # its logits in bf16
               + 4 * 128256)  # and in fp32
    assert (attention, o_proj, mlp, lm_head) == (303_038_464, 369_098_752, 905_969_664,
                                                 67_886_592)
    values = _values(T=t)
    found = workspace.phases(Architecture(), "kernel")
    assert {k: v.xreplace(values) for k, v in found.items()} == {
        "attention": attention, "o_proj": o_proj, "mlp": mlp, "lm_head": lm_head}
    assert workspace.activation_bytes(Architecture(), "kernel").xreplace(values) == mlp
    peak = WEIGHTS + kv + mlp
    assert peak == 18_040_233_984
    assert workspace.peak_bytes(LLAMA.architecture, "kernel").xreplace(values) == peak


def test_llama_3_8b_at_8192_tokens_naive_by_hand() -> None:
    t = 8192
    kv = KV_PER_TOKEN * t
    scores = 2 * 32 * t * t  # one layer's S: 32 heads of T × T in bf16, 4 GiB
    softmax = (2 * t * (4096 + 4096 + 48 * 128)  # residual, normed input, QKV
               + 2 * scores)  # S and P, the softmax not in place
    pv = 2 * t * (4096 + 4096 + 48 * 128 + 32 * 128) + scores  # P and the output
    assert (softmax, pv) == (8_824_815_616, 4_596_957_184)
    values = _values(T=t)
    found = {k: v.xreplace(values) for k, v in workspace.phases(Architecture(), "naive").items()}
    assert (found["attention.softmax"], found["attention.pv"]) == (softmax, pv)
    assert workspace.activation_bytes(Architecture(), "naive").xreplace(values) == softmax
    peak = WEIGHTS + kv + softmax
    assert peak == 25_959_079_936
    assert workspace.peak_bytes(LLAMA.architecture, "naive").xreplace(values) == peak


@pytest.mark.parametrize("mode", ["naive", "kernel"])
def test_longest_prompt_on_an_l4(mode: str) -> None:
    capacity = int(load_hardware("L4").memory_capacity)
    assert capacity == 24_000_000_000
    free = capacity - WEIGHTS  # 7,939,477,504 bytes for the KV cache and the activations
    if mode == "kernel":  # the MLP binds: T·(KV + 2·(3·4096 + 3·14336)) ≤ free
        by_hand = free // (KV_PER_TOKEN + 2 * (3 * 4096 + 3 * 14336))  # 241,664 a token
    else:  # the softmax binds: 128·T² + (KV + 2·(2·4096 + 48·128))·T ≤ free, i.e. divided
        # by 128: T² + 1248·T − 62,027,168 ≤ 0, T ≤ −624 + √(624² + 62,027,168)
        assert (KV_PER_TOKEN + 2 * (2 * 4096 + 48 * 128)) == 128 * 1248 and free % 128 == 0
        by_hand = -624 + math.isqrt(624**2 + free // 128)
    assert by_hand == {"kernel": 32_853, "naive": 7_276}[mode]
    values = by_name({**LLAMA.values(), **BF16, "C_mem": capacity})
    root = workspace.longest_prompt(LLAMA.architecture, mode).xreplace(values)
    assert floor(root) == by_hand
    peak = workspace.peak_bytes(LLAMA.architecture, mode)
    assert peak.xreplace({**values, T: Integer(by_hand)}) <= capacity
    assert peak.xreplace({**values, T: Integer(by_hand + 1)}) > capacity


@pytest.mark.parametrize("mode", ["naive", "kernel"])
def test_largest_chunk_on_an_h100(mode: str) -> None:
    capacity, t = int(load_hardware("H100-SXM").memory_capacity), 100_000
    free = capacity - WEIGHTS - KV_PER_TOKEN * t  # 50,832,277,504 beside the KV cache of T
    if mode == "naive":  # the softmax: 2·(2·4096 + 48·128) + 2 scores of T keys a row and head
        per_row = 2 * (2 * 4096 + 48 * 128) + 2 * (2 * 32 * t)
    else:  # the MLP: 2·(3·4096 + 3·14336); a root beyond T: the rest of the prompt fits whole
        per_row = 2 * (3 * 4096 + 3 * 14336)
    by_hand = free // per_row
    assert by_hand == {"naive": 3_962, "kernel": 459_637}[mode]
    values = _values(T=t, C_mem=capacity)
    root = workspace.largest_chunk(LLAMA.architecture, mode).xreplace(values)
    assert floor(root) == by_hand
    peak = workspace.chunk_peak_bytes(LLAMA.architecture, mode)
    assert peak.xreplace({**values, T_chunk: Integer(by_hand)}) <= capacity
    assert peak.xreplace({**values, T_chunk: Integer(by_hand + 1)}) > capacity


def test_every_positions_logits() -> None:
    """All T positions' logits against the last one's: (T − 1)·B more rows gathered (D at b_a)
    and more logits (V at b_a and in fp32)."""
    last = workspace.phases(Architecture(), "kernel")["lm_head"]
    every = workspace.phases(Architecture(), "kernel", logits="all")["lm_head"]
    assert (every - last - (T - 1) * B * (D * b_a + V * (b_a + 4))).expand() == 0
    # at T = 4 the LM head is the peak either way: 4·8192 + 8192 + 6·128256 bytes with the last
    # position's logits, against the MLP's 4·110,592
    values = _values(T=4)
    lone = 2 * 4 * 4096 + 2 * 4096 + (2 + 4) * 128256
    assert workspace.activation_bytes(Architecture(), "kernel").xreplace(values) == lone
    assert lone > 4 * 2 * (3 * 4096 + 3 * 14336)
    every = workspace.activation_bytes(Architecture(), "kernel", "all").xreplace(values)
    assert every - lone == (4 - 1) * (2 * 4096 + (2 + 4) * 128256)
    # at 8,192 tokens every position's logits (6 bytes each) outgrow the MLP
    values = _values(T=8192)
    every = workspace.activation_bytes(Architecture(), "kernel", "all").xreplace(values)
    assert every == 2 * 8192 * 4096 + 8192 * (2 * 4096 + 6 * 128256)


def test_other_families_by_hand() -> None:
    x = B * T
    routed = workspace.phases(Architecture(moe=True))["moe.routed"]
    assert (routed - (b_a * x * (2 * D + n_e + n_a * (2 * F + F + D) + D) + 8 * x * n_a)
            ).expand() == 0
    deepseek = workspace.phases(Architecture(moe=True, shared_experts=True, moe_layers="some",
                                             mla=True, q_lora=True))
    assert set(deepseek) == {"attention", "o_proj", "moe.routed", "moe.shared", "mlp.dense",
                             "lm_head"}
    assert (deepseek["moe.shared"] - b_a * x * (3 * D + 3 * n_sh * F_sh)).expand() == 0
    assert (deepseek["mlp.dense"] - b_a * x * (3 * D + 3 * F_dense)).expand() == 0
    qkv = n_q * (2 * (H + H_r) + H) + d_c + H_r  # per-head q, k of H + H_r, v of H; the latent
    assert (deepseek["o_proj"] - b_a * x * (2 * D + qkv + n_q * H + D)).expand() == 0
    plain = workspace.phases(Architecture(gated_mlp=False, norm="layer", activation="gelu"))
    assert (plain["mlp.act"] - b_a * x * (2 * D + 2 * F)).expand() == 0
    assert (plain["mlp.down"] - b_a * x * (3 * D + F)).expand() == 0
    # GQA's K, V never enter the scores: n_q heads of T × T (or T × min(T, W) in a window)
    # (D = H = 0 leaves the softmax's two score matrices alone)
    softmax = workspace.phases(Architecture(window="all"), "naive")["attention.softmax"]
    values = by_name({"B": 1, "T": 10, "W": 4, "D": 0, "H": 0, "n_q": 3, "n_kv": 1, "b_a": 2})
    assert softmax.xreplace(values) == 2 * (3 * 10 * 4) * 2


def test_a_window_and_its_longest_prompt() -> None:
    """Mistral-7B, every layer windowed (W = 4096, rolling KV cache): beyond W the footprint is
    flat in the KV cache and linear in the naive scores (T × W per head)."""
    mistral = load_model("Mistral-7B")
    values = by_name({**mistral.values(), **BF16, "C_mem": 24_000_000_000})
    root = workspace.longest_prompt(mistral.architecture, "naive").xreplace(values)
    t = int(floor(root))
    peak = workspace.peak_bytes(mistral.architecture, "naive")
    assert t > mistral.values()["W"]
    assert peak.xreplace({**values, T: Integer(t)}) <= 24_000_000_000
    assert peak.xreplace({**values, T: Integer(t + 1)}) > 24_000_000_000


def test_refusals() -> None:
    with pytest.raises(ValueError, match="unknown attention mode"):
        workspace.activation_bytes(Architecture(), "flash")
    with pytest.raises(ValueError, match="unknown logits"):
        workspace.activation_bytes(Architecture(), "kernel", "some")
    with pytest.raises(ValueError, match="not modelled"):
        workspace.activation_bytes(Architecture(linear_attention=True), "kernel")
    with pytest.raises(ValueError, match="no closed form"):  # chunked attention's KV cache
        workspace.longest_prompt(Architecture(window="some", window_kind="chunked"), "kernel")


def test_entries() -> None:
    entries = workspace.entries()
    names = {e.name for e in entries}
    for mode in ("naive", "kernel"):
        for what in ("activation_bytes", "peak_bytes", "longest_prompt", "largest_chunk"):
            assert f"workspace.{what}.{mode}" in names
    for e in entries:
        assert e.topic == "workspace" and e.source and e.unit in ("bytes", "tokens")
        assert parse_expr(sstr(e.expr), local_dict=local_dict()) == e.expr, e.name
    assert T_chunk not in next(e for e in entries
                               if e.name == "workspace.largest_chunk.kernel").expr.free_symbols
