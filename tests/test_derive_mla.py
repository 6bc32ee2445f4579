"""Multi-head latent attention (roofline.derive.mla): the latent cache of DeepSeek-V2 and V3,
prefill attention as ordinary attention with the heads substituted (held against exact counts
and loops over FlashAttention's blocks), the two decode forms against loops that compute the
attention and count every multiply-add from the matrix shapes, and the crossover where
absorption pays off."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy import Integer, Rational, ceiling

from roofline.derive import attention, mla
from roofline.derive.architecture import ATTENTION_MODES, Architecture
from roofline.derive.decode import decode_operations, model_kv_cache_bytes
from roofline.derive.transformer import prefill_operations
from roofline.symbols import (B, D, H, H_r, L, M_sram, T, T_ctx, b_a, b_kv, b_w, d_c, d_cq,
                              n_kv, n_q)

V2 = Architecture(mla=True, q_lora=True)


# --- the cache ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["DeepSeek-V2-Lite", "DeepSeek-V3"])
def test_cache_is_576_elements_per_token_per_layer(name: str) -> None:
    """DeepSeek-V2 §2.1.4: (d_c + d_h^R) per token and layer; kv_lora_rank 512 + rope 64."""
    from roofline.specs.model import load_model

    values = {H_r: 64, d_c: 512}
    assert mla.cache_elements().subs(values) == 576
    m = load_model(name)
    sym = {s: m.values()[s.name] for s in (d_c, H_r, L)}
    assert mla.cache_elements().subs(sym) == 576
    # the model's KV cache: 576 elements per token per layer, B = 1, T = 1000, 2 bytes each
    per = model_kv_cache_bytes(m.architecture).subs({**sym, B: 1, T: 1000, b_kv: 2})
    assert per == 576 * m.num_layers * 1000 * 2


def test_deepseek_v2_cache_and_the_gqa_it_equals() -> None:
    """DeepSeek-V2 (236B, HF config in the fixtures): 576 elements; Table 1: equal to GQA
    with 2.25 groups; 576 / (2·128·128) = 1.76 % of MHA's cache."""
    from pathlib import Path

    from roofline.specs.model import read_model

    m = read_model(Path(__file__).parent / "fixtures" / "models" / "deepseek-v2.json")
    assert (m.kv_lora_rank, m.rope_head_dim, m.q_lora_rank) == (512, 64, 1536)
    v = {d_c: 512, H_r: 64, H: 128}
    assert mla.gqa_groups().subs(v) == Rational(9, 4)
    assert mla.cache_elements().subs(v) / (2 * 128 * 128) == Rational(9, 512)


# --- prefill: ordinary attention with the heads substituted -----------------------------------
def _visits_fa1(t: int, b_c: int) -> int:
    """FlashAttention Algorithm 1, causal: for each key block, the query rows at or below it."""
    return sum(sum(1 for i in range(t) if i >= start) for start in range(0, t, b_c))


def _keys_fa2(t: int, b_r: int) -> int:
    """FlashAttention-2 order, causal: each row block reads the keys up to its last row."""
    return sum(min(start + b_r, t) for start in range(0, t, b_r))


def _values(t: int, m_sram: int) -> dict:
    return {T: t, B: 2, n_q: 3, n_kv: 1, H: 4, H_r: 2, b_a: 1, M_sram: m_sram}


@pytest.mark.parametrize("t", [1, 2, 5, 9, 16, 23])
@pytest.mark.parametrize("m_sram", [20, 40, 100, 1000])
def test_prefill_attention_against_exact_counts(t: int, m_sram: int) -> None:
    """Keys and queries of H + H_r = 6, values and outputs of H = 4, every head its own K, V.

    Block sizes: the SRAM holds tiles of Q, K (6 a row) and V, O (4 a row): B_c = ⌈M/20⌉,
    B_r = min(B_c, H + H_r/2). Exact in every mode but FlashAttention's Algorithm 1, which
    counts H_r/2 too many elements for each of O's T initial rows and each visit."""
    v = _values(t, m_sram)
    heads, hq, hv = 2 * 3, 6, 4  # B·n_q; key/query and value/output dimensions
    b_c = math.ceil(m_sram / (2 * hq + 2 * hv))
    b_r = min(b_c, 5)
    pairs = t * (t + 1) // 2
    exact = {
        "naive": heads * (2 * t * hq + 2 * t * hv + 4 * t * t),
        "ideal": heads * (t * hq + t * hv + t * hq + t * hv),
        "tiled_fa2": heads * (t * hq + t * hv + t + (hq + hv) * _keys_fa2(t, b_r)),
        "kernel": heads * (t * hq + t * hv + t + (hq + hv) * _keys_fa2(t, 128)),  # B_r = 128
        "tiled": heads * (t * (hq + hv) + t * hv + 2 * t + _visits_fa1(t, b_c) * (hq + 2 * hv + 4)),
    }
    over = {"tiled": heads * Rational(2, 2) * (t + _visits_fa1(t, b_c))}  # H_r/2 = 1
    for mode in ATTENTION_MODES:
        op = mla.attention_operations(V2, mode)
        flops = heads * (2 * (t * t if mode == "naive" else pairs) * (hq + hv))
        assert op.flops.subs(v) == flops, mode
        assert op.bytes.subs(v) == exact[mode] + over.get(mode, 0), mode
    b_c_form, b_r_form = (x.xreplace(mla.head_substitution()) for x in attention.block_sizes())
    assert (b_c_form.subs(v), b_r_form.subs(v)) == (b_c, b_r)


def test_prefill_is_the_transformer_attention_substituted() -> None:
    """Every mode, smooth or not: the MLA prefill's attention operation is exactly
    transformer.attention_operations of the plain architecture with H → H + H_r/2, n_kv → n_q:
    a mode added to attention.py later holds for MLA without a change."""
    from roofline.derive.transformer import attention_operations

    sub = {H: H + H_r / 2, n_kv: n_q}
    for mode in ATTENTION_MODES:
        for smooth in (False, True):
            plain = attention_operations(Architecture(), mode, smooth)
            ours = attention_operations(V2, mode, smooth)
            assert ours.flops == plain.flops.xreplace(sub)
            assert ours.bytes == plain.bytes.xreplace(sub)
    names = [op.name for op in prefill_operations(V2, "tiled")]
    assert names[:9] == ["attn_norm", "mla.q_down", "mla.q_norm", "mla.q_up", "mla.kv_down",
                         "mla.kv_norm", "rope", "mla.kv_up", "attention.tiled"]
    assert "qkv_proj" not in names


def test_projections_by_hand() -> None:
    """One layer of DeepSeek-V3 at T rows: the latent projections' FLOPs are 2·T·(D·d_cq +
    d_cq·n_q·(H + H_r) + D·(d_c + H_r) + d_c·2·n_q·H), and the parameters those matrices, the
    two latent norms and W^O (DeepSeek-V3: 187,107,328 per layer)."""
    v3 = {D: 7168, d_cq: 1536, d_c: 512, H: 128, H_r: 64, n_q: 128, T: 10, B: 1}
    ops = {op.name: op for op in prefill_operations(V2, "tiled")}
    flops = sum(ops[n].flops for n in ("mla.q_down", "mla.q_up", "mla.kv_down", "mla.kv_up"))
    assert flops.subs(v3) == 2 * 10 * (7168 * 1536 + 1536 * 128 * 192 + 7168 * 576
                                       + 512 * 256 * 128)
    per_layer = (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256
                 + 128 * 128 * 7168)
    assert per_layer == 187_107_328
    assert mla.attention_parameters(V2).subs(v3) == per_layer
    # rotary encoding: each head's q^R and the one shared k^R
    assert ops["rope"].flops.subs(v3) == 3 * 10 * 129 * 64


def test_window_is_refused() -> None:
    with pytest.raises(ValueError, match="latent attention with a sliding window is not "
                                         "modelled"):
        prefill_operations(Architecture(mla=True, window="all"), "tiled")


# --- decode: two forms, counted against loops ------------------------------------------------
class Counter:
    """Multiply-adds of plain Python loops over the operands' shapes."""

    def __init__(self) -> None:
        self.macs = 0

    def dot(self, a: list[float], b: list[float]) -> float:
        assert len(a) == len(b)
        out = 0.0
        for x, y in zip(a, b):
            out += x * y
            self.macs += 1
        return out

    def matvec(self, m: list[list[float]], x: list[float]) -> list[float]:
        """m (rows × len(x)) · x."""
        return [self.dot(row, x) for row in m]

    def tmatvec(self, m: list[list[float]], x: list[float]) -> list[float]:
        """mᵀ · x, m of len(x) rows."""
        cols = len(m[0])
        return [self.dot([m[r][c] for r in range(len(m))], x) for c in range(cols)]


def _softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [x / sum(e) for x in e]


def _random(shape: tuple[int, ...], rng: random.Random):
    if len(shape) == 1:
        return [rng.uniform(-1, 1) for _ in range(shape[0])]
    return [_random(shape[1:], rng) for _ in range(shape[0])]


def _decode_by_loops(b: int, heads: int, h: int, h_r: int, rank: int, keys: int):
    """One layer's decode attention of both forms from the matrices' shapes: the cached latents
    c (keys × d_c) and rotary keys k^R (keys × H_r) of each sequence, each head's W^UK and
    W^UV (H × d_c), queries q^C (H) and q^R (H_r) per head. Returns (naive MACs, naive
    outputs, absorbed MACs, absorbed outputs); an output per sequence and head, of H."""
    rng = random.Random(12)
    w_uk, w_uv = _random((heads, h, rank), rng), _random((heads, h, rank), rng)
    cache, rope = _random((b, keys, rank), rng), _random((b, keys, h_r), rng)
    q_c, q_r = _random((b, heads, h), rng), _random((b, heads, h_r), rng)
    naive, absorbed = Counter(), Counter()
    out_naive, out_absorbed = [], []
    for s in range(b):
        for i in range(heads):
            # naive: expand every cached latent into this head's key and value
            k_c = [naive.matvec(w_uk[i], cache[s][t]) for t in range(keys)]
            v_c = [naive.matvec(w_uv[i], cache[s][t]) for t in range(keys)]
            scores = [naive.dot(q_c[s][i] + q_r[s][i], k_c[t] + rope[s][t])
                      for t in range(keys)]
            p = _softmax(scores)
            out_naive.append([naive.dot(p, [v_c[t][j] for t in range(keys)])
                              for j in range(h)])
            # absorbed: W^UK into the query, attention over the latent, W^UV after it
            q_latent = absorbed.tmatvec(w_uk[i], q_c[s][i])
            scores = [absorbed.dot(q_latent + q_r[s][i], cache[s][t] + rope[s][t])
                      for t in range(keys)]
            p = _softmax(scores)
            x = [absorbed.dot(p, [cache[s][t][c] for t in range(keys)]) for c in range(rank)]
            out_absorbed.append(absorbed.matvec(w_uv[i], x))
    return naive.macs, out_naive, absorbed.macs, out_absorbed


@pytest.mark.parametrize("b, heads, h, h_r, rank, context",
                         [(1, 1, 2, 1, 3, 0), (2, 3, 4, 2, 5, 6), (1, 2, 3, 2, 8, 11)])
def test_decode_forms_against_loops(b, heads, h, h_r, rank, context) -> None:
    """FLOPs = 2 × the loops' multiply-adds in each form; both give the same outputs, of the
    same shape (one of H per sequence and head)."""
    keys = context + 1
    macs_n, out_n, macs_a, out_a = _decode_by_loops(b, heads, h, h_r, rank, keys)
    assert len(out_n) == len(out_a) == b * heads
    assert all(len(o) == h for o in out_n + out_a)
    assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
               for o, p in zip(out_n, out_a) for x, y in zip(o, p))
    v = {B: b, n_q: heads, H: h, H_r: h_r, d_c: rank, T_ctx: context}
    for form, macs in (("naive", macs_n), ("absorbed", macs_a)):
        ops = mla.decode_step(form)
        assert sum(op.flops for op in ops).subs(v) == 2 * macs, form
    # and the closed forms of the FLOPs that the catalogue states
    assert mla.step_flops("naive", 1, T_ctx).subs(v) == 2 * macs_n
    assert mla.step_flops("absorbed", 1, T_ctx).subs(v) == 2 * macs_a


def test_decode_bytes_by_hand() -> None:
    """DeepSeek-V3's shape, bf16, B = 1, context 1,000: the absorbed form reads the latent cache
    once (576·1,001 elements) and W^UK, W^UV (2·128·128·512); the naive form writes and reads
    the expanded keys and values (128 heads × (128 + 64 + 128) a key) besides."""
    v = {B: 1, n_q: 128, H: 128, H_r: 64, d_c: 512, T_ctx: 1000, b_a: 2, b_kv: 2, b_w: 2}
    k = 1001
    absorbed = sum(op.bytes for op in mla.decode_step("absorbed")).subs(v)
    assert absorbed == 2 * (128 * 128 * 512 + 128 * (128 + 512)  # W^UK, q^C in, q̃ out
                            + 128 * (2 * 512 + 64) + 576 * k  # q̃, q^R in, latent out; cache
                            + 128 * 128 * 512 + 128 * (512 + 128))  # W^UV, latent in, out
    naive = sum(op.bytes for op in mla.decode_step("naive")).subs(v)
    assert naive == 2 * (512 * 256 * 128 + 576 * k + 128 * 320 * k  # expand
                         + 128 * 320 + 128 * 320 * k)  # q, o; expanded keys and values read


def test_decode_operations_of_each_form() -> None:
    for form, present, absent in (("absorbed", {"mla.q_absorb", "attention.decode.latent",
                                               "mla.out_absorb"}, {"mla.expand", "mla.kv_up"}),
                                  ("naive", {"mla.expand", "attention.decode"},
                                   {"mla.q_absorb", "mla.kv_up"})):
        ops = decode_operations(Architecture(mla=True, mla_decode=form))
        names = {op.name for op in ops}
        assert present <= names and not absent & names, form
        assert all(op.count == L for op in ops if op.kind == "attention")


# --- when absorption pays off ---------------------------------------------------------------
def test_absorption_crossover_closed_forms() -> None:
    """T_ctx* = (d_c − H)·T(T + 1)/(2(H·d_c − (d_c − H)·T)); at T = 1 under one token; the
    largest T for which it exists, H·d_c/(d_c − H), is the limit as T_ctx → ∞."""
    root = mla.absorb_crossover_context()
    hand = (d_c - H) * T * (T + 1) / (2 * (H * d_c - (d_c - H) * T))
    assert (root - hand).simplify() == 0
    v = {H: 128, d_c: 512}
    assert mla.absorb_query_limit().subs(v) == Rational(512, 3)  # 170.67 tokens
    assert mla.absorb_crossover_context(Integer(1)).subs(v) == Rational(384, 65152)


@settings(max_examples=60, deadline=None)
@given(queries=st.integers(1, 170), h=st.sampled_from([64, 128]),
       rank=st.sampled_from([256, 512]), h_r=st.sampled_from([32, 64]),
       heads=st.integers(1, 128), batch=st.integers(1, 8))
def test_absorption_crossover_satisfies_its_equality(queries, h, rank, h_r, heads, batch):
    """At T_ctx*, naive and absorbed FLOPs are equal; one token less (more) of context, the
    naive form needs fewer (more), while the crossover exists (T < H·d_c/(d_c − H))."""
    v = {T: queries, H: h, d_c: rank, H_r: h_r, n_q: heads, B: batch}
    if queries >= Rational(h * rank, rank - h):
        return
    root = mla.absorb_crossover_context().subs(v)
    diff = (mla.step_flops("naive") - mla.step_flops("absorbed")).subs(v)
    assert diff.subs(T_ctx, root) == 0
    assert diff.subs(T_ctx, root + 1) > 0 > diff.subs(T_ctx, max(root - 1, -1))


def test_time_crossover_in_its_main_branch() -> None:
    """Both forms memory-bound: the expanded keys and values written and read, 2·n_q·(2H + H_r)
    activations a key, against the absorbed form's fixed extra traffic, n_q·(4·d_c + 2H + H_r):
    T_ctx* = (2·d_c − 2H − H_r)/(2H + H_r), 2.2 tokens for DeepSeek's shapes."""
    from roofline.derive.crossovers import crossovers

    c = crossovers(Architecture(mla=True))["mla_absorption_pays_off_context"]
    assert c.unknown == T_ctx
    assert (c.closed_form() - (2 * d_c - 2 * H - H_r) / (2 * H + H_r)).simplify() == 0
    assert c.closed_form().subs({d_c: 512, H: 128, H_r: 64}) == Rational(11, 5)
    assert "mla_absorption_pays_off_context" not in crossovers(Architecture())


def test_long_context_intensities() -> None:
    """As the context grows, absorbed decode attention tends to 2·n_q·(2·d_c + H_r)/((d_c +
    H_r)·b_kv): 241.8 FLOP/byte for V3's 128 heads in bf16, near H100's ridge."""
    entries = {e.name: e for e in mla.entries()}
    limit = entries["mla.decode.absorbed.intensity.long_context"].expr
    v = {n_q: 128, d_c: 512, H_r: 64, b_kv: 2, H: 128, b_a: 2}
    assert limit.subs(v) == Rational(2 * 128 * 1088, 576 * 2)
    naive = entries["mla.decode.naive.intensity.long_context"].expr.subs(v)
    assert naive == Rational(2 * 128 * (2 * 128 * 512 + 2 * 128 + 64),
                             2 * 128 * (2 * 128 + 64) * 2 + 576 * 2)
    assert ceiling(limit.subs(v)) == 242


# --- every crossover of a DeepSeek-like architecture, at its defining equality --------------
DEEPSEEK = Architecture(mla=True, q_lora=True, moe=True, shared_experts=True, moe_layers="some")
V3_SHAPE = {D: 7168, L: 61, n_q: 128, n_kv: 128, H: 128, H_r: 64, d_c: 512, d_cq: 1536}


@settings(max_examples=25, deadline=None)
@given(st.floats(1e13, 5e15), st.floats(2e11, 1e13), st.floats(2**14, 2**20),
       st.sampled_from([1, 2]), st.integers(1, 64), st.data())
def test_every_closed_form_satisfies_its_equality(closed_form_holds, peak, bw, sram, nbytes,
                                                 batch, data):
    """As tests/test_derive_crossovers.py for the Llama shape: each crossover's main-branch
    closed form is a root of its branch's equation, for DeepSeek-V3's shape (MLA, shared
    experts, dense first layers) and random devices."""
    from roofline.derive.crossovers import crossovers
    from roofline.symbols import (C_mem, F, F_dense, F_sh, G_node, L_moe, M_node, N_cp, N_ep,
                                  N_pp, N_tp, P_peak, V, alpha_link, alpha_net, beta_hbm, beta_link,
                                  beta_net, n_a, n_e, n_kern, n_sh, t_host, t_launch)

    cs = crossovers(DEEPSEEK)
    c = cs[data.draw(st.sampled_from(sorted(cs)))]
    v = {**V3_SHAPE, F: 2048, F_sh: 2048, n_sh: 1, F_dense: 18432, L_moe: 58, n_e: 256, n_a: 8,
         V: 129280, P_peak: peak, beta_hbm: bw, M_sram: sram, b_w: nbytes, b_a: nbytes,
         b_kv: nbytes, C_mem: 1e13, N_tp: 8, N_ep: 8, N_cp: 2, beta_link: 4.5e11,
         alpha_link: 5e-7, G_node: 2, M_node: 4, beta_net: 5e10, alpha_net: 2.7e-6, N_pp: 2,
         t_launch: 4e-6, t_host: 2e-3, n_kern: 900}
    closed_form_holds(c, v, batch)
