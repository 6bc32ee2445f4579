"""Multi-head latent attention (MLA) of DeepSeek-V2 and DeepSeek-V3: the low-rank projections,
the latent KV cache, prefill with per-head keys and values materialised from the latent, and a
decode step in the naive and the weight-absorbed forms, with the context at which absorption
pays off.

Per token and layer (DeepSeek-V2, DeepSeek-AI 2024, arXiv 2405.04434, §2.1.2–2.1.3 and the full
formulas of Appendix C; DeepSeek-V3, arXiv 2412.19437, §2.1.1, the same attention):

- queries: c^Q = W^DQ h (D → d_cq, ``q_lora_rank``), normed, then W^UQ c^Q (d_cq → n_q·H) and the
  rotary part W^QR c^Q (d_cq → n_q·H_r), one product d_cq → n_q·(H + H_r); without a query
  latent (``q_lora_rank`` null: DeepSeek-V2-Lite) W^Q h directly (D → n_q·(H + H_r));
- keys and values: the latent c^KV = W^DKV h (D → d_c, ``kv_lora_rank``) and the decoupled rotary
  key k^R = RoPE(W^KR h) (D → H_r, one key shared by every head), one product D → d_c + H_r;
  c^KV is normed; per head k^C = W^UK c^KV and v^C = W^UV c^KV (d_c → n_q·H each);
- attention per head over keys [k^C; k^R] of H + H_r and values v^C of H; output W^O
  (n_q·H → D).

H is both ``qk_nope_head_dim`` and ``v_head_dim`` (128 in every DeepSeek-V2 and V3 model; a config
where they differ is refused by :mod:`roofline.specs.model`). The layer names are those of HF's
``modeling_deepseek.py`` (``q_a_proj``, ``q_a_layernorm``, ``q_b_proj``, ``kv_a_proj_with_mqa``,
``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``).

The cache holds c^KV and k^R: d_c + H_r elements per token per layer (§2.1.4, Table 1), 576 for
V2 and V3. Prefill materialises per-head keys and values from the latent (``kv_b_proj`` over every
prompt token) and runs ordinary attention over them: its operations are those of
:func:`roofline.derive.transformer.attention_operations` with the head dimension and counts
substituted (:func:`head_substitution`), so every attention mode, present or added later, holds
for MLA as it is. A decode step either re-expands every cached latent into per-head keys and
values (``naive``) or absorbs W^UK into the query and W^UV into the output and attends over the
latent itself (``absorbed``: "W^UK can be absorbed into W^Q, and W^UV can be absorbed into W^O",
§2.1.2), as DeepSeek-V3's reference code does (github.com/deepseek-ai/DeepSeek-V3,
``inference/model.py``, class ``MLA``, ``attn_impl = "absorb"``: the query is multiplied by each
head's block of ``wkv_b`` before the scores, the latent output by the other block after them;
its ``"naive"`` form caches the expanded keys and values instead, which this module's naive
form does not: here the cache stays latent and is expanded at every step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sympy import Expr, Integer, cancel, factor, limit, oo, solve

from ..symbols import B, D, H, H_r, L, T, T_ctx, b_a, b_kv, b_w, d_c, d_cq, n_kv, n_q
from . import attention, projection
from .architecture import Architecture
from .entry import Entry
from .layers import (ROPE_FLOPS, Operation, attention_step, elementwise_op, norm_op,
                     projection_op, put_in)
from .layers import attention_operations as plain_attention

__all__ = ["SOURCE", "head_substitution", "projections", "attention_operations",
           "attention_parameters", "cache_elements", "kv_cache_bytes", "gqa_groups",
           "decode_step", "step_flops", "absorb_crossover_context",
           "absorb_query_limit", "entries"]

V2 = "DeepSeek-V2 (arXiv 2405.04434)"
SOURCE = (f"{V2} §2.1.2–2.1.4, Table 1 and Appendix C (multi-head "
          "latent attention: low-rank key-value compression, decoupled rotary key, KV cache "
          "(d_c + d_h^R)·l per token); DeepSeek-V3 (arXiv 2412.19437) §2.1.1")
REFERENCE = ("DeepSeek-V3 reference code, github.com/deepseek-ai/DeepSeek-V3 inference/model.py, "
             "class MLA (attn_impl 'absorb': W^UK into the query, W^UV into the output)")
_NOT_WINDOWED = ("multi-head latent attention with a sliding window is not modelled (no "
                 "published model has both)")


def head_substitution() -> dict[Expr, Expr]:
    """What turns ordinary attention into MLA's prefill attention: {H → H + H_r/2, n_kv → n_q}.

    Materialised from the latent, every head has its own key of H + H_r (k^C and the shared k^R)
    and its own value of H: multi-head attention (n_kv = n_q) with keys and queries of H + H_r
    and values and outputs of H. The attention functions take one head dimension; their mean,
    H + H_r/2, is exact wherever a formula counts queries or keys together with values or
    outputs: the FLOPs (2·(H + H_r) for QKᵀ plus 2·H for PV per pair = 4·(H + H_r/2)), the naive
    and ideal traffic (Q, K, V, O each moved once per row), FlashAttention-2's order (Q read and
    O written once per row, K and V together per key row) and the block sizes (the SRAM holds
    tiles of Q, K, V and O: 4·(H + H_r/2) elements a row). FlashAttention's Algorithm 1 reads
    Q_i and O_i and writes O_i at each visit, 3H + H_r elements, counted as 3H + 3H_r/2: H_r/2
    too many (7 % of that term at H = 128, H_r = 64), and O's initialisation T·H as
    T·(H + H_r/2) (``tests/test_derive_mla.py`` holds each mode against the exact count).

    >>> head_substitution()
    {H: H + H_r/2, n_kv: n_q}
    """
    return {H: H + H_r / 2, n_kv: n_q}


def _check(arch: Architecture) -> None:
    if arch.window != "none":
        raise ValueError(_NOT_WINDOWED)


def projections(arch: Architecture, rows: Expr) -> list:
    """MLA's operations before attention over ``rows`` token rows (they take the place of the
    QKV projection and the rotary encoding): the query latent (W^DQ, D → d_cq), its RMSNorm and
    up-projection (W^UQ and W^QR, d_cq → n_q·(H + H_r)), or W^Q directly (D → n_q·(H + H_r));
    the key-value latent with the rotary key (W^DKV and W^KR, D → d_c + H_r), the latent's
    RMSNorm, the rotary encoding of n_q + 1 parts of H_r (each head's q^R and the one k^R), and
    the keys and values of every head (W^UK and W^UV, d_c → 2·n_q·H), which prefill
    materialises (a decode step drops it: :func:`roofline.derive.decode.decode_operations`).

    >>> [op.name for op in projections(Architecture(mla=True, q_lora=True), T)]
    ['mla.q_down', 'mla.q_norm', 'mla.q_up', 'mla.kv_down', 'mla.kv_norm', 'rope', 'mla.kv_up']
    """
    _check(arch)
    queries = n_q * (H + H_r)
    if arch.q_lora:
        q = [projection_op("mla.q_down", rows, D, d_cq, False),
             _latent_norm(norm_op(arch, "mla.q_norm", rows), d_cq),
             projection_op("mla.q_up", rows, d_cq, queries, False)]
    else:
        q = [projection_op("mla.q_proj", rows, D, queries, False)]
    rotated = rows * (n_q + 1) * H_r
    return [*q,
            projection_op("mla.kv_down", rows, D, d_c + H_r, False),
            _latent_norm(norm_op(arch, "mla.kv_norm", rows), d_c),
            elementwise_op("rope", ROPE_FLOPS, rotated, rotated, rotated),
            projection_op("mla.kv_up", rows, d_c, 2 * n_q * H, False)]


def _latent_norm(op, width: Expr):
    """A norm of the model's kind over a latent of ``width`` instead of D."""
    return replace(op, flops=op.flops.xreplace({D: width}), bytes=op.bytes.xreplace({D: width}))


def attention_operations(arch: Architecture, mode: str, smooth: bool = False,
                         caches: Sequence[str] = ()):
    """The prefill's attention in ``mode`` behind the cache levels ``caches``:
    :func:`roofline.derive.layers.attention_operations` of the same architecture without
    MLA, with :func:`head_substitution` put in by ``xreplace`` (one operation, or a list when the
    architecture splits its layers). The bytes each memory level serves, and the working set of
    the thread blocks in flight (the materialised K and V of 2H + H_r elements a key per head),
    take the same substitution."""
    _check(arch)
    ops = plain_attention(replace(arch, mla=False), mode, smooth, caches)
    if isinstance(ops, list):
        return [_substituted(op) for op in ops]
    return _substituted(ops)


def _substituted(op):
    sub = head_substitution()
    return replace(op, flops=put_in(op.flops, sub), bytes=put_in(op.bytes, sub),
                   levels=tuple((level, put_in(q, sub)) for level, q in op.levels))


def attention_parameters(arch: Architecture) -> Expr:
    """Parameters of one layer's latent attention: W^DQ, the query latent's norm and W^UQ with
    W^QR (or W^Q alone), W^DKV with W^KR, the key-value latent's norm, W^UK with W^UV, and W^O;
    no biases (DeepSeek's ``attention_bias`` is false).

    >>> attention_parameters(Architecture(mla=True))
    D*H*n_q + D*n_q*(H + H_r) + D*(H_r + d_c) + 2*H*d_c*n_q + d_c
    """
    queries = n_q * (H + H_r)
    q = D * d_cq + d_cq + d_cq * queries if arch.q_lora else D * queries
    return q + D * (d_c + H_r) + d_c + d_c * 2 * n_q * H + n_q * H * D


# --- the latent KV cache -----------------------------------------------------------------------
def cache_elements() -> Expr:
    """Elements cached per token per layer: the latent c^KV and the shared rotary key k^R,
    d_c + H_r (DeepSeek-V2 §2.1.4, Table 1: (d_c + d_h^R)·l for l layers; 512 + 64 = 576 for V2
    and V3).

    >>> cache_elements().subs({H_r: 64, d_c: 512})
    576
    """
    return d_c + H_r


def kv_cache_bytes(tokens: Expr = T, layers: Expr = L) -> Expr:
    """The latent cache of B sequences of ``tokens`` positions: B·L·(d_c + H_r)·T·b_kv.

    >>> kv_cache_bytes()
    B*L*T*b_kv*(H_r + d_c)
    """
    return B * layers * cache_elements() * tokens * b_kv


def gqa_groups() -> Expr:
    """Key/value heads of the grouped-query attention whose cache has as many elements per
    token as MLA's: 2·n_g·H = d_c + H_r, n_g = (d_c + H_r)/(2H). DeepSeek-V2 §2.1.4: with
    d_c = 4·d_h and d_h^R = d_h/2 "its KV cache is equal to GQA with only 2.25 groups".

    >>> gqa_groups().subs({H: 128, H_r: 64, d_c: 512})
    9/4
    """
    return cache_elements() / (2 * H)


# --- decode ----------------------------------------------------------------------------------
def decode_step(form: str = "absorbed", keys: Expr = T_ctx + 1,
                layers: Expr = Integer(1)) -> list:
    """The operations of one layer's decode step that depend on the form, B sequences each
    attending to ``keys`` = T_ctx + 1 positions (the cache and the new token, as
    :func:`roofline.derive.layers.attention_step`); the operations of kind ``attention`` count
    ``layers`` layers (the others take the layer's count from ``layer_operations``):

    - ``naive``: ``mla.expand`` applies W^UK and W^UV to every cached latent (d_c → 2·n_q·H over
      B·keys rows, reading c^KV and k^R, b_kv each, writing per-head keys [k^C; k^R] of H + H_r
      and values of H, b_a each); then :func:`roofline.derive.layers.attention_step` over those
      keys and values with :func:`head_substitution` (and b_kv → b_a: they come from the
      expansion, not the cache). The expansion scales with the context: kind ``attention``.
    - ``absorbed``: ``mla.q_absorb`` maps each head's q^C into the latent (W^UKᵀ per head,
      H → d_c); the attention scores q̃·c^KV + q^R·k^R and the output P·c^KV run over the latent
      (d_c + H_r for the keys, d_c for the values, per head and key: 4·(d_c + H_r/2) FLOPs), the
      cache read once per sequence (every head shares c^KV and k^R, and c^KV is the keys and
      the values), queries and latent outputs once per head; ``mla.out_absorb`` maps each head's
      latent output back (W^UV per head, d_c → H) before W^O.
    """
    if form == "naive":
        rows = B * keys
        expand = Operation(
            "mla.expand", "attention", projection.flops(rows, d_c, 2 * n_q * H),
            b_w * d_c * 2 * n_q * H + b_kv * rows * cache_elements()
            + b_a * rows * n_q * (2 * H + H_r), layers)
        step = attention_step(keys, layers=layers)
        sub = {**head_substitution(), b_kv: b_a}
        return [expand, replace(step, flops=step.flops.xreplace(sub),
                                bytes=step.bytes.xreplace(sub))]
    if form != "absorbed":
        raise ValueError(f"unknown MLA decode form {form!r}; valid: absorbed, naive")
    heads = B * n_q  # one row per head and sequence: a block-diagonal product per head
    q_absorb = Operation("mla.q_absorb", "projection", projection.flops(heads, H, d_c),
                         projection.hbm_bytes(heads, H, d_c, matrices=n_q))
    latent = Operation(
        "attention.decode.latent", "attention",
        attention.flops(queries=1, keys=keys, causal=False).xreplace({H: d_c + H_r / 2}),
        b_a * B * n_q * (2 * d_c + H_r) + b_kv * B * keys * cache_elements(), layers)
    out_absorb = Operation("mla.out_absorb", "projection", projection.flops(heads, d_c, H),
                           projection.hbm_bytes(heads, d_c, H, matrices=n_q))
    return [q_absorb, latent, out_absorb]


def _step_totals(form: str) -> tuple[Expr, Expr]:
    """FLOPs and bytes of one layer's form-dependent decode operations (all B sequences)."""
    ops = decode_step(form)
    return (sum((op.flops for op in ops), Integer(0)), sum((op.bytes for op in ops), Integer(0)))


# --- when absorption pays off ---------------------------------------------------------------
def step_flops(form: str, queries: Expr = T, context: Expr = T_ctx) -> Expr:
    """FLOPs of the form-dependent work of one layer when ``queries`` new tokens of each of B
    sequences attend causally to ``context`` cached ones and to each other (a decode step at
    ``queries`` = 1; a chunk of a prompt, or draft tokens, otherwise):

    - naive: expand all context + queries latents (2·d_c·2n_q·H per key per sequence) and attend
      with keys of H + H_r and values of H;
    - absorbed: absorb each query's q^C and expand each latent output (2·2·n_q·H·d_c per query),
      and attend over the latent (keys of d_c + H_r, values of d_c).

    Pairs: attention.flops of ``queries`` over ``context + queries`` keys.

    >>> step_flops("absorbed", 1, 0).subs({B: 1, n_q: 1, H: 2, d_c: 4, H_r: 2})
    52
    """
    keys = context + queries
    pairs = attention.flops(queries, keys, causal=True)
    if form == "naive":
        return (projection.flops(B * keys, d_c, 2 * n_q * H)
                + pairs.xreplace({H: H + H_r / 2}))
    return 2 * projection.flops(B * n_q * queries, H, d_c) + pairs.xreplace({H: d_c + H_r / 2})


def absorb_crossover_context(queries: Expr = T) -> Expr:
    """The context at which the absorbed form's FLOPs equal the naive form's, for ``queries``
    new tokens per sequence: step_flops("naive") = step_flops("absorbed"), solved for T_ctx:

        T_ctx* = (d_c − H)·q(q + 1) / (2·(H·d_c − (d_c − H)·q)),

    beyond which absorption needs fewer FLOPs. It exists while q < H·d_c/(d_c − H)
    (:func:`absorb_query_limit`). One decode token (q = 1): (d_c − H)/(H·d_c − d_c + H), under one
    token for every DeepSeek shape: absorption pays from the first cached token.
    """
    naive, absorbed = step_flops("naive", queries), step_flops("absorbed", queries)
    (root,) = solve(naive - absorbed, T_ctx)
    return factor(cancel(root))


def absorb_query_limit() -> Expr:
    """The most new tokens per sequence for which absorption can pay off in FLOPs: the limit of
    the crossover in q as the context grows, H·d_c/(d_c − H) (170.7 for d_c = 512, H = 128):
    attending over the latent costs (d_c − H) more FLOPs per query and key than over expanded
    keys and values, expanding costs H·d_c per key, so a step whose queries outnumber
    H·d_c/(d_c − H) expands more cheaply, as prefill kernels do."""
    q = T
    equality = step_flops("naive", q) - step_flops("absorbed", q)
    lead = limit(equality / T_ctx, T_ctx, oo)  # the coefficient of the context
    (root,) = [r for r in solve(lead, q) if r != 0]
    return factor(cancel(root))


def entries() -> list[Entry]:
    v2 = Architecture(mla=True, q_lora=True)
    layer = "one layer; B sequences; n_q heads; H = qk_nope_head_dim = v_head_dim"
    step = "one decode step of one new token per sequence at context T_ctx (T_ctx + 1 keys)"
    out = [
        Entry("mla.kv_cache.elements", cache_elements(),
              "latent KV cache per token per layer: c^KV and the shared rotary key k^R",
              "1", SOURCE, ("d_c + d_h^R; 576 for DeepSeek-V2 and V3",)),
        Entry("mla.kv_cache.bytes", kv_cache_bytes(),
              "latent KV cache that a prefill of T tokens leaves", "bytes", SOURCE,
              ("B sequences of T tokens, L layers",)),
        Entry("mla.kv_cache.gqa_groups", gqa_groups(),
              "key/value heads of the GQA whose cache per token equals MLA's", "1",
              f"{V2} §2.1.4 and Table 1 (MLA's cache equals GQA's with 2.25 groups)",
              ("2·n_g·H = d_c + H_r", "2.25 at d_c = 4H, H_r = H/2"),
              steps=(("GQA's cache per token and layer", 2 * n_kv * H),
                     ("equal to MLA's: solved for n_kv", gqa_groups()))),
        Entry("mla.params.attention", attention_parameters(v2),
              "parameters of one layer's latent attention with a query latent", "1", SOURCE,
              ("W^DQ, norm, W^UQ·W^QR; W^DKV·W^KR, norm, W^UK·W^UV; W^O; no biases",)),
        Entry("mla.params.attention.no_q_lora", attention_parameters(Architecture(mla=True)),
              "parameters of one layer's latent attention, queries projected directly", "1",
              SOURCE, ("q_lora_rank null (DeepSeek-V2-Lite): W^Q of D → n_q·(H + H_r)",)),
        Entry("mla.attention.flops", attention.flops().xreplace(head_substitution()),
              "matmul FLOPs of a prefill layer's causal attention over materialised heads",
              "FLOP", f"{SOURCE}; {attention.FA2} §4.1",
              (layer, "2·(H + H_r) per pair for QKᵀ, 2·H for PV")),
    ]
    for mode in attention.MODES:
        out.append(Entry(
            f"mla.attention.{mode}.bytes",
            attention.hbm_bytes(mode).xreplace(head_substitution()),
            f"HBM bytes of a prefill layer's {mode} attention over materialised heads",
            "bytes", f"{SOURCE}; attention.{mode} with H → H + H_r/2, n_kv → n_q", (layer,)))
    for form in ("naive", "absorbed"):
        fl, by = _step_totals(form)
        i = fl / by
        out += [
            Entry(f"mla.decode.{form}.flops", fl,
                  f"FLOPs of one layer's {form} MLA decode attention", "FLOP",
                  f"{SOURCE}; {REFERENCE}", (layer, step)),
            Entry(f"mla.decode.{form}.bytes", by,
                  f"HBM bytes of one layer's {form} MLA decode attention", "bytes",
                  f"{SOURCE}; {REFERENCE}", (layer, step)),
            Entry(f"mla.decode.{form}.intensity", i,
                  f"arithmetic intensity of one layer's {form} MLA decode attention",
                  "FLOP/byte", f"{SOURCE}; {REFERENCE}", (layer, step)),
            Entry(f"mla.decode.{form}.intensity.long_context",
                  factor(limit(i, T_ctx, oo)),
                  f"limit of that intensity as the context grows ({form})", "FLOP/byte",
                  f"{SOURCE}; {REFERENCE}", (layer, "T_ctx → ∞")),
        ]
    one = absorb_crossover_context(Integer(1))
    out += [
        Entry("mla.absorb.crossover_context", absorb_crossover_context(),
              "context beyond which absorbed MLA needs fewer FLOPs than expanding the latent, "
              "for T new tokens per sequence", "tokens", f"{SOURCE}; {REFERENCE}",
              (layer, "T new tokens per sequence attend to T_ctx cached ones and each other",
               "exists while T < H·d_c/(d_c − H)"),
              steps=(("defining equality: naive FLOPs − absorbed FLOPs = 0",
                      step_flops("naive") - step_flops("absorbed")),
                     ("solved for T_ctx", absorb_crossover_context()),
                     ("one decode token (T = 1)", one)),
              holds=(T * (d_c - H) < H * d_c,),
              example=((T, Integer(64), "a chunk of 64 new tokens per sequence, within the "
                        "range where the crossover exists"),)),
        Entry("mla.absorb.crossover_context.decode", one,
              "the same for one decode token: under one token, absorption always pays",
              "tokens", f"{SOURCE}; {REFERENCE}", (layer, "T = 1")),
        Entry("mla.absorb.max_queries", absorb_query_limit(),
              "most new tokens per sequence for which absorption can pay off: the crossover's "
              "limit as the context grows", "tokens", f"{SOURCE}; {REFERENCE}",
              (layer, "T_ctx → ∞"),
              steps=(("the coefficient of T_ctx in naive − absorbed FLOPs, = 0",
                      limit((step_flops("naive") - step_flops("absorbed")) / T_ctx, T_ctx, oo)),
                     ("solved for T", absorb_query_limit()))),
    ]
    return out
