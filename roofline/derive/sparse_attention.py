"""DeepSeek Sparse Attention (DSA) of DeepSeek-V3.2-Exp: one layer's lightning indexer, its
top-k selection and the multi-head latent attention (MLA) over the k_top selected keys.

Sources: the DeepSeek-V3.2-Exp report (``DeepSeek_V3_2.pdf`` in github.com/deepseek-ai/
DeepSeek-V3.2-Exp) §1 eq. (1) I_{t,s} = Σ_j w_{t,j}·ReLU(q_{t,j}·k_s) over the indexer's heads,
eq. (2) attention over the top-k entries, "Instantiate DSA Under MLA" (DSA runs on MLA's MQA mode:
each latent vector is shared by every query head of a token; Appendix A, Figure 4: MHA and MQA
modes of MLA) and §3 "Inference Costs" (main attention O(L·k), the indexer still O(L²); "for
short-sequence prefilling, we specially implement a masked MHA mode to simulate DSA"). The
reference code, ``inference/model.py`` class ``Indexer`` (wq_b: q_lora_rank → n_heads·head_dim on
the query latent; wk: dim → head_dim; k_norm LayerNorm(head_dim) with weight and bias;
weights_proj: dim → n_heads; rotary on the first qk_rope_head_dim of q and k; a Hadamard
``rotate_activation`` and FP8 ``act_quant`` of q and k; an FP8 ``k_cache`` of head_dim and one
FP32 scale per token; ``topk(min(index_topk, end_pos))``) and class ``MLA``;
``inference/kernel.py`` ``fp8_index`` (q·k, ReLU, × weights, sum over heads, × key scale, FP32
logits);
``config_671B_v3.2.json`` (index_n_heads 64, index_head_dim 128, index_topk 2048).
Kernels: DeepGEMM (github.com/deepseek-ai/DeepGEMM) README "V3.2 MQA kernels for the indexer",
``fp8_mqa_logits``: E4M3 q [seq, heads, dim], E4M3 keys with one float scale each, float weights
[seq, heads]; it writes the FP32 logit of every pair in [k_start, k_end) of each query (the
scores, not the indices: the top-k is a separate pass). FlashMLA (github.com/deepseek-ai/FlashMLA)
README "Sparse MLA Prefill", ``flash_mla_sparse_fwd`` (MQA mode: d_qk = 576, d_v = 512, int32
indices [s_q, 1, topk], out, max_logits and lse per head) and ``csrc/sm90/prefill/sparse/``
(``phase1.cuh``: one thread block per query token and B_H = 64 heads, grid (h_q/64)·s_q, each
gathering that token's top-k entries in blocks of B_TOPK = 64: queries do not share gathers,
the heads of one token do).

Prefill mode modelled: the MQA mode (the report's DSA and FlashMLA's sparse prefill kernel): W^UK
absorbed into each head's query, scores against the shared latent of d_c + H_r, values the latent
of d_c, W^UV after: 2·(d_c + H_r) + 2·d_c FLOPs per pair and query head. The report's masked MHA
mode for short prompts is :func:`sparse_flops` ``mode="mha"`` (the materialised heads of
:mod:`roofline.derive.mla`, every causal pair computed, the mask dropping none of the work);
:func:`mode_crossover` is where the MQA mode becomes cheaper.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Integer, Min, Rational, factor, sqrt

from ..symbols import B, D, H, H_idx, H_r, L, T, W, b_a, b_kv, d_c, d_cq, k_top, n_idx, n_q
from . import mla, projection, window
from .levels import LEVELS
from .entry import Entry
from .layers import NORM_FLOPS, ROPE_FLOPS, Operation, elementwise_op, projection_op

__all__ = ["SOURCE", "FP32", "INDEX", "indexer_operations", "indexer_pair_flops",
           "causal_pairs", "indexer_flops", "indexer_bytes", "topk_bytes", "topk_pairs",
           "sparse_pair_flops", "sparse_flops", "sparse_bytes", "absorb_operations",
           "bound_flops", "ideal_sparse_bytes", "attention_operations", "prefill_operations",
           "indexer_parameters",
           "crossover",
           "crossover_condition", "mode_crossover", "entries"]

REPORT = "DeepSeek-V3.2-Exp report (github.com/deepseek-ai/DeepSeek-V3.2-Exp DeepSeek_V3_2.pdf)"
CODE = "DeepSeek-V3.2-Exp inference/model.py (class Indexer, class MLA), inference/kernel.py"
DEEPGEMM = "DeepGEMM README 'V3.2 MQA kernels for the indexer' (fp8_mqa_logits)"
FLASHMLA = ("FlashMLA README 'Sparse MLA Prefill' and csrc/sm90/prefill/sparse/phase1.cuh "
            "(one block per query token and 64 heads)")
SOURCE = f"{REPORT} §1 eq. (1)-(2), 'Instantiate DSA Under MLA', §3, Appendix A; {CODE}"
FP32 = Integer(4)  # bytes of an FP32 logit, head weight or key scale (DeepGEMM, kernel.py)
INDEX = Integer(4)  # bytes of an int32 top-k index (FlashMLA's indices)
FP8 = Integer(1)  # bytes of the indexer's E4M3 queries and keys, whatever the KV cache's type
# FLOPs an element of rotate_activation and act_quant: a Hadamard transform's log2(128) = 7
# stages, its scale and FP8 quantisation (2)
ROTATE_FLOPS = 10
SPARSE_MODES = ("kernel", "ideal")  # the modes that run MQA mode's sparse kernel
_PAIR = "each query sees keys 0 … i; the indexer scores them all, attention reads the top k_top"


# --- the lightning indexer ---------------------------------------------------------------------
def indexer_operations(rows: Expr) -> list[Operation]:
    """The indexer's work per token over ``rows`` token rows (B·T in prefill, B in decode), as
    ``Indexer.forward`` runs it: wq_b on the normed query latent (d_cq → n_idx·H_idx), wk
    (D → H_idx), its LayerNorm (k_norm: 7 FLOPs an element, weight and bias read), weights_proj
    (D → n_idx) with its scaling by n_idx^(-1/2), q's FP8 scale and softmax scale (3 products
    per element), the rotary encoding of the first H_r (qk_rope_head_dim) of each of the n_idx
    query heads and of the key, and ``rotate_activation`` with ``act_quant``: a fast Hadamard
    transform of each of the n_idx + 1 vectors of H_idx (log2 H_idx add/subtract stages of
    H_idx, and its scale), and FP8 quantisation (a block maximum and a division per element:
    2), read at b_a, written in FP8, a byte each (q for the scores, k into the indexer's cache, with
    one FP32 scale per vector). The transform's log2 H_idx stages are taken at V3.2's
    H_idx = 128 (7), with its scale and the quantisation: :data:`ROTATE_FLOPS` = 10 an element,
    a convention as the other element-wise counts are.

    >>> [op.name for op in indexer_operations(T)][:3]
    ['dsa.indexer.q_up', 'dsa.indexer.k_proj', 'dsa.indexer.k_norm']
    """
    vectors = rows * (n_idx + 1)
    rotated = vectors * H_r
    return [
        projection_op("dsa.indexer.q_up", rows, d_cq, n_idx * H_idx, False),
        projection_op("dsa.indexer.k_proj", rows, D, H_idx, False),
        elementwise_op("dsa.indexer.k_norm", NORM_FLOPS["layer"], rows * H_idx, rows * H_idx,
                       rows * H_idx, 2 * H_idx),
        projection_op("dsa.indexer.weights_proj", rows, D, n_idx, False),
        elementwise_op("dsa.indexer.weights_scale", 3, rows * n_idx, rows * n_idx,
                       rows * n_idx),
        elementwise_op("dsa.indexer.rope", ROPE_FLOPS, rotated, rotated, rotated),
        Operation("dsa.indexer.rotate_quant", "elementwise", vectors * H_idx * ROTATE_FLOPS,
                  b_a * vectors * H_idx + FP8 * vectors * H_idx + FP32 * vectors),
    ]


def indexer_pair_flops() -> Expr:
    """FLOPs of one query–key pair's index score I_{t,s} = Σ_j w_{t,j}·ReLU(q_{t,j}·k_s): per
    indexer head 2·H_idx for the dot product (a multiply-add per element, as every matmul
    here), 1 for the ReLU and 2 for the weighted sum over heads (a multiply-add per head: the
    weights' dot product with the ReLU'd scores, as ``fp8_index`` sums ``logits``):
    n_idx·(2·H_idx + 3). The FP8 key-scale product, once per pair, is left out as the
    softmax scale is in attention.flops.

    >>> indexer_pair_flops().subs({n_idx: 64, H_idx: 128})
    16576
    """
    return n_idx * (2 * H_idx + 3)


def causal_pairs(queries: Expr = T) -> Expr:
    """T(T+1)/2: every causal query–key pair, what the indexer scores (its O(L²))."""
    return queries * (queries + 1) * Rational(1, 2)


def indexer_flops(pairs: Expr | None = None) -> Expr:
    """The indexer's scores of one layer, B sequences: B·n_idx·(2·H_idx + 3)·T(T+1)/2 (a
    decode step: ``pairs`` = T_ctx + 1)."""
    return B * indexer_pair_flops() * (causal_pairs() if pairs is None else pairs)


def indexer_bytes(written: str = "scores", queries: Expr = T, keys: Expr = T,
                  pairs: Expr | None = None) -> Expr:
    """HBM bytes of the indexer's scoring kernel for B sequences: its E4M3 q (n_idx·H_idx at
    FP8 per query) and FP32 head weights (n_idx), the indexer's key cache read once (H_idx in
    FP8 and one FP32 scale per key: 132 bytes, ``k_cache``/``k_scale_cache``),
    and what it writes: ``"scores"``, the FP32 logit of every causal pair, as DeepGEMM's
    ``fp8_mqa_logits`` (and the reference ``fp8_index``, which writes the whole rectangle)
    does, or ``"indices"``, only the k_top int32 indices per query, as a kernel that fused the
    selection would. Keys read once per sequence is the lower bound: ``fp8_mqa_logits`` streams
    them again for each block of 128/n_idx queries, re-reads an L2 would serve (the FP8 keys
    of 128K tokens are 16.5 MB).
    """
    pairs = causal_pairs() if pairs is None else pairs
    read = queries * n_idx * (H_idx * FP8 + FP32) + keys * (H_idx * FP8 + FP32)
    if written == "scores":
        out = FP32 * pairs
    elif written == "indices":
        out = INDEX * queries * k_top
    else:
        raise ValueError(f"unknown indexer output {written!r}; valid: scores, indices")
    return B * (read + out)


def topk_bytes(queries: Expr = T, pairs: Expr | None = None) -> Expr:
    """The top-k pass after ``fp8_mqa_logits``: the FP32 logits read, k_top int32 indices per
    query written (FlashMLA's ``indices`` [s_q, 1, topk], −1 where a query has fewer keys).
    Its comparisons are not counted as FLOPs."""
    pairs = causal_pairs() if pairs is None else pairs
    return B * (FP32 * pairs + INDEX * queries * k_top)


# --- the sparse main attention -----------------------------------------------------------------
def topk_pairs() -> Expr:
    """Query–key pairs of the main attention: Σ_{i<T} min(i + 1, k_top) (query i has i + 1 keys
    and keeps the top k_top), window.pairs with W → k_top: T(T+1)/2 up to k_top, then
    T·k_top − k_top(k_top − 1)/2, linear in T.

    >>> topk_pairs().subs({T: 5, k_top: 2})
    9
    """
    return window.pairs().xreplace({W: k_top})


def sparse_pair_flops(mode: str = "mqa") -> Expr:
    """Matmul FLOPs per pair and query head: MQA mode 2·(d_c + H_r) for q̃·[c^KV; k^R] and
    2·d_c for P·c^KV, 4·(d_c + H_r/2); MHA mode 4·(H + H_r/2) over materialised heads
    (mla.head_substitution)."""
    if mode == "mqa":
        return 4 * (d_c + H_r / 2)
    if mode == "mha":
        return 4 * (H + H_r / 2)
    raise ValueError(f"unknown MLA mode {mode!r}; valid: mqa, mha")


def sparse_flops(mode: str = "mqa", pairs: Expr | None = None) -> Expr:
    """The main attention's matmul FLOPs of one layer, B sequences, n_q heads: MQA mode over the
    :func:`topk_pairs` (FlashMLA's sparse kernel computes only the gathered keys), masked MHA
    mode over every causal pair (a dense kernel's mask removes no work; equal at T ≤ k_top)."""
    if pairs is None:
        pairs = topk_pairs() if mode == "mqa" else causal_pairs()
    return B * n_q * sparse_pair_flops(mode) * pairs


def sparse_bytes(gathers: Expr = Integer(1), queries: Expr = T, pairs: Expr | None = None
                 ) -> Expr:
    """HBM bytes of ``flash_mla_sparse_fwd`` for B sequences: per query token Q read
    (n_q·(d_c + H_r) at b_a), O written (n_q·d_c at b_a), max_logits and lse (FP32 per head),
    its k_top int32 indices, and the gathered latent entries, d_c + H_r at b_kv for each of
    its min(i + 1, k_top) valid keys. Each query gathers its own entries (no two queries share
    a gather); the heads of a token share them (MQA mode), though a thread block takes 64
    heads, so n_q = 128 gathers each entry twice: ``gathers`` = 2 counts both, 1 (default)
    takes the second from L2 (the two blocks of a token are neighbours in the grid). The
    kernel reads its latent in BF16 (b_kv = 2); an FP8 cache is dequantised before it."""
    pairs = topk_pairs() if pairs is None else pairs
    per_query = n_q * (d_c + H_r) * b_a + n_q * d_c * b_a + 2 * n_q * FP32 + INDEX * k_top
    return B * (queries * per_query + gathers * pairs * mla.cache_elements() * b_kv)


def absorb_operations(rows: Expr) -> list[Operation]:
    """MQA mode's per-token products (mla.decode_step's absorbed form over ``rows`` tokens):
    W^UK into each head's query (H → d_c) and W^UV on each head's latent output (d_c → H); in
    prefill they replace ``mla.kv_up``, the materialised keys and values (the same FLOPs:
    4·n_q·H·d_c per token)."""
    heads = rows * n_q
    return [Operation("dsa.q_absorb", "projection", projection.flops(heads, H, d_c),
                      projection.hbm_bytes(heads, H, d_c, matrices=n_q)),
            Operation("dsa.out_absorb", "projection", projection.flops(heads, d_c, H),
                      projection.hbm_bytes(heads, d_c, H, matrices=n_q))]


def bound_flops() -> Expr:
    """The main attention's FLOPs in the bound (:func:`fewer`): min(:func:`sparse_flops`
    "mqa", "mha")."""
    return Min(sparse_flops("mqa"), sparse_flops("mha"))


def ideal_sparse_bytes() -> Expr:
    """The lower bound of the sparse attention's traffic (the ``ideal`` mode): Q read and O
    written once, every latent entry read once per sequence (not once per query that selects
    it): B·T·(n_q·(2·d_c + H_r)·b_a + (d_c + H_r)·b_kv)."""
    return B * T * (n_q * (2 * d_c + H_r) * b_a + mla.cache_elements() * b_kv)


def attention_operations(arch, mode: str, smooth: bool = False,
                         caches=()) -> list[Operation]:
    """The prefill's attention of every layer (each operation counting L): the indexer's scores
    and the top-k pass, then in the ``kernel`` and ``ideal`` modes MQA mode's absorbing
    products around the sparse attention (:func:`ideal_sparse_bytes` in ``ideal``; in ``kernel``
    FlashMLA's gathers, :func:`sparse_bytes`, at HBM on a device without caches, and behind
    the cache levels ``caches`` each latent entry read from HBM once and every gather served
    through the caches and staged in SRAM, as ``kernel`` attention's re-reads are), held
    against the masked MHA
    mode (:func:`fewer`); in the papers' schedules of dense attention (``naive``,
    ``tiled``, ``tiled_fa2``) the report's masked MHA mode: latent attention's dense operations
    in that mode (:func:`roofline.derive.mla.attention_operations`), every causal pair computed,
    the mask removing none of the work."""
    scores = [Operation("dsa.indexer.scores", "attention", indexer_flops(), indexer_bytes(), L),
              Operation("dsa.indexer.topk", "attention", Integer(0), topk_bytes(), L)]
    if mode not in SPARSE_MODES:
        dense = mla.attention_operations(arch, mode, smooth, caches)
        return [*scores, *(replace(op, count=L) for op in
                           (dense if isinstance(dense, list) else [dense]))]
    dense = mla.attention_operations(arch, mode, smooth, caches)
    if mode == "ideal":
        sparse = Operation("dsa.attention.ideal", "attention", sparse_flops(),
                           ideal_sparse_bytes(), L)
    elif caches:  # each latent entry from HBM once, every gather through the caches
        unique = sparse_bytes(gathers=Integer(0)) + B * T * mla.cache_elements() * b_kv
        sparse = Operation("dsa.attention", "attention", sparse_flops(), unique, L,
                           tuple((level, sparse_bytes()) for level in ("sram", *caches)))
    else:
        sparse = Operation("dsa.attention", "attention", sparse_flops(), sparse_bytes(), L)
    return [*scores, fewer(sparse, dense)]


def fewer(sparse: Operation, dense: Operation) -> Operation:
    """The bound's main attention: the fewer FLOPs, and the fewer bytes at HBM and at each
    level, of MQA mode over the top k (``sparse``) and the report's masked MHA mode over every
    causal pair (``dense``: latent attention's dense operation in the same mode), which it
    runs for short prompts (§3). Each of the two is at least this operation's roofline time.
    The per-token products stay ``mla.kv_up``'s: the absorbing ones of MQA mode do the same
    FLOPs with more activation traffic (2·n_q·(H + d_c) elements a token against
    d_c + 2·n_q·H), so materialising is the fewer for any shape. Below :func:`mode_crossover`
    (12,813 tokens at V3.2's sizes) the dense FLOPs are the fewer."""
    present = {lv for lv, _ in (*sparse.levels, *dense.levels)}
    levels = [lv for lv in LEVELS if lv in present]  # nearest the SMs first
    return Operation(sparse.name, "attention", Min(sparse.flops, dense.flops),
                     Min(sparse.bytes, dense.bytes), L,
                     tuple((lv, Min(sparse.level_bytes(lv), dense.level_bytes(lv)))
                           for lv in levels))


def prefill_operations() -> list[Operation]:
    """One layer's DSA beyond MLA's projections (``mla.kv_up`` among them) for B sequences of T
    tokens: the indexer's projections, its scores, the top-k and the main attention (the bound's,
    :func:`fewer`), in the kernel mode without a cache."""
    from .architecture import Architecture

    ops = attention_operations(Architecture(mla=True, q_lora=True), "kernel")
    return [*indexer_operations(B * T), *(replace(op, count=Integer(1)) for op in ops)]


def indexer_parameters() -> Expr:
    """The indexer's parameters per layer, as ``Indexer.__init__`` shapes them: wq_b
    (d_cq·n_idx·H_idx), wk (D·H_idx), k_norm's weight and bias (2·H_idx), weights_proj
    (D·n_idx); no biases on the linear layers.

    >>> indexer_parameters().subs({d_cq: 1536, n_idx: 64, H_idx: 128, D: 7168})
    13959424
    """
    return d_cq * n_idx * H_idx + D * H_idx + 2 * H_idx + D * n_idx


# --- crossovers ----------------------------------------------------------------------------------
def _beyond_k(per_pair_quadratic: Expr, per_pair_linear: Expr) -> Expr:
    """The T > k_top root of a·T(T+1)/2 = c·(T·k − k(k − 1)/2): the larger root of
    a·T² + (a − 2ck)·T + c·k(k − 1) = 0, (2ck − a + √((2ck − a)² − 4ack(k − 1)))/(2a). When
    c > a the quadratic is negative at T = k (it is (a − c)·k(k + 1) there), so k lies between
    the roots and the larger is the one crossing."""
    a, c, k = per_pair_quadratic, per_pair_linear, k_top
    lin = 2 * c * k - a
    return (lin + sqrt(lin ** 2 - 4 * a * c * k * (k - 1))) / (2 * a)


def crossover() -> Expr:
    """The prompt length at which the indexer's FLOPs overtake the sparse attention's:
    indexer_flops = sparse_flops solved for T. Below k_top both count T(T+1)/2 pairs and the
    attention's is the larger per pair (:func:`crossover_condition`), so they meet beyond
    k_top, where the attention's pairs are T·k_top − k_top(k_top − 1)/2:
    n_idx(2H_idx + 3)·T(T+1)/2 = 2n_q(2d_c + H_r)·(T·k_top − k_top(k_top − 1)/2)."""
    return _beyond_k(indexer_pair_flops(), n_q * sparse_pair_flops())


def crossover_condition() -> Expr:
    """Where :func:`crossover` holds: the attention's FLOPs per pair exceed the indexer's,
    4·n_q·(d_c + H_r/2) > n_idx·(2·H_idx + 3) (otherwise the indexer costs more from T = 1)."""
    return n_q * sparse_pair_flops() > indexer_pair_flops()


def mode_crossover() -> Expr:
    """The prompt length beyond which the MQA mode's attention needs fewer FLOPs than the
    masked MHA mode's (the per-token products are equal: absorbing costs 4·n_q·H·d_c per token,
    as materialising does): 4(H + H_r/2)·T(T+1)/2 = 4(d_c + H_r/2)·(T·k_top − k_top(k_top −
    1)/2), beyond k_top while d_c > H. Below it the report's masked MHA mode is the cheaper."""
    return _beyond_k(sparse_pair_flops("mha"), sparse_pair_flops("mqa"))


def entries() -> list[Entry]:
    layer = "one DSA layer; B sequences of T tokens; n_q query heads; MLA's MQA mode"
    sizes = {n_q: 128, d_c: 512, H_r: 64, n_idx: 64, H_idx: 128, k_top: 2048}
    a, c = indexer_pair_flops(), n_q * sparse_pair_flops()
    return [
        Entry("dsa.indexer.pair_flops", indexer_pair_flops(),
              "FLOPs of one index score I_{t,s} over the indexer's heads", "FLOP",
              f"{SOURCE}; {DEEPGEMM}", ("2·H_idx a head for q·k, 1 for ReLU, 2 for the "
                                        "weighted sum; the key scale not counted",)),
        Entry("dsa.indexer.flops", indexer_flops(),
              "FLOPs of one layer's indexer scores over every causal pair", "FLOP",
              f"{SOURCE}; {DEEPGEMM}", (layer, "T(T+1)/2 pairs scored")),
        Entry("dsa.indexer.bytes", indexer_bytes(),
              "HBM bytes of the indexer's scoring kernel (FP32 logits written)", "bytes",
              f"{DEEPGEMM}; {CODE}", (layer, "E4M3 q and keys (b_kv), FP32 weights, scales "
                                     "and logits", "keys read once per sequence")),
        Entry("dsa.indexer.topk.bytes", topk_bytes(),
              "HBM bytes of the top-k pass: logits read, int32 indices written", "bytes",
              f"{CODE} (index_score.topk); {FLASHMLA}", (layer,)),
        Entry("dsa.indexer.params", indexer_parameters(),
              "parameters of one layer's lightning indexer", "1", CODE,
              ("wq_b, wk, k_norm weight and bias, weights_proj; no linear biases",)),
        Entry("dsa.pairs", window.pairs_piecewise().xreplace({W: k_top}),
              "query–key pairs of the sparse main attention", "1", SOURCE, (_PAIR,),
              steps=(("window.pairs with W → k_top", topk_pairs()),)),
        Entry("dsa.attention.flops", sparse_flops(),
              "matmul FLOPs of one layer's sparse attention in MLA's MQA mode", "FLOP",
              f"{SOURCE}; {FLASHMLA}", (layer, _PAIR, "4·(d_c + H_r/2) per pair and head")),
        Entry("dsa.attention.mha.flops", sparse_flops("mha"),
              "matmul FLOPs of the masked MHA mode for short prompts", "FLOP",
              f"{REPORT} §3 (masked MHA mode); {mla.SOURCE}",
              ("one layer; materialised heads", "every causal pair computed, the mask "
               "dropping none")),
        Entry("dsa.attention.bytes", sparse_bytes(),
              "HBM bytes of one layer's sparse MQA-mode prefill attention", "bytes", FLASHMLA,
              (layer, "each query gathers its own entries; heads share them",
               "the second 64-head block's gather served by L2")),
        Entry("dsa.crossover", crossover(),
              "prompt length beyond which the indexer's FLOPs exceed the sparse attention's",
              "tokens", f"{SOURCE}; {FLASHMLA}", (layer, "beyond k_top"),
              steps=(("defining equality (T > k_top)",
                      a * causal_pairs() - c * (T * k_top - k_top * (k_top - 1) / 2)),
                     ("DeepSeek-V3.2-Exp", factor(crossover().subs(sizes)))),
              holds=(crossover_condition(),)),
        Entry("dsa.mode_crossover", mode_crossover(),
              "prompt length beyond which MQA-mode sparse attention needs fewer FLOPs than "
              "the masked MHA mode", "tokens", f"{REPORT} §3, Appendix A; {FLASHMLA}",
              (layer, "H = qk_nope_head_dim"), holds=(d_c > H,)),
    ]

