"""Fused attention over a memory hierarchy: the SRAM of the SMs, the caches, HBM.

Each tiled schedule of :mod:`roofline.derive.attention` (and of :mod:`roofline.derive.window`)
moves Q_s bytes into the SRAM of the SMs. Whatever the caches, the *compulsory* bytes Q_c come
from HBM: Q read once, K and V read once per key/value head, O written once, and the schedule's
per-row statistics written once (ℓ and m in Algorithm 1's order, one logsumexp in
FlashAttention-2's). The rest, R = Q_s − Q_c, are *re-reads*: K and V read again by each row
block and by each query head of a group (FlashAttention-2 order, ``tiled_fa2`` and ``kernel``),
or Q, O, ℓ and m read again for each key block (Algorithm 1, ``tiled``).

A cache of M bytes between the SMs and HBM serves the re-reads while the data the thread blocks
in flight re-read fit in it (the working set S):

- FlashAttention-2 order: the grid is row blocks × heads × sequences, row blocks fastest, so the
  N_sm thread blocks in flight, B_r query rows each, cover N_sm·B_r/T query heads and
  N_sm·B_r·n_kv/(T·n_q) key/value heads, at least one; each needs the K and V of its keys:
  S = 2·H·b_a·K·max(1, N_sm·B_r·n_kv/(T·n_q)), K = T keys (min(T, W) in a window).
- Algorithm 1: one thread block per sequence and query head (FlashAttention's kernel), which
  re-reads its own Q, O, ℓ and m: S = min(N_sm, B·n_q)·K·(2H + 2)·b_a.
- The miss fraction is s = max(0, 1 − M/S): the misses of a cyclic sweep over S bytes under
  the optimal replacement policy (Belady, "A study of replacement algorithms for a
  virtual-storage computer", IBM Systems Journal 5(2), 1966), which no cache beats: a lower
  bound on the traffic, as a roofline must be.
- Sharing: in the FlashAttention-2 order the blocks in flight on one key/value head stream its
  K and V tiles in the same order at the same time, so a tile fetched once serves all of them:
  g = max(1, min(N_sm, T·n_q/(n_kv·B_r))) blocks per key/value head; a miss costs R/g. In
  Algorithm 1 each block re-reads its own head's data: g = 1.

The levels, nearest the SMs first (``caches``: L2; L2 and L3 on AMD, whose Infinity Cache lies
beyond L2; a TPU's CMEM alone as L3):

- SRAM: Q_s, each byte staged in shared memory read at least once (real kernels read a K or V
  tile once per warp or warpgroup: more);
- the first cache serves Q_s; each further cache serves the misses of the one before,
  Q_c + s·R/g with that one's M;
- HBM: Q_c + s·R/g with the last cache's M (Q_s without a cache: the paper's count).

At small T every re-read hits and HBM moves the compulsory bytes; as T → ∞, s → 1 and HBM tends
to Q_c + R/N_sm, the SRAM-only count when a single block is in flight (N_sm = 1).
"""

from __future__ import annotations

from collections.abc import Sequence

from sympy import Expr, Integer, Max, Min

from ..symbols import B, H, M_l2, M_l3, N_sm, T, W, b_a, beta_l2, beta_l3, beta_sram, n_kv, n_q
from . import attention, window
from .entry import Entry

__all__ = ["CACHES", "LEVELS", "CAPACITY", "BANDWIDTH", "TILED", "compulsory_bytes",
           "schedule_bytes", "rereads", "working_set", "sharing", "miss_fraction", "behind",
           "level_bytes", "entries", "SOURCE"]

# Cache levels a hardware file may give, nearest the SMs first; every level with a bandwidth.
CACHES = ("l2", "l3")
LEVELS = ("sram", "l2", "l3")
CAPACITY = {"l2": M_l2, "l3": M_l3}
BANDWIDTH = {"sram": beta_sram, "l2": beta_l2, "l3": beta_l3}
TILED = ("tiled", "tiled_fa2", "kernel")  # the schedules whose re-reads a cache can serve

SOURCE = ("re-reads of the tiled schedules of FlashAttention (arXiv 2205.14135) Algorithm 1 and "
          "FlashAttention-2 (arXiv 2307.08691); misses under the optimal replacement policy "
          "(Belady 1966); hierarchical roofline: Yang, Kurth & Williams (arXiv 2009.05257)")


def _keys(windowed: bool) -> Expr:
    return Min(T, W) if windowed else T


def schedule_bytes(mode: str, windowed: bool = False, smooth: bool = False,
                   causal: bool = True) -> Expr:
    """Q_s: the bytes the schedule moves into SRAM (its HBM bytes without a cache)."""
    if windowed:
        return window.hbm_bytes(mode, smooth)
    return attention.hbm_bytes(mode, causal, smooth)


def compulsory_bytes(mode: str) -> Expr:
    """Q_c: Q, K, V read once (K and V per key/value head), O written once, and the per-row
    statistics written once: 2 (ℓ, m) in Algorithm 1, 1 (logsumexp) in FlashAttention-2's
    order. A sliding window changes none of these.

    >>> compulsory_bytes("kernel") - attention.ideal_bytes()
    B*T*b_a*n_q
    """
    stats = 2 if mode == "tiled" else 1
    return attention.ideal_bytes() + B * n_q * T * stats * b_a


def rereads(mode: str, windowed: bool = False, smooth: bool = False,
            causal: bool = True) -> Expr:
    """R = Q_s − Q_c: the bytes a cache can serve."""
    return schedule_bytes(mode, windowed, smooth, causal) - compulsory_bytes(mode)


def _key_bytes(windowed: bool) -> Expr:
    """The K and V bytes of one key/value head that its row blocks re-read: 2·H·b_a per key."""
    return 2 * H * b_a * _keys(windowed)


def _in_flight(mode: str, key_bytes: Expr, queries: Expr, smooth: bool) -> Expr:
    """S for a schedule of ``queries`` query rows per head whose key/value heads hold
    ``key_bytes`` each (FlashAttention-2 order), or whose re-read rows are the queries' own
    (Algorithm 1)."""
    if mode == "tiled":
        return Min(N_sm, B * n_q) * queries * (2 * H + 2) * b_a
    rows = attention.row_block(mode, smooth)
    return key_bytes * Max(1, N_sm * rows * n_kv / (queries * n_q))


def _sharing(mode: str, queries: Expr, smooth: bool) -> Expr:
    if mode == "tiled":
        return Integer(1)
    rows = attention.row_block(mode, smooth)
    return Max(1, Min(N_sm, queries * n_q / (n_kv * rows)))


def working_set(mode: str, windowed: bool = False, smooth: bool = False) -> Expr:
    """S: the bytes the thread blocks in flight re-read (see the module's docstring)."""
    return _in_flight(mode, _key_bytes(windowed), T, smooth)


def sharing(mode: str, smooth: bool = False) -> Expr:
    """g: the thread blocks in flight that one fetch of a K or V tile serves."""
    return _sharing(mode, T, smooth)


def miss_fraction(capacity: Expr, mode: str, windowed: bool = False,
                  smooth: bool = False) -> Expr:
    """s = max(0, 1 − M/S): the re-reads that miss a cache of ``capacity`` bytes."""
    return Max(0, 1 - capacity / working_set(mode, windowed, smooth))


def behind(mode: str, caches: Sequence[str], schedule: Expr, compulsory: Expr, key_bytes: Expr,
           queries: Expr, smooth: bool = False) -> tuple[Expr, dict[str, Expr]]:
    """(HBM bytes, {level: bytes it serves}) of a tiled schedule that moves ``schedule`` bytes
    into SRAM, ``compulsory`` of them needed once, over ``queries`` query rows per head whose
    key/value heads hold ``key_bytes`` each, behind the cache levels ``caches`` (names of
    :data:`CACHES`, nearest first). The general form of :func:`level_bytes`: a chunk of chunked
    prefill (:mod:`roofline.derive.service`) is such a schedule too."""
    r, g = schedule - compulsory, _sharing(mode, queries, smooth)
    ws = _in_flight(mode, key_bytes, queries, smooth)
    served = {"sram": schedule, caches[0]: schedule}
    for nearer, further in zip(caches, caches[1:]):
        served[further] = compulsory + Max(0, 1 - CAPACITY[nearer] / ws) * r / g
    return compulsory + Max(0, 1 - CAPACITY[caches[-1]] / ws) * r / g, served


def level_bytes(mode: str, caches: Sequence[str], windowed: bool = False,
                smooth: bool = False, causal: bool = True) -> tuple[Expr, dict[str, Expr]]:
    """(HBM bytes, {level: bytes it serves}) of one layer's attention in ``mode`` behind the
    cache levels ``caches`` (names of :data:`CACHES`, nearest first). A mode without re-reads
    a cache could serve (``naive``, ``ideal``), or no cache, gives its schedule's count and no
    levels. ``causal=False``: every block of the T × T scores (no sliding window)."""
    q_s = schedule_bytes(mode, windowed, smooth, causal)
    if mode not in TILED or not caches:
        return q_s, {}
    return behind(mode, caches, q_s, compulsory_bytes(mode), _key_bytes(windowed), T, smooth)


def entries() -> list[Entry]:
    per_layer = "one layer; B sequences of T tokens; n_q query heads, n_kv key/value heads of H"
    out = []
    for mode in TILED:
        order = "Algorithm 1" if mode == "tiled" else "FlashAttention-2 order"
        hbm, served = level_bytes(mode, ("l2",))
        out += [
            Entry(f"levels.{mode}.compulsory", compulsory_bytes(mode),
                  f"compulsory HBM bytes of {mode} attention (Q, K, V, O and statistics once)",
                  "bytes", SOURCE, (per_layer, order)),
            Entry(f"levels.{mode}.rereads", rereads(mode),
                  f"bytes {mode} attention re-reads, which a cache can serve", "bytes",
                  SOURCE, (per_layer, order, "causal")),
            Entry(f"levels.{mode}.working_set", working_set(mode),
                  f"bytes the thread blocks in flight re-read ({mode})", "bytes", SOURCE,
                  (per_layer, "N_sm thread blocks in flight, one per SM")),
            Entry(f"levels.{mode}.sharing", sharing(mode),
                  f"thread blocks one fetch of a re-read tile serves ({mode})", "1", SOURCE,
                  ("blocks on one key/value head stream its tiles together",)
                  if mode != "tiled" else ("each block re-reads its own head",)),
            Entry(f"levels.{mode}.hbm_bytes", hbm,
                  f"HBM bytes of {mode} attention behind an L2 of M_l2 bytes", "bytes",
                  SOURCE, (per_layer, "misses: max(0, 1 − M_l2/S) of the re-reads, shared")),
            Entry(f"levels.{mode}.l2_bytes", served["l2"],
                  f"bytes the L2 serves to the SMs in {mode} attention", "bytes", SOURCE,
                  (per_layer, "every byte staged in SRAM passes through the L2")),
        ]
    out.append(Entry("levels.kernel.hbm_bytes.l3", level_bytes("kernel", ("l2", "l3"))[0],
                     "HBM bytes of kernel attention behind an L2 and an L3 (AMD Infinity "
                     "Cache)", "bytes", SOURCE, (per_layer, "the L3 serves the L2's misses")))
    return out
