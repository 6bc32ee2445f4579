"""Tile and wave quantization: the share of a GPU's peak work that a GEMM or an attention
kernel of a given shape can use, exact, with ``ceiling``.

A GPU computes a GEMM's M × N output in tiles of B_m × B_n outputs, one thread block each,
each stepping through the K dimension (NVIDIA, *Matrix Multiplication Background User's
Guide*, docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/, "GPU
Implementation"). Two effects follow, both in that guide's "Dimension Quantization Effects":

- **Tile quantization** (section "Tile Quantization"): where M or N is not a multiple of the
  tile, the last row or column of tiles is partly empty but costs a whole tile. A T × d_out
  output takes ⌈T/B_m⌉·⌈d_out/B_n⌉ tiles; of the ⌈T/B_m⌉B_m·⌈d_out/B_n⌉B_n outputs they
  compute, T·d_out are wanted (:func:`tile_efficiency`).
- **Wave quantization** (section "Wave Quantization"): the tiles run in waves of as many as
  the GPU holds at once, N_sm SMs × n_cta tiles each (the guide's A100: 108 SMs, one 256 × 128
  tile per SM, a wave of 108 tiles); a last wave that is partly full takes as long as a full
  one. ``tiles`` tiles take ⌈tiles/(N_sm·n_cta)⌉ waves (:func:`waves`), of whose slots
  tiles/(waves·N_sm·n_cta) are busy (:func:`wave_efficiency`).

Their product (:func:`gemm_efficiency`) is the fraction of peak work the shape can use: the
kernel's time steps in whole waves of whole tiles, 2·rows·cols·k / (P·efficiency) =
waves·(N_sm·n_cta)·B_m·B_n·2k / P. It saw-tooths in T: it falls just past each multiple of
B_m (a new row of tiles, nearly empty) and just past each wave's worth of tiles (a new wave,
nearly empty), and climbs between.

Attention is quantized the same way over query tiles: FlashAttention-2's forward kernel
launches one thread block per B_r query rows per sequence per head (``run_flash_fwd`` in
Dao-AILab/flash-attention ``csrc/flash_attn/src/flash_fwd_launch_template.h``:
``num_m_block = ceil(seqlen_q / kBlockM)``, ``dim3 grid(num_m_block, params.b, params.h)``),
and FlashAttention-3's ``SingleTileScheduler`` the grid (num_blocks, num_head, num_batch);
its persistent schedulers run the same num_blocks·num_head·num_batch tiles over N_sm thread
blocks (``hopper/tile_scheduler.hpp``). The causal mask makes a later query tile's work
larger than an earlier one's; that imbalance between blocks is NOT modelled here: every block
counts as one equal slot of a wave (FA3's longest-first scheduler exists to even it out).

The roofline bound ignores both effects (a bound takes every FLOP at peak); they enter only the
estimate beside it, which divides a kernel's compute time by its efficiency. Split-K, stream-K
and other schedules that divide the K dimension across thread blocks shrink wave quantization
and are not modelled: the guide's one-tile-per-block tiling is.
"""

from __future__ import annotations

from dataclasses import replace

from sympy import Expr, Max, Rational, ceiling

from ..symbols import B, B_m, B_n, B_r, N_sm, P_peak, T, d_in, d_out, n_cta, n_q
from .entry import Entry

__all__ = ["gemm_tiles", "waves", "tile_efficiency", "wave_efficiency", "gemm_efficiency",
           "library_efficiency", "TILE_FAMILY", "LIBRARY", "attention_blocks", "attention_efficiency", "entries", "SOURCE", "FLASH_GRID"]

_GUIDE = ("NVIDIA, Matrix Multiplication Background User's Guide (docs.nvidia.com/deeplearning/"
          "performance/dl-performance-matrix-multiplication/)")
SOURCE = f"{_GUIDE}, Dimension Quantization Effects: Tile Quantization, Wave Quantization"
FLASH_GRID = ("FlashAttention-2's forward launch grid (num_m_block = ceil(seqlen_q/kBlockM), "
              "dim3 grid(num_m_block, b, h): Dao-AILab/flash-attention csrc/flash_attn/src/"
              "flash_fwd_launch_template.h, run_flash_fwd); FlashAttention-3's tile schedulers "
              "(hopper/tile_scheduler.hpp: num_blocks·num_head·num_batch tiles)")


def gemm_tiles(rows: Expr = T, cols: Expr = d_out) -> Expr:
    """Output tiles of a rows × cols GEMM output: ⌈rows/B_m⌉·⌈cols/B_n⌉ (the guide's "Tile
    Quantization": each B_m × B_n output tile is one thread block, a partial one included).

    >>> gemm_tiles().subs({T: 2048, d_out: 4096, B_m: 128, B_n: 128})
    512
    >>> gemm_tiles().subs({T: 129, d_out: 4096, B_m: 128, B_n: 128})  # 2 rows of 32 tiles
    64
    """
    return ceiling(rows / B_m) * ceiling(cols / B_n)


def waves(tiles: Expr) -> Expr:
    """Waves that ``tiles`` tiles take: ⌈tiles/(N_sm·n_cta)⌉ (the guide's "Wave
    Quantization": a wave is as many tiles as the SMs run at once, n_cta on each of N_sm).

    >>> waves(gemm_tiles()).subs({T: 2048, d_out: 4096, B_m: 128, B_n: 128, N_sm: 132,
    ...                           n_cta: 1})
    4
    """
    return ceiling(tiles / (N_sm * n_cta))


def tile_efficiency(rows: Expr = T, cols: Expr = d_out) -> Expr:
    """Useful outputs over computed ones: rows·cols / (⌈rows/B_m⌉B_m·⌈cols/B_n⌉B_n) (the
    guide's "Tile Quantization"); 1 where B_m divides rows and B_n divides cols.

    >>> tile_efficiency().subs({T: 64, d_out: 2112, B_m: 128, B_n: 128})  # 64/128 · 2112/2176
    33/68
    """
    return rows * cols / (ceiling(rows / B_m) * B_m * ceiling(cols / B_n) * B_n)


def wave_efficiency(tiles: Expr) -> Expr:
    """Busy tile slots over the slots of the waves run: tiles / (waves(tiles)·N_sm·n_cta)
    (the guide's "Wave Quantization"); 1 where the tiles fill whole waves.

    >>> wave_efficiency(512).subs({N_sm: 132, n_cta: 1})  # 512 tiles in 4 waves of 132
    32/33
    """
    return tiles / (waves(tiles) * N_sm * n_cta)


def gemm_efficiency(rows: Expr = T, cols: Expr = d_out) -> Expr:
    """The fraction of peak work a rows × cols GEMM output can use: tile_efficiency ×
    wave_efficiency(gemm_tiles) = rows·cols / (waves·N_sm·n_cta·B_m·B_n) (the tile counts
    cancel). The estimate divides a GEMM's compute time by it: with k the inner dimension,
    2·rows·cols·k / efficiency = waves·(N_sm·n_cta)·B_m·B_n·2k, i.e. the time steps with whole
    waves of whole tiles, each tile B_m·B_n·2k FLOPs (the guide's "Tile Quantization" and
    "Wave Quantization").

    >>> e = gemm_efficiency()
    >>> e.subs({T: 2048, d_out: 4096, B_m: 128, B_n: 128, N_sm: 132, n_cta: 1})
    32/33
    >>> tiles = gemm_tiles()
    >>> 2 * T * d_out * d_in / e == waves(tiles) * N_sm * n_cta * B_m * B_n * 2 * d_in
    True
    """
    return tile_efficiency(rows, cols) * wave_efficiency(gemm_tiles(rows, cols))


# the tiles a GEMM library offers beside the device file's (B_m × B_n): halved along the columns,
# and along both; it picks one per shape (cuBLAS's heuristics)
TILE_FAMILY = ((1, 1), (1, Rational(1, 2)), (Rational(1, 2), Rational(1, 2)))
LIBRARY = ("cuBLAS picks its tile per shape: Hugging Face, 'Profiling in PyTorch (Part 2): "
           "From nn.Linear to a Fused MLP' (huggingface.co/blog/torch-mlp-fusion, 2026), an "
           "A100's traces run ampere_bf16_s16816gemm_bf16_128x128 for N = 3,072 and _128x256 "
           "for N = 768 of the same M and FLOPs")


def library_efficiency(rows: Expr = T, cols: Expr = d_out) -> Expr:
    """The :func:`gemm_efficiency` of the tile a GEMM library would choose for the shape: the
    best of the device's B_m × B_n, B_m × B_n/2 and B_m/2 × B_n/2 (:data:`TILE_FAMILY`), as
    cuBLAS's heuristics choose a tile per shape (:data:`LIBRARY`). A smaller tile's lower
    reuse is not charged. The estimate divides a projection's compute time by it.

    >>> e = library_efficiency().subs({d_out: 6144, B_m: 128, B_n: 128, N_sm: 108, n_cta: 1})
    >>> e.subs(T, 128)  # 48 tiles of 128 × 128 in a wave of 108; 96 of 128 × 64: the better
    8/9
    """
    return Max(*(gemm_efficiency(rows, cols).xreplace({B_m: B_m * a, B_n: B_n * b})
                 for a, b in TILE_FAMILY), evaluate=False)  # none bounds another: no comparison


def attention_blocks(rows: Expr = T, heads: Expr = n_q, batch: Expr = B) -> Expr:
    """Thread blocks of a FlashAttention-2/3 forward pass: ⌈rows/B_r⌉·heads·batch, one per
    query tile of B_r rows, per query head, per sequence (FlashAttention-2's launch grid
    (⌈seqlen_q/kBlockM⌉, b, h); FlashAttention-3's tile schedulers).

    >>> attention_blocks().subs({T: 1000, B_r: 128, n_q: 32, B: 1})  # 8 tiles × 32 heads
    256
    """
    return ceiling(rows / B_r) * heads * batch


def attention_efficiency(rows: Expr = T, heads: Expr = n_q, batch: Expr = B) -> Expr:
    """The fraction of peak work FlashAttention's forward pass can use: its tile efficiency
    rows/(⌈rows/B_r⌉B_r) times the wave efficiency of its :func:`attention_blocks`. Every
    block counts as one equal slot: the causal mask's imbalance (a later query tile attends to
    more keys) is not modelled.

    >>> attention_efficiency().subs({T: 1000, B_r: 128, n_q: 32, B: 1, N_sm: 132, n_cta: 1})
    125/132
    """
    blocks = attention_blocks(rows, heads, batch)
    return rows / (ceiling(rows / B_r) * B_r) * wave_efficiency(blocks)


def entries() -> list[Entry]:
    gemm = "a T × d_out GEMM output (T tokens, d_out output features, d_in inner)"
    tiles = "one thread block per B_m × B_n output tile; n_cta of them at once on each of N_sm SMs"
    attn = "FlashAttention-2/3 forward: one thread block per B_r query rows per head per sequence"
    even = "every block one equal slot of a wave: the causal imbalance between blocks ignored"
    estimate = "enters the estimate only: the roofline bound ignores it"
    t = gemm_tiles()
    out = [
        Entry("shapes.gemm_tiles", t, "output tiles (thread blocks) of a T × d_out GEMM", "1",
              f"{_GUIDE}, Tile Quantization", (gemm, tiles)),
        Entry("shapes.waves", waves(t), "waves a T × d_out GEMM's tiles take", "1",
              f"{_GUIDE}, Wave Quantization", (gemm, tiles)),
        Entry("shapes.tile_efficiency", tile_efficiency(),
              "useful outputs over computed outputs of a T × d_out GEMM", "1",
              f"{_GUIDE}, Tile Quantization", (gemm, tiles, estimate)),
        Entry("shapes.wave_efficiency", wave_efficiency(t),
              "busy tile slots over the slots of the waves a T × d_out GEMM runs", "1",
              f"{_GUIDE}, Wave Quantization", (gemm, tiles, estimate)),
        Entry("shapes.gemm_efficiency", gemm_efficiency(),
              "fraction of peak work a T × d_out GEMM can use (tile × wave efficiency)", "1",
              SOURCE, (gemm, tiles, "K not split across thread blocks (no split-K, stream-K)",
                       estimate),
              steps=(("tile efficiency", tile_efficiency()),
                     ("wave efficiency", wave_efficiency(t)),
                     ("compute time at peak P_peak: 2·T·d_out·d_in / (P_peak·efficiency)",
                      2 * T * d_out * d_in / (P_peak * gemm_efficiency())))),
        Entry("shapes.library_efficiency", library_efficiency(),
              "fraction of peak work a T × d_out GEMM can use at the best of the library's "
              "tiles (the estimate's)", "1", f"{SOURCE}; {LIBRARY}",
              (gemm, "tiles B_m × B_n, B_m × B_n/2 and B_m/2 × B_n/2: the best for the shape",
               "a smaller tile's lower reuse not charged", estimate)),
        Entry("shapes.attention_blocks", attention_blocks(),
              "thread blocks of FlashAttention's forward pass over B sequences of T tokens", "1",
              FLASH_GRID, (attn,)),
        Entry("shapes.attention_efficiency", attention_efficiency(),
              "fraction of peak work FlashAttention's forward pass can use (query tiles and "
              "waves)", "1", f"{SOURCE}; {FLASH_GRID}", (attn, even, estimate),
              steps=(("query-tile efficiency", T / (ceiling(T / B_r) * B_r)),
                     ("wave efficiency of the blocks", wave_efficiency(attention_blocks())))),
    ]
    return [replace(e, topic="shapes") for e in out]
