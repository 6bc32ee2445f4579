"""Gated DeltaNet (roofline.derive.linear_attention) against loops that walk Hugging Face's
reference ``torch_chunk_gated_delta_rule`` and ``torch_recurrent_gated_delta_rule``
(models/qwen3_next/modeling_qwen3_next.py) shape by shape, counting the multiply-adds of every
matmul; Qwen3-Next-80B-A3B's state and parameters by hand; linear growth in T."""

from __future__ import annotations

from math import prod

import pytest
from sympy import Float, Symbol, limit, oo

from roofline.derive import attention, linear_attention as la
from roofline.derive.layers import total_bytes, total_flops
from roofline.symbols import (B, C_lin, D, H, H_lk, H_lv, K_conv, T, b_a, b_kv, b_w, n_kv,
                              n_lk, n_lv, n_q)


class _Counter:
    """Multiply-adds of batched matmuls [..., m, k] @ [..., k, n], broadcast batch dims."""

    def __init__(self) -> None:
        self.macs = 0

    def mm(self, a: tuple, b: tuple) -> tuple:
        assert a[-1] == b[-2], (a, b)
        batch = a[:-2] if len(a) >= len(b) else b[:-2]
        self.macs += prod(batch) * a[-2] * a[-1] * b[-1]
        return (*batch, a[-2], b[-1])


def _reference_chunk_macs(b: int, nk: int, nv: int, dk: int, dv: int, t: int, c: int,
                          solve: str = "reference") -> int:
    """Walk ``torch_chunk_gated_delta_rule`` after the layer's repeat_interleave (q, k on nv
    heads): shapes after padding to a multiple of the chunk, then each matmul in order."""
    assert nv % nk == 0
    heads = nv  # query/key repeated nv // nk times to the value heads
    pad = (c - t % c) % c
    n = (t + pad) // c
    cnt = _Counter()
    query, key = (b, heads, n, c, dk), (b, heads, n, c, dk)
    k_beta, v_beta = (b, heads, n, c, dk), (b, heads, n, c, dv)
    key_t = (b, heads, n, dk, c)
    attn = cnt.mm(k_beta, key_t)  # -(k_beta @ key^T) * decay_mask
    assert attn == (b, heads, n, c, c)
    for i in range(1, c):  # attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
        if solve == "reference":
            cnt.macs += b * heads * n * i * i  # (i, 1) * (i, i) products, summed over i
        else:  # forward substitution: row[j]·sub[j, m] only where sub[j, m] can be nonzero
            cnt.macs += b * heads * n * sum(1 for j in range(i) for m in range(i) if m < j)
    value = cnt.mm(attn, v_beta)  # attn @ v_beta
    k_cumdecay = cnt.mm(attn, k_beta)  # attn @ (k_beta * g.exp())
    state = (b, heads, dk, dv)
    for _ in range(n):  # for each chunk
        q_i, k_i, v_i = query[:2] + query[3:], key[:2] + key[3:], value[:2] + value[3:]
        a_i = cnt.mm(q_i, (b, heads, dk, c))  # q_i @ k_i^T
        v_prime = cnt.mm(k_cumdecay[:2] + k_cumdecay[3:], state)  # k_cumdecay @ S
        assert v_prime == v_i
        inter = cnt.mm(q_i, state)  # (q_i * g.exp()) @ S
        intra = cnt.mm(a_i, v_i)  # attn @ v_new
        assert inter == intra
        state = cnt.mm((b, heads, dk, c), v_i)  # (k_i * decay)^T @ v_new
        assert k_i[-1] == state[-2]
    return cnt.macs


def _reference_recurrent_macs(b: int, nk: int, nv: int, dk: int, dv: int, t: int) -> int:
    """Walk ``torch_recurrent_gated_delta_rule``: per token, kv_mem = (S * k).sum(-2),
    S + k ⊗ delta, out = (S * q).sum(-2); the decay S * g is element-wise (not counted)."""
    heads, macs = nv, 0
    for _ in range(t):
        macs += b * heads * dk * dv  # kv_mem: a [dk] · [dk, dv] product
        macs += b * heads * dk * dv  # k.unsqueeze(-1) * delta.unsqueeze(-2), added to S
        macs += b * heads * dk * dv  # (S * q.unsqueeze(-1)).sum(-2)
    return macs


SIZES = [  # (B, n_lk, n_lv, H_lk, H_lv, T, C_lin)
    (1, 1, 1, 2, 3, 4, 4), (1, 1, 1, 3, 2, 5, 4), (2, 1, 2, 2, 2, 7, 3), (1, 2, 4, 3, 5, 9, 4),
    (3, 1, 3, 4, 2, 1, 5), (1, 2, 6, 2, 3, 13, 8), (2, 3, 3, 5, 4, 16, 16), (1, 1, 4, 3, 3, 17, 2),
]


def _v(s: tuple) -> dict:
    return dict(zip((B, n_lk, n_lv, H_lk, H_lv, T, C_lin), s))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("solve", la.SOLVES)
def test_chunkwise_flops_walk_the_reference(size: tuple, solve: str) -> None:
    assert la.chunkwise_flops(solve).subs(_v(size)) == 2 * _reference_chunk_macs(*size, solve)


@pytest.mark.parametrize("size", SIZES)
def test_recurrent_flops_walk_the_token_loop(size: tuple) -> None:
    b, nk, nv, dk, dv, t, _ = size
    assert la.recurrent_flops().subs(_v(size)) == 2 * _reference_recurrent_macs(b, nk, nv, dk,
                                                                              dv, t)
    step = la.decode_step()
    assert step.kind == "attention"
    assert step.flops.subs(_v(size)) == 2 * _reference_recurrent_macs(b, nk, nv, dk, dv, 1)


def test_ragged_tail_costs_a_whole_chunk() -> None:
    """T = 65 at C_lin = 64: two chunks, as the reference pads to 128 rows."""
    v = {B: 1, n_lk: 1, n_lv: 1, H_lk: 8, H_lv: 8, C_lin: 64}
    assert la.chunkwise_flops().subs({**v, T: 65}) == 2 * la.chunkwise_flops().subs({**v, T: 64})
    assert la.chunkwise_flops().subs({**v, T: 128}) == la.chunkwise_flops().subs({**v, T: 65})


QWEN3_NEXT = {D: 2048, n_lk: 16, n_lv: 32, H_lk: 128, H_lv: 128, K_conv: 4, C_lin: 64}


def test_qwen3_next_state_by_hand() -> None:
    """Qwen3-Next-80B-A3B's config: 16 key heads, 32 value heads of 128, conv kernel 4."""
    recurrent = 32 * 128 * 128
    conv = 3 * (2 * 16 * 128 + 32 * 128)
    assert (recurrent, conv) == (524_288, 24_576)
    assert la.state_elements().subs(QWEN3_NEXT) == recurrent + conv
    assert la.conv_channels().subs(QWEN3_NEXT) == 8192


def test_qwen3_next_parameters_by_hand() -> None:
    """Qwen3NextGatedDeltaNet's parameter shapes at hidden_size 2048."""
    shapes = {
        "in_proj_qkvz.weight": (2 * 16 * 128 + 2 * 32 * 128, 2048),
        "in_proj_ba.weight": (2 * 32, 2048),
        "conv1d.weight": (2 * 16 * 128 + 32 * 128, 1, 4),
        "dt_bias": (32,),
        "A_log": (32,),
        "norm.weight": (128,),
        "out_proj.weight": (2048, 32 * 128),
    }
    total = sum(prod(s) for s in shapes.values())
    assert total == 33_718_464
    assert la.layer_parameters().subs(QWEN3_NEXT) == total


def test_chunkwise_flops_grow_linearly() -> None:
    """Doubling T doubles the FLOPs (attention's quadruple): exactly at whole chunks
    (T = m·C_lin), and in the limit for any T."""
    m = Symbol("m", positive=True, integer=True)  # whole chunks
    whole = la.chunkwise_flops().subs(T, m * C_lin)
    doubled = la.chunkwise_flops().subs(T, 2 * m * C_lin)
    assert (doubled / whole).simplify() == 2
    at = {**QWEN3_NEXT, B: 1}
    f = la.chunkwise_flops().subs(at)
    for t in (10**6 + 1, 10**7 + 33):
        ratio = f.subs(T, 2 * t) / f.subs(T, t)
        assert abs(ratio - 2) < Float("1e-4")
    smooth = la.chunkwise_flops().subs(at).replace(lambda e: e.func.__name__ == "ceiling",
                                                    lambda e: e.args[0])
    assert limit(smooth.subs(T, 2 * T) / smooth, T, oo) == 2
    assert limit(attention.flops().subs(T, 2 * T) / attention.flops(), T, oo) == 4


def test_recurrent_and_chunkwise_orders() -> None:
    """At Qwen3-Next's shape, the chunked form does more matmul work than the recurrence (its
    C²·d intra-chunk terms) but less than 2× at C_lin = 64; both linear in T."""
    at = {**QWEN3_NEXT, B: 1, T: 64 * 100}
    ratio = la.chunkwise_flops().subs(at) / la.recurrent_flops().subs(at)
    assert 1 < ratio < 2


def test_projection_operations_by_hand() -> None:
    rows = B * T
    ops = la.projection_operations(rows)
    assert [op.name for op in ops] == [
        "linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.conv",
        "linear_attn.gates", "linear_attn.norm", "linear_attn.out_proj"]
    assert [op.kind for op in ops] == ["projection", "projection"] + ["elementwise"] * 3 + [
        "projection"]
    v = {**QWEN3_NEXT, B: 2, T: 10, b_a: 2, b_w: 1}
    f = {op.name: op.flops.subs(v) for op in ops}
    q = {op.name: op.bytes.subs(v) for op in ops}
    assert f["linear_attn.in_proj_qkvz"] == 2 * 20 * 2048 * 12288
    assert f["linear_attn.in_proj_ba"] == 2 * 20 * 2048 * 64
    assert f["linear_attn.conv"] == 20 * 8192 * (2 * 4 + 4)
    assert q["linear_attn.conv"] == 2 * 2 * 20 * 8192 + 8192 * 4
    assert f["linear_attn.norm"] == 20 * 4096 * 9
    assert q["linear_attn.norm"] == 2 * 3 * 20 * 4096 + 128
    assert f["linear_attn.out_proj"] == 2 * 20 * 4096 * 2048
    assert q["linear_attn.out_proj"] == 4096 * 2048 + 2 * 20 * (4096 + 2048)
    # weights read once: the projections' and conv's weights, the gates' and norm's vectors
    weights = sum(op.bytes.subs(v) for op in ops) - sum(
        op.bytes.subs({**v, b_w: 0}) for op in ops)
    assert weights == la.layer_parameters().subs(v)


def test_prefill_operations_put_the_recurrence_after_the_gates() -> None:
    ops = la.prefill_operations()
    assert [op.kind for op in ops].count("attention") == 1
    assert ops[4].name == "linear_attn.chunk.kernel"
    # the bound: the reference's padded count with T/C_lin chunks, equal at multiples of C_lin
    bound = total_flops(ops, ("attention",))
    for t in (64, 128, 4096):
        at = {**QWEN3_NEXT, B: 1, T: t}
        assert bound.subs(at) == la.chunkwise_flops().subs(at)
    at = {**QWEN3_NEXT, B: 1, T: 100}
    assert bound.subs(at) < la.chunkwise_flops().subs(at)
    ideal = total_bytes(la.prefill_operations("ideal"), ("attention",))
    assert ideal == la.ideal_bytes()


def test_chunkwise_bytes_by_hand() -> None:
    """The kernels' traffic summed by hand: per value head 11·T·H_lk + 6·T·H_lv + 10·T
    + 2·T·C_lin + 2·N·H_lk·H_lv at b_a (N chunks), and the final state at b_kv."""
    for t in (1, 63, 64, 65, 1000):
        v = {**QWEN3_NEXT, B: 3, T: t, b_a: 2, b_kv: 4}
        chunks = (t + 63) // 64
        acts = t * (11 * 128 + 6 * 128 + 10 + 2 * 64) + 2 * chunks * 128 * 128
        assert la.chunkwise_bytes().subs(v) == 3 * 32 * (2 * acts + 4 * 128 * 128), t
        assert la.ideal_bytes().subs(v) == 3 * t * 2 * (2 * 16 * 128 + 2 * 32 * 128 + 64) + (
            3 * 32 * 128 * 128 * 4)
        assert la.chunkwise_bytes().subs(v) > la.ideal_bytes().subs(v)


def test_decode_step_reads_and_writes_the_state() -> None:
    v = {**QWEN3_NEXT, B: 4, b_a: 2, b_kv: 4}
    step = la.decode_step()
    assert step.bytes.subs(v) == 4 * 32 * (2 * 128 + 2 * 128 + 2) * 2 + 2 * 4 * 32 * 128**2 * 4


def test_solves_and_bad_names() -> None:
    c = 64
    assert la.solve_macs().subs(C_lin, c) == sum(i * i for i in range(1, c))
    assert la.solve_macs("substitution").subs(C_lin, c) == sum(
        i * (i - 1) // 2 for i in range(c))
    with pytest.raises(ValueError):
        la.solve_macs("cholesky")


def test_entries_are_exact_and_named() -> None:
    entries = la.entries()
    names = [e.name for e in entries]
    assert len(set(names)) == len(names)
    assert all(n.startswith("linear_attention.") for n in names)
    for kind in ("flops.chunkwise", "flops.recurrent", "bytes.chunkwise", "bytes.ideal",
                 "state.elements", "parameters", "intensity.chunkwise"):
        assert f"linear_attention.{kind}" in names
    for e in entries:
        assert e.source and e.assumptions, e.name
        assert not e.expr.atoms(Float), e.name
        assert e.as_dict()["expr"]
    # the attention symbols of softmax layers play no part here
    assert not {H, n_q, n_kv} & set().union(*(e.expr.free_symbols for e in entries))
