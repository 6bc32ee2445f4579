"""A whole prefill: the 2·(parameters)·T rule plus attention, parameter counts, MoE reads."""

from sympy import Min

from roofline.derive import attention, decode
from roofline.derive.transformer import (Architecture, parameter_count, prefill_operations,
                                         total_bytes, total_flops)
from roofline.symbols import B, D, F, H, L, T, T_ctx, V, b_a, b_kv, b_w, n_a, n_e, n_kv, n_q

LLAMA3_8B = {D: 4096, L: 32, n_q: 32, n_kv: 8, H: 128, F: 14336, V: 128256}


def test_llama3_8b_parameters_are_the_published_total():
    assert parameter_count().subs(LLAMA3_8B) == 8_030_261_248  # HF Meta-Llama-3-8B card: 8.03B


def test_mixtral_parameters_are_the_published_total():
    mixtral = {**LLAMA3_8B, V: 32000, n_e: 8}
    assert parameter_count(Architecture(moe=True)).subs(mixtral) == 46_702_792_704


def test_prefill_flops_are_two_params_per_token_plus_attention():
    t = 2048
    v = {**LLAMA3_8B, B: 1, T: t}
    ops = prefill_operations()
    # the rule: 2·(parameters in the layers' matrices)·T, + causal attention, + the LM head
    # on the last position only; hand-expanded from the shape
    layer_matrices = 4096 * (32 + 2 * 8) * 128 + 32 * 128 * 4096 + 3 * 4096 * 14336
    rule = 2 * 32 * layer_matrices * t + 32 * 2 * 128 * 32 * t * (t + 1) + 2 * 4096 * 128256
    assert total_flops(ops, ("projection", "attention", "lm_head")).subs(v) == rule
    # everything else (norms, rope, adds, SiLU) is a small element-wise remainder
    whole = total_flops(ops).subs(v)
    assert 0 < whole - rule < 0.01 * rule
    # 2 × the layers' matrix parameters per token: 2·(8,030,261,248 − 2·128,256·4,096 embedding
    # and head − 266,240 norm gains) = 13,958,643,712
    assert total_flops(ops, ("projection",)).subs(v) == 13_958_643_712 * t


def test_lm_head_reads_only_the_last_position():
    ops = {op.name: op for op in prefill_operations()}
    head = ops["lm_head"]
    assert head.flops == 2 * B * D * V and not head.flops.has(T)


def test_moe_reads_only_the_experts_that_receive_a_token():
    ops = {op.name: op for op in prefill_operations(Architecture(moe=True))}
    up = ops["moe.up"].bytes
    v = {D: 4096, F: 14336, n_e: 8, n_a: 2, b_w: 2, b_a: 2, B: 1}
    one_token = up.subs({**v, T: 1})
    assert one_token == 2 * (2 * 4096 * 2 * 14336) + 2 * 1 * 2 * (4096 + 2 * 14336)
    many = up.subs({**v, T: 1000})
    assert many == 2 * (8 * 4096 * 2 * 14336) + 2 * 2000 * (4096 + 2 * 14336)
    assert up.has(Min(n_e, B * T * n_a))


def test_every_mode_has_the_same_projection_work():
    per_mode = {m: total_flops(prefill_operations(mode=m), ("projection",))
                for m in attention.MODES}
    assert len(set(per_mode.values())) == 1


def test_kv_cache_is_128_kib_per_token_for_llama3_8b_in_bf16():
    per_token = decode.kv_cache_bytes().subs({**LLAMA3_8B, B: 1, T: 1, b_kv: 2})
    assert per_token == 2 * 32 * 8 * 128 * 2 == 128 * 1024


def test_decode_intensity_is_about_one_flop_per_byte_at_batch_one():
    ops = decode.decode_operations()
    v = {**LLAMA3_8B, B: 1, b_w: 2, b_a: 2, b_kv: 2, T_ctx: 1024}
    i = total_flops(ops).subs(v) / total_bytes(ops).subs(v)
    # 2 FLOPs per 2-byte weight; GQA attention (4 FLOPs per query head per cached key,
    # 4 bytes per cached key and value head) lifts it a little above 1
    assert 1.0 < float(i) < 1.1
