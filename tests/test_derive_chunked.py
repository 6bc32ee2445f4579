"""Chunked local attention (Llama 4): the pair count against a loop over the mask, every form
equal to the causal layer's within one chunk, each chunk a causal prompt of its own beyond it,
the decode keys and the written (floor) forms against the code's (ceiling) ones."""

from __future__ import annotations

import pytest
from sympy import expand

from roofline.derive import attention, chunked, levels
from roofline.derive.architecture import Architecture
from roofline.derive.decode import decode_operations
from roofline.derive.transformer import prefill_operations
from roofline.symbols import (B, C_att, H, M_l2, M_sram, N_sm, T, T_ctx, b_a, b_kv, n_kv,
                              n_q)

NUMBERS = {B: 2, n_q: 8, n_kv: 2, H: 64, b_a: 2, b_kv: 2, M_sram: 228 * 1024, N_sm: 132,
           M_l2: 50 * 10**6}


def _mask_pairs(t: int, c: int) -> int:
    return sum(1 for i in range(t) for j in range(i + 1) if j // c == i // c)


@pytest.mark.parametrize("t, c", [(1, 4), (3, 4), (4, 4), (5, 4), (10, 4), (64, 16), (67, 16)])
def test_pairs_against_the_mask(t: int, c: int) -> None:
    assert chunked.pairs().subs({T: t, C_att: c}) == _mask_pairs(t, c)
    entry = next(e for e in chunked.entries() if e.name == "chunked.pairs")
    assert entry.expr.subs({T: t, C_att: c}) == _mask_pairs(t, c)  # the floor form too


@pytest.mark.parametrize("mode", ["naive", "tiled", "tiled_fa2", "kernel", "ideal"])
def test_one_chunk_is_the_causal_layer_and_more_are_each_their_own(mode: str) -> None:
    """At T ≤ C_att every form is the causal layer's; beyond, whole chunks of C_att and the
    remainder, each evaluated as a causal prompt of its own (behind an L2 too)."""
    hbm, served = levels.level_bytes(mode, ("l2",))
    c_hbm, c_served = chunked.level_bytes(mode, ("l2",))
    pairs = [(attention.mode_flops(mode), chunked.flops(mode)), (hbm, c_hbm)]
    pairs += [(served[k], c_served[k]) for k in served]
    c = 2048
    for causal, local in pairs:
        def at(expr, t):  # noqa: E306
            return expr.subs({**NUMBERS, C_att: c, T: t})
        for t in (1, 100, 2047, 2048):
            assert at(local, t) == at(causal, t), (mode, t)
        for t in (2049, 4096, 10_000):
            whole, rest = divmod(t, c)
            expected = whole * at(causal, c) + (at(causal, rest) if rest else 0)
            assert at(local, t) == expected, (mode, t)


def test_decode_keys_and_cache() -> None:
    for ctx in (0, 5, 4095, 4096, 10_000):
        assert chunked.decode_keys().subs({T_ctx: ctx, C_att: 4096}) == ctx % 4096 + 1
    arch = Architecture(window="all", window_kind="chunked")
    for t in (100, 4096, 10_000):
        assert chunked.cached_tokens(arch).subs({T: t, C_att: 4096}) == t % 4096
    full = Architecture(window="all", window_kind="chunked", kv_cache="full")
    assert chunked.cached_tokens(full) == T
    step = [o for o in decode_operations(arch) if o.kind == "attention"]
    assert [o.name for o in step] == ["attention.decode.chunked"]


def test_llama4_layers_split_global_and_chunked() -> None:
    arch = Architecture(window="some", window_kind="chunked", local_rope=True, qk_l2_norm=True)
    counts = {o.name: o.count for o in prefill_operations(arch, "kernel")}
    from roofline.symbols import L, L_w

    assert counts["attention.kernel"] == L - L_w
    assert counts["attention.kernel.chunked"] == L_w
    assert counts["rope"] == counts["qk_l2_norm"] == L_w  # NoPE on the global layers
    op = next(o for o in prefill_operations(arch, "kernel") if o.name == "qk_l2_norm")
    elements = B * T * (n_q + n_kv) * H
    assert expand(op.flops - 3 * elements) == 0 and expand(op.bytes - 2 * b_a * elements) == 0


def test_written_forms_equal_the_code() -> None:
    values = {**NUMBERS, C_att: 1000}
    for entry in chunked.entries():
        for name, code in entry.steps:
            for t in (1, 999, 1000, 1001, 12_345):
                where = {**values, T: t, T_ctx: t}
                assert entry.expr.subs(where) == code.subs(where), (entry.name, t)
