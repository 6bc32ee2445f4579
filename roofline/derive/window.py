"""Sliding-window (local) attention of one layer: FLOPs, HBM bytes and KV cache when a query
sees only the last W keys, itself included.

Query i (0-based) attends to the keys i − W + 1, ..., i: min(i + 1, W) of them. This is the
mask of Hugging Face transformers (key j is seen when 0 ≤ i − j < ``sliding_window``) and the
W-entry rolling buffer of Mistral's reference code. Sources: Mistral 7B (Jiang et al. 2023,
arXiv 2310.06825) §2, "Sliding Window Attention" (each layer attends to W tokens of the layer
below; cost O(W) per token) and "Rolling Buffer Cache" (a cache of W entries, position i at
i mod W); Longformer (Beltagy et al. 2020, arXiv 2004.05150) §3.1 (banded attention: cost
linear in the sequence, O(n·w)).

Per attention mode (the modes of :mod:`roofline.derive.attention`):

- every mode: the T(T+1)/2 causal pairs minus the triangle of side T − min(T, W) that the band
  leaves out, i.e. Σ_{i<T} min(i + 1, W) pairs (4·H FLOPs each, per query head);
- ``naive`` stores the band, a T × min(T, W) score matrix per head (Longformer §3.1's banded
  layout), and computes every score of it, masked or not, as Algorithm 0 does for T × T;
- ``tiled`` (FlashAttention Algorithm 1 order): a query row is not re-read for a key block that
  lies wholly outside its band (below it in the causal triangle, or more than W − 1 keys back);
- ``tiled_fa2``: a row block reads only the keys from its first row's band start to its last
  row: K, V traffic about (B_r + W − 1)·2H elements per row block instead of growing with T;
- ``ideal``: Q, K, V read once and O written once, as without a window (the traffic is already
  linear in T); only the FLOPs fall.

At T ≤ W every expression equals the one without a window (``tests/test_derive_window.py``
checks this and checks the pair and block counts against brute-force loops over a mask).
"""

from __future__ import annotations

from sympy import Expr, Integer, Max, Min, Piecewise, Sum, Symbol, ceiling

from ..symbols import B, H, L, L_w, T, T_ctx, W, b_a, b_kv, n_kv, n_q
from . import attention
from .architecture import ATTENTION_MODES, Architecture
from .entry import Entry

__all__ = ["pairs", "pairs_piecewise", "dropped", "flops", "naive_bytes", "score_bytes",
           "tiled_bytes", "tiled_fa2_bytes", "hbm_bytes", "largest_scores", "cached_tokens", "decode_keys",
           "layer_split", "entries", "SOURCE"]

SOURCE = ("Mistral 7B (Jiang et al. 2023, arXiv 2310.06825) §2 (sliding window attention, "
          "rolling buffer cache); Longformer (Beltagy et al. 2020, arXiv 2004.05150) §3.1 "
          "(banded attention)")
_FA1 = "FlashAttention (Dao et al. 2022, arXiv 2205.14135) Algorithm 1"
_FA2 = "FlashAttention-2 (Dao 2023, arXiv 2307.08691) loop order"


def pairs() -> Expr:
    """Query–key pairs under a causal window: Σ_{i<T} min(i+1, W) = m(m+1)/2 + (T − m)·W with
    m = min(T, W) (one expression for both regimes; :func:`pairs_piecewise` splits them).

    >>> pairs().subs({T: 5, W: 2})
    9
    """
    m = Min(T, W)
    return m * (m + 1) / 2 + (T - m) * W


def pairs_piecewise() -> Piecewise:
    """The same count in closed form per regime: T(T+1)/2 for T ≤ W, W·T − W(W−1)/2 for T > W."""
    return Piecewise((T * (T + 1) / 2, T <= W), (W * T - W * (W - 1) / 2, True))


def dropped() -> Expr:
    """T − min(T, W): the side of the triangle of causal pairs that the window leaves out
    (T(T+1)/2 − pairs() = s(s+1)/2 with s = T − min(T, W))."""
    return T - Min(T, W)


def flops(mode: str = "tiled") -> Expr:
    """Matmul FLOPs of one windowed layer. Fused modes: causal attention minus a causal
    triangle of :func:`dropped` tokens; ``naive``: every score of the T × min(T, W) band."""
    if mode == "naive":
        return attention.flops(T, Min(T, W), causal=False)
    return attention.flops() - attention.flops(queries=dropped())


def naive_bytes() -> Expr:
    """Algorithm 0 with the band stored: the causal schedule's traffic minus S written, S read,
    P written and P read for the T·(T − min(T, W)) scores outside the band."""
    return attention.naive_bytes() - 4 * attention.score_bytes(T, dropped())


def score_bytes() -> Expr:
    """Footprint of one layer's banded scores: B·n_q·T·min(T, W)·b_a."""
    return attention.score_bytes(T, Min(T, W))


def tiled_bytes(smooth: bool = False) -> Expr:
    """Algorithm 1 with the band: column block j is visited by the rows
    j·B_c ≤ i < min(T, (j+1)·B_c + W − 1), so the causal count loses
    Σ_{k=1}^{m} (T − W + 1 − k·B_c) rows, m = max(0, ⌈(T − W + 1)/B_c⌉ − 1) (ceiling dropped
    when ``smooth``); each skipped row saves (3H + 4) elements (``attention.tiled_bytes``)."""
    b_c, _ = attention.block_sizes(smooth)
    x = (T - W + 1) / b_c
    m = Max(0, x - 1) if smooth else Max(0, ceiling(x) - 1)
    skipped = m * (T - W + 1) - b_c * m * (m + 1) / 2
    return attention.tiled_bytes(True, smooth) - B * n_q * b_a * (3 * H + 4) * skipped


def tiled_fa2_bytes(smooth: bool = False, rows: Expr | None = None) -> Expr:
    """FlashAttention-2 order with the band: row block i reads the keys
    max(0, i·B_r − W + 1) ≤ j < min((i+1)·B_r, T), so the causal count loses
    Σ_{i=i₀}^{T_r−1} (i·B_r − W + 1) = n·(B_r·(i₀ + T_r − 1)/2 − (W − 1)) key rows, with
    i₀ = ⌈(W − 1)/B_r⌉ and n = max(0, T_r − i₀); each saves 2H elements (K and V,
    ``attention.tiled_fa2_bytes``). ``smooth`` drops the ceilings and takes the first block's
    skip (between 0 and B_r − 1 keys) as 0: the terms are then B_r, 2·B_r, ..., n′·B_r with
    n′ = max(0, T/B_r − (W − 1)/B_r − 1), never negative and 0 for T ≤ W. ``rows`` is the row
    block B_r (Algorithm 1's by default; the kernels' 128 for ``kernel``)."""
    b_r = attention.block_sizes(smooth)[1] if rows is None else rows
    if smooth:
        n = Max(0, Max(1, T / b_r) - (W - 1) / b_r - 1)
        skipped = b_r * n * (n + 1) / 2
    else:
        t_r, i_0 = ceiling(T / b_r), ceiling((W - 1) / b_r)
        n = Max(0, t_r - i_0)
        skipped = n * (b_r * (i_0 + t_r - 1) / 2 - (W - 1))
    return attention.tiled_fa2_bytes(True, smooth, rows) - B * n_q * b_a * 2 * H * skipped


def hbm_bytes(mode: str, smooth: bool = False) -> Expr:
    """HBM bytes of one windowed layer's prefill attention in the named mode."""
    if mode == "naive":
        return naive_bytes()
    if mode == "tiled":
        return tiled_bytes(smooth)
    if mode == "tiled_fa2":
        return tiled_fa2_bytes(smooth)
    if mode == "kernel":
        return tiled_fa2_bytes(smooth, attention.KERNEL_ROWS)
    if mode == "ideal":
        return attention.ideal_bytes()  # Q, K, V, O once: already linear in T
    raise ValueError(f"unknown attention mode {mode!r}; valid: {', '.join(ATTENTION_MODES)}")


def layer_split(arch: Architecture) -> tuple[Expr, Expr]:
    """(global layers, windowed layers): (L, 0), (0, L) or (L − L_w, L_w)."""
    if arch.window == "all":
        return Integer(0), L
    if arch.window == "some":
        return L - L_w, L_w
    return L, Integer(0)


def largest_scores(arch: Architecture) -> Expr:
    """The largest footprint of one layer's materialised scores: a global layer's T × T where
    there is one, else the band's T × min(T, W)."""
    return score_bytes() if arch.window == "all" else attention.score_bytes()


def cached_tokens(arch: Architecture) -> Expr:
    """Tokens a windowed layer keeps in its KV cache after T: min(T, W) in a rolling buffer
    (Mistral's reference code; vLLM's sliding-window cache), T where the engine keeps all."""
    return T if arch.kv_cache == "full" else Min(T, W)


def decode_keys() -> Expr:
    """Keys one decode step of a windowed layer attends to: min(T_ctx + 1, W)."""
    return Min(T_ctx + 1, W)


def entries() -> list[Entry]:
    layer = "one windowed layer; B sequences of T tokens; n_q query heads of H"
    mask = "query i sees keys i − W + 1 … i (W keys, itself included)"
    i = Symbol("i", integer=True, nonnegative=True)
    m = Min(T, W)
    rolling = Architecture(window="all")
    out = [
        Entry("window.pairs", pairs_piecewise(),
              "query–key pairs of causal attention within a sliding window of W", "1", SOURCE,
              (mask,), steps=(("the sum over queries", Sum(Min(i + 1, W), (i, 0, T - 1))),
                              ("one expression, m = min(T, W)", pairs()),
                              ("pairs the window drops: a causal triangle of side T − W",
                               (T - W) * (T - W + 1) / 2))),
        Entry("window.flops", flops(), "matmul FLOPs of one windowed layer (fused modes)",
              "FLOP", f"{SOURCE}; 4·H FLOPs per pair as attention.flops", (layer, mask)),
        Entry("window.naive.flops", flops("naive"),
              "FLOPs of naive windowed attention: every score of the T × min(T, W) band",
              "FLOP", SOURCE, (layer, "the band is computed whole, its masked corner too")),
        Entry("window.naive.bytes", naive_bytes(),
              "HBM bytes of naive attention with the banded score matrix", "bytes",
              f"{SOURCE}; FlashAttention (arXiv 2205.14135) Algorithm 0", (layer, mask)),
        Entry("window.naive.score_bytes", score_bytes(),
              "footprint of one layer's banded scores, all heads and sequences", "bytes",
              SOURCE, (layer, "T × min(T, W) scores per head")),
        Entry("window.tiled.bytes", tiled_bytes(),
              "HBM bytes of FlashAttention (Algorithm 1) skipping blocks outside the band",
              "bytes", f"{_FA1}; {SOURCE}", (layer, mask, "row granularity, as attention.tiled")),
        Entry("window.tiled_fa2.bytes", tiled_fa2_bytes(),
              "HBM bytes in FlashAttention-2's order, reading only the keys in the band",
              "bytes", f"{_FA2}; {SOURCE}", (layer, mask, "key-row granularity")),
        Entry("window.kv_cache.bytes", 2 * B * L * n_kv * H * b_kv * cached_tokens(rolling),
              "KV cache of a model whose every layer is windowed (rolling buffer)", "bytes",
              SOURCE, ("B sequences of T tokens", "each layer keeps the last min(T, W)")),
        Entry("window.kv_cache.bytes.some",
              2 * B * n_kv * H * b_kv * ((L - L_w) * T + L_w * m),
              "KV cache when L_w of the L layers are windowed (rolling buffer)", "bytes",
              f"{SOURCE}; Gemma 2 (arXiv 2408.00118) §2 (local and global layers alternate)",
              ("B sequences of T tokens", "global layers keep T, windowed ones min(T, W)")),
    ]
    for mode in ATTENTION_MODES:
        fl = flops(mode)
        out.append(Entry(f"window.{mode}.intensity", fl / hbm_bytes(mode),
                         f"arithmetic intensity of {mode} attention in a windowed layer",
                         "FLOP/byte", SOURCE, (layer, mask)))
    return out
