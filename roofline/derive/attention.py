"""Attention of one layer for B sequences of T tokens: FLOPs and HBM bytes, naive vs fused.

Per query head of dimension H (the paper's d), with n_q query and n_kv key/value heads (GQA; MQA
is n_kv = 1). The FlashAttention papers write N for our T and count the SRAM M in elements; our
``M_sram`` counts bytes, so M = M_sram / b_a elements.

Modes:
- ``naive``: FlashAttention (Dao et al. 2022, arXiv 2205.14135) Algorithm 0: S = QKᵀ and
  P = softmax(S) are written to and read back from HBM. It computes every score, masked or not.
- ``tiled``: FlashAttention Algorithm 1: outer loop over K_j, V_j blocks of B_c rows (each read
  once), inner loop over Q_i, O_i blocks; Q, O and the row statistics ℓ, m are read (and O, ℓ, m
  written) once per column block: T_c = ⌈T/B_c⌉ times. B_c = ⌈M/(4d)⌉, B_r = min(B_c, d).
- ``tiled_fa2``: FlashAttention-2 (arXiv 2307.08691) loop order: outer loop over Q row blocks
  (Q read once, O and one logsumexp per row written once), inner loop over K, V blocks, which are
  read once per row block: T_r = ⌈T/B_r⌉ times. Block sizes as FlashAttention's Algorithm 1
  (B_r = min(⌈M/(4d)⌉, d)); FlashAttention-2 itself leaves them to tuning.
- ``kernel``: the FlashAttention-2 loop order at the row tile of the released kernels, B_r = 128
  query rows per thread block (FlashAttention-2's CUDA kernels, ``flash_fwd_launch_template.h``:
  128-row tiles for head dimensions up to 128; FlashAttention-3, arXiv 2407.08608 §3 and its
  ``hopper/`` kernels: 128-row tiles for head dimensions 128 and 256, 192 for 64). A larger tile
  moves fewer bytes, so where a kernel uses more rows the count is still a bound.
- ``ideal``: Q, K, V read once and O written once: the lower bound of any exact algorithm.

Each tiled count is what the schedule moves into the SRAM of the SMs; without a cache between
them and HBM it is the HBM traffic. :mod:`roofline.derive.levels` splits it over a cache
hierarchy.

Causal masking: the fused modes count the T(T+1)/2 query–key pairs on or below the diagonal
(FlashAttention-2 §4.1: "with causal mask, we divide this number by 2") and skip the work above
the diagonal at the granularity of a row (``tiled``: a query row is not re-read for a key block
wholly above it) or of a key row (``tiled_fa2``: a row block reads the keys up to its last row);
real kernels skip whole tiles, so they move up to one tile more per block on the diagonal (a few
per cent at realistic T). ``naive`` computes and stores the full T×T matrix and masks it.
GQA: ``naive`` and both tiled modes read K and V once per *query* head (each head's kernel
program loads its key/value head; sharing through a cache is not counted); ``ideal`` reads them
once per key/value head. Every element moved (including ℓ, m and the logsumexp) is counted at
b_a bytes.
"""

from __future__ import annotations

from sympy import Expr, Integer, Max, Min, Rational, ceiling

from ..symbols import B, H, M_sram, T, b_a, n_kv, n_q
from .architecture import ATTENTION_MODES
from .entry import Entry

__all__ = ["MODES", "KERNEL_ROWS", "long_prompts", "flops", "naive_bytes", "score_bytes",
           "tiled_bytes", "tiled_fa2_bytes", "kernel_bytes", "ideal_bytes", "hbm_bytes",
           "block_sizes", "row_block", "entries"]

MODES = ATTENTION_MODES
# Query rows per thread block of the released FlashAttention-2/-3 forward kernels (``kernel``).
KERNEL_ROWS = Integer(128)

FA1 = "FlashAttention (Dao et al. 2022, arXiv 2205.14135)"
FA2 = "FlashAttention-2 (Dao 2023, arXiv 2307.08691)"


def flops(queries: Expr = T, keys: Expr | None = None, causal: bool = True) -> Expr:
    """Matmul FLOPs of QKᵀ and PV: 4·H per query–key pair, per query head, per sequence.

    Non-causal: 4·B·n_q·H·T² (FlashAttention-2 §4.1). Causal (queries = keys = T): T(T+1)/2
    pairs. Softmax's exponentials are not counted (the FlashAttention-2 convention).

    >>> flops(causal=False)
    4*B*H*T**2*n_q
    >>> flops()
    2*B*H*T*n_q*(T + 1)
    """
    keys = queries if keys is None else keys
    if causal and keys == queries:
        pairs = queries * (queries + 1) * Rational(1, 2)  # exact for integer arguments too
    elif causal:  # queries are the last ``queries`` positions of ``keys``
        pairs = queries * keys - queries * (queries - 1) * Rational(1, 2)
    else:
        pairs = queries * keys
    return 4 * B * n_q * H * pairs


def naive_bytes(queries: Expr = T, keys: Expr | None = None) -> Expr:
    """Algorithm 0, per query head: read Q, K; write S; read S; write P; read P, V; write O.

    = (2·q·H + 2·k·H) + 4·q·k elements (4·T·H + 4·T² at q = k = T).

    >>> naive_bytes()
    B*b_a*n_q*(4*H*T + 4*T**2)
    """
    keys = queries if keys is None else keys
    return B * n_q * b_a * (2 * queries * H + 2 * keys * H + 4 * queries * keys)


def score_bytes(queries: Expr = T, keys: Expr | None = None) -> Expr:
    """Footprint of one materialised score matrix per head and sequence: B·n_q·T²·b_a.

    (Algorithm 0's P can overwrite S in place; this is the smallest footprint of the schedule.)
    """
    keys = queries if keys is None else keys
    return B * n_q * queries * keys * b_a


def block_sizes(smooth: bool = False) -> tuple[Expr, Expr]:
    """(B_c, B_r) = (⌈M/(4d)⌉, min(⌈M/(4d)⌉, d)) with M = M_sram/b_a elements, d = H.

    ``smooth`` drops the ceiling (a continuous relaxation, for solving crossovers in closed form)
    and keeps at least one row: B_c = max(1, M/(4d)).
    """
    ratio = M_sram / (4 * H * b_a)
    b_c = Max(1, ratio) if smooth else ceiling(ratio)
    return b_c, Min(b_c, H)


def _blocks(rows: Expr, block: Expr, smooth: bool) -> Expr:
    """⌈rows/block⌉, or its relaxation max(1, rows/block): at least one block."""
    return Max(1, rows / block) if smooth else ceiling(rows / block)


def long_prompts(expr: Expr) -> Expr:
    """A relaxed (smooth) expression in its long-prompt regime: every max(1, x) block count or
    block size taken as x (T ≥ B_c and M_sram ≥ 4·H·b_a), for limits and leading terms."""
    return expr.replace(lambda e: isinstance(e, Max) and Integer(1) in e.args,
                        lambda e: next(a for a in e.args if a != 1))


def tiled_bytes(causal: bool = True, smooth: bool = False) -> Expr:
    """Algorithm 1, per query head: K, V read once; O, ℓ, m initialised; then, for each of the
    T_c column blocks, every row still under the mask reads Q_i, O_i, ℓ_i, m_i and writes O_i,
    ℓ_i, m_i: (3H + 4) elements per visited row.

    Visited rows: T·T_c, or causally Σ_j (T − j·B_c) = T·T_c − B_c·T_c(T_c − 1)/2.
    Theorem 2: Θ(T²H²/M) HBM accesses.
    """
    b_c, _ = block_sizes(smooth)
    t_c = _blocks(T, b_c, smooth)
    rows = T * t_c - b_c * t_c * (t_c - 1) / 2 if causal else T * t_c
    per_head = 2 * T * H + (T * H + 2 * T) + rows * (3 * H + 4)
    return B * n_q * b_a * per_head


def row_block(mode: str, smooth: bool = False) -> Expr:
    """B_r, the query rows of one thread block in the FlashAttention-2 order: Algorithm 1's
    min(⌈M/(4d)⌉, d) (``tiled_fa2``) or the kernels' 128 (``kernel``)."""
    if mode == "kernel":
        return KERNEL_ROWS
    if mode == "tiled_fa2":
        return block_sizes(smooth)[1]
    raise ValueError(f"{mode!r} has no row blocks in the FlashAttention-2 order")


def kernel_bytes(causal: bool = True, smooth: bool = False) -> Expr:
    """The FlashAttention-2 order at the released kernels' B_r = 128 (:data:`KERNEL_ROWS`):
    :func:`tiled_fa2_bytes` with that row block."""
    return tiled_fa2_bytes(causal, smooth, KERNEL_ROWS)


def tiled_fa2_bytes(causal: bool = True, smooth: bool = False, rows: Expr | None = None) -> Expr:
    """FlashAttention-2 order, per query head: Q read once, O and the logsumexp written once;
    K and V read once per row block: 2·H elements per visited key row. ``rows`` is the row
    block B_r (Algorithm 1's by default).

    Visited key rows: T·T_r, or causally Σ_i min((i+1)·B_r, T) = T + B_r·T_r(T_r − 1)/2.
    With B_r = min(⌈M/(4d)⌉, d) the re-reads stop falling once M ≥ 4·d² elements
    (M_sram ≥ 4·H²·b_a bytes): beyond it the non-causal traffic is ≈ 2·T²·(H/B_r) = 2·T² per
    head (T² causally).
    """
    b_r = block_sizes(smooth)[1] if rows is None else rows
    t_r = _blocks(T, b_r, smooth)
    keys = T + b_r * t_r * (t_r - 1) / 2 if causal else T * t_r
    per_head = 2 * T * H + T + 2 * H * keys
    return B * n_q * b_a * per_head


def ideal_bytes(queries: Expr = T, keys: Expr | None = None) -> Expr:
    """Q and O once per query head, K and V once per key/value head: the lower bound.

    >>> ideal_bytes()
    B*H*b_a*(2*T*n_kv + 2*T*n_q)
    """
    keys = queries if keys is None else keys
    return B * H * b_a * (2 * n_q * queries + 2 * n_kv * keys)


def hbm_bytes(mode: str, causal: bool = True, smooth: bool = False) -> Expr:
    """HBM bytes of one layer's prefill attention in the named mode."""
    if mode == "naive":
        return naive_bytes()
    if mode == "tiled":
        return tiled_bytes(causal, smooth)
    if mode == "tiled_fa2":
        return tiled_fa2_bytes(causal, smooth)
    if mode == "kernel":
        return kernel_bytes(causal, smooth)
    if mode == "ideal":
        return ideal_bytes()
    raise ValueError(f"unknown attention mode {mode!r}; valid: {', '.join(MODES)}")


def mode_flops(mode: str, causal: bool = True) -> Expr:
    """FLOPs a mode performs: naive computes every score; the fused modes skip masked blocks."""
    return flops(causal=causal and mode != "naive")


def entries() -> list[Entry]:
    per_layer = "one layer; B sequences of T tokens; n_q query heads, n_kv key/value heads of H"
    causal = "causal mask: T(T+1)/2 query–key pairs (fused modes); naive computes all T² scores"
    smooth_note = "continuous relaxation: ceilings of B_c and T/B_c dropped"
    b_c, b_r = block_sizes()
    out = [
        Entry("attention.flops", flops(), "matmul FLOPs of causal attention (QKᵀ and PV)",
              "FLOP", f"{FA2} §4.1: 4·seqlen²·head dim·heads, halved with a causal mask",
              (per_layer, causal, "softmax FLOPs not counted")),
        Entry("attention.flops.noncausal", flops(causal=False),
              "matmul FLOPs of non-causal attention", "FLOP", f"{FA2} §4.1", (per_layer,)),
        Entry("attention.naive.bytes", naive_bytes(),
              "HBM bytes of standard attention (S and P through HBM)", "bytes",
              f"{FA1} Algorithm 0; Theorem 2 (Θ(Nd + N²))", (per_layer,)),
        Entry("attention.naive.score_bytes", score_bytes(),
              "footprint of the materialised T×T scores, all heads and sequences", "bytes",
              f"{FA1} Algorithm 0", (per_layer, "P overwrites S in place")),
        Entry("attention.tiled.block_c", b_c, "column block B_c = ⌈M/(4d)⌉ (rows of K, V)",
              "tokens", f"{FA1} Algorithm 1, line 1", ("M = M_sram/b_a elements",)),
        Entry("attention.tiled.block_r", b_r, "row block B_r = min(⌈M/(4d)⌉, d) (rows of Q)",
              "tokens", f"{FA1} Algorithm 1, line 1", ("M = M_sram/b_a elements",)),
        Entry("attention.tiled.bytes", tiled_bytes(),
              "HBM bytes of FlashAttention (Algorithm 1), causal", "bytes",
              f"{FA1} Algorithm 1; Theorem 2 (Θ(N²d²M⁻¹))", (per_layer, causal)),
        Entry("attention.tiled.bytes.smooth", tiled_bytes(smooth=True),
              "Algorithm 1's HBM bytes without ceilings (for closed forms)", "bytes",
              f"{FA1} Algorithm 1", (per_layer, causal, smooth_note)),
        Entry("attention.tiled_fa2.bytes", tiled_fa2_bytes(),
              "HBM bytes in FlashAttention-2's loop order, causal", "bytes",
              f"{FA2} Algorithm 1 and §3.1 (loop order); block sizes from {FA1}",
              (per_layer, causal, "B_r = min(⌈M/(4d)⌉, d): no gain from SRAM beyond 4·d²·b_a")),
        Entry("attention.kernel.bytes", kernel_bytes(),
              "bytes into SRAM of the released kernels' schedule (FlashAttention-2 order, "
              "128-row tiles), causal; its HBM bytes without a cache", "bytes",
              f"{FA2} Algorithm 1; 128-row tiles of its CUDA kernels "
              "(flash_fwd_launch_template.h) and of FlashAttention-3 (arXiv 2407.08608)",
              (per_layer, causal, "B_r = 128 query rows per thread block")),
        Entry("attention.ideal.bytes", ideal_bytes(),
              "HBM bytes of ideal fused attention: Q, K, V read once, O written once", "bytes",
              "scaling-book 'All About Transformer Inference' (attention intensity S·T/(S+T))",
              (per_layer, "GQA: K, V once per key/value head")),
    ]
    for mode in MODES:
        i = mode_flops(mode) / hbm_bytes(mode)
        out.append(Entry(f"attention.{mode}.intensity", i,
                         f"arithmetic intensity of {mode} attention", "FLOP/byte",
                         out[0].source + "; bytes as attention." + mode, (per_layer, causal)))
    return out
