"""Tile and wave quantization (roofline.derive.shapes) against hand arithmetic and against
brute-force counts, and its figure (roofline.plot.shapes)."""

import random
from dataclasses import replace
from fractions import Fraction

import pytest
from sympy import Integer, Rational, Symbol, parse_expr, sstr

from roofline.derive import shapes
from roofline.errors import InputError
from roofline.specs.hardware import load_hardware
from roofline.specs.model import load_model
from roofline.symbols import B, B_m, B_n, B_r, N_sm, T, d_out, local_dict, n_cta, n_q

H100, A100 = 132, 108  # SMs


def at(expr, **values):
    """``expr`` with the project's symbols (which carry assumptions) set to integers."""
    symbols = {"T": T, "d_out": d_out, "B_m": B_m, "B_n": B_n, "B_r": B_r, "N_sm": N_sm,
               "n_cta": n_cta, "n_q": n_q, "B": B}
    return expr.xreplace({symbols[k]: Integer(v) for k, v in values.items()})


def gemm(expr, rows, cols, sms, tile=(128, 128), per_sm=1):
    return at(expr, T=rows, d_out=cols, B_m=tile[0], B_n=tile[1], N_sm=sms, n_cta=per_sm)


# (rows, cols, SMs, tile): (tiles, waves, tile efficiency, wave efficiency, efficiency), by hand
HAND = {
    # H100: 2048/128 = 16 row tiles, 4096/128 = 32 column tiles: 512 tiles; 3·132 = 396 < 512
    # ≤ 528 = 4·132: 4 waves; every tile full; efficiency 512/528 = 32/33
    (2048, 4096, H100, (128, 128)): (512, 4, 1, Rational(32, 33), Rational(32, 33)),
    # H100: ⌈64/128⌉ = 1 row tile (64 of its 128 rows used), ⌈2112/128⌉ = ⌈16.5⌉ = 17 column
    # tiles (2112 of 2176 columns used): 17 tiles, 1 wave; tile efficiency 64·2112/(128·2176) =
    # 33/68; wave efficiency 17/132; efficiency 64·2112/(132·128·128) = 135168/2162688 = 1/16
    (64, 2112, H100, (128, 128)): (17, 1, Rational(33, 68), Rational(17, 132),
                                   Rational(1, 16)),
    # H100: ⌈1000/128⌉ = 8 row tiles (1000 of 1024 rows), 32 column tiles: 256 tiles, 2 waves
    # (132 < 256 ≤ 264); tile efficiency 1000/1024 = 125/128, wave 256/264 = 32/33; product
    # 4000/4224 = 125/132
    (1000, 4096, H100, (128, 128)): (256, 2, Rational(125, 128), Rational(32, 33),
                                     Rational(125, 132)),
    # H100, 128 × 256 tiles: 8 row tiles, 6144/256 = 24 column tiles: 192 tiles, 2 waves;
    # 125/128 · 192/264 = 125/128 · 8/11 = 125/176
    (1000, 6144, H100, (128, 256)): (192, 2, Rational(125, 128), Rational(8, 11),
                                     Rational(125, 176)),
    # A100: 512 tiles; 4·108 = 432 < 512 ≤ 540 = 5·108: 5 waves; 512/540 = 128/135
    (2048, 4096, A100, (128, 128)): (512, 5, 1, Rational(128, 135), Rational(128, 135)),
    # A100: 17 tiles, 1 wave: 33/68 · 17/108 = 64·2112/(108·128·128) = 135168/1769472 = 11/144
    (64, 2112, A100, (128, 128)): (17, 1, Rational(33, 68), Rational(17, 108),
                                   Rational(11, 144)),
    # A100: 256 tiles; 216 < 256 ≤ 324: 3 waves; 256/324 = 64/81; 125/128 · 64/81 = 125/162
    (1000, 4096, A100, (128, 128)): (256, 3, Rational(125, 128), Rational(64, 81),
                                     Rational(125, 162)),
    # A100, 128 × 256: 192 tiles, 2 waves of 108; 192/216 = 8/9; 125/128 · 8/9 = 125/144
    (1000, 6144, A100, (128, 256)): (192, 2, Rational(125, 128), Rational(8, 9),
                                     Rational(125, 144)),
}


@pytest.mark.parametrize("shape", list(HAND), ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}SM-{s[3]}")
def test_hand_computed_gemms(shape) -> None:
    rows, cols, sms, tile = shape
    tiles, waves, tile_eff, wave_eff, eff = HAND[shape]
    t = shapes.gemm_tiles()
    assert gemm(t, rows, cols, sms, tile) == tiles
    assert gemm(shapes.waves(t), rows, cols, sms, tile) == waves
    assert gemm(shapes.tile_efficiency(), rows, cols, sms, tile) == tile_eff
    assert gemm(shapes.wave_efficiency(t), rows, cols, sms, tile) == wave_eff
    assert gemm(shapes.gemm_efficiency(), rows, cols, sms, tile) == eff
    assert tile_eff * wave_eff == eff


def test_explicit_rows_and_columns() -> None:
    """The arguments stand for T and d_out: another projection's width, a number."""
    e = shapes.gemm_efficiency(T, 28672)  # 8 row tiles × 224 column tiles = 1792 tiles
    # 1792 = 13·132 + 76: 14 waves; efficiency 1000·28672 / (14·132·128·128)
    # = 28672000 / 30277632 = 125/132 (30277632 / 132 = 229376, · 125 = 28672000)
    assert at(e, T=1000, B_m=128, B_n=128, N_sm=H100, n_cta=1) == Rational(125, 132)


def test_efficiency_is_one_when_everything_divides() -> None:
    # 1536 = 12·128 rows, 1408 = 11·128 columns: 132 tiles, one full wave of 132
    assert gemm(shapes.gemm_efficiency(), 1536, 1408, H100) == 1
    # two thread blocks per SM: 24·11 = 264 tiles = one wave of 2·132
    assert gemm(shapes.gemm_efficiency(), 24 * 128, 1408, H100, per_sm=2) == 1
    # 4·27 = 108 tiles of 256 × 128 on the A100 (the guide's wave of 108)
    assert gemm(shapes.gemm_efficiency(), 1024, 27 * 128, A100, tile=(256, 128)) == 1
    # symbolically: rows c·N_sm·n_cta·B_m, cols B_n (c a positive integer)
    c = Symbol("c", positive=True, integer=True)
    assert shapes.gemm_efficiency(c * N_sm * n_cta * B_m, B_n) == 1


def _efficiency(rows: int, cols: int, sms: int, m: int = 128, n: int = 128) -> Fraction:
    """By hand: rows·cols over waves·sms·m·n, in integers."""
    tiles = -(-rows // m) * -(-cols // n)
    return Fraction(rows * cols, -(-tiles // sms) * sms * m * n)


def test_bounded_and_saw_tooth_over_T() -> None:
    narrow = gemm(shapes.gemm_efficiency(), 1, 4096, H100)
    e = shapes.gemm_efficiency().xreplace({B_m: Integer(128), B_n: Integer(128),
                                          N_sm: Integer(H100), n_cta: Integer(1)})
    assert narrow == Rational(1, 528)  # T = 1: 1·4096 / (1·132·128·128)
    for cols in (4096, 28672):
        at_cols = e.xreplace({d_out: Integer(cols)})
        values = [at_cols.xreplace({T: Integer(t)}) for t in range(1, 601)]
        assert all(0 < v <= 1 for v in values)
        assert values == [_efficiency(t, cols, H100) for t in range(1, 601)]
        drops = [t for t in range(1, 600) if values[t] < values[t - 1]]  # T → T + 1 falls
        if cols == 4096:
            # 32 column tiles: 4 rows (T ≤ 512) are 128 tiles, one wave; the 5th row makes 160
            # tiles, two waves: the only drop up to 600 is 512 → 513
            assert drops == [512]
            assert values[511] == Rational(32, 33) and values[512] == Rational(513, 1056)
            assert values[128] > values[127]  # 128 → 129: a new row, but still one wave
        else:
            # 224 column tiles, more than a wave: each new row of tiles adds a wave, so it
            # drops just after each multiple of B_m
            assert drops == [128, 256, 384, 512]
            for k in range(1, 5):
                assert values[k * 128 - 1] > values[k * 128]  # T = k·B_m against k·B_m + 1


def test_attention_hand_computed() -> None:
    e = shapes.attention_efficiency()
    # H100, T = 1000, 32 heads, 1 sequence: ⌈1000/128⌉ = 8 query tiles × 32 heads = 256 blocks,
    # 2 waves of 132: 1000/1024 · 256/264 = 125/128 · 32/33 = 125/132
    h100 = dict(T=1000, B_r=128, n_q=32, B=1, N_sm=H100, n_cta=1)
    assert at(shapes.attention_blocks(), T=1000, B_r=128, n_q=32, B=1) == 256
    assert at(e, **h100) == Rational(125, 132)
    # A100, 2 sequences: 8·32·2 = 512 blocks, ⌈512/108⌉ = 5 waves: 512/540 = 128/135;
    # 125/128 · 128/135 = 125/135 = 25/27
    assert at(e, **{**h100, "B": 2, "N_sm": A100}) == Rational(25, 27)
    # a whole number of query tiles filling whole waves: 4 tiles × 33 heads = 132 blocks
    assert at(e, **{**h100, "T": 512, "n_q": 33}) == 1


def _simulate(rows: int, cols: int, m: int, n: int, slots: int) -> tuple[int, int, int]:
    """(tiles, waves, busy slot-outputs) by brute force: the tiles at each output origin, each
    handed to the next free slot; all slots take their tiles at once, a wave at a time."""
    queue = [(r, c) for r in range(0, rows, m) for c in range(0, cols, n)]
    waves = useful = 0
    while queue:
        wave, queue = queue[:slots], queue[slots:]
        waves += 1
        useful += sum(min(m, rows - r) * min(n, cols - c) for r, c in wave)
    return len([(r, c) for r in range(0, rows, m) for c in range(0, cols, n)]), waves, useful


def test_brute_force_tiles_and_waves() -> None:
    rng = random.Random(2024)
    t = shapes.gemm_tiles()
    forms = (t, shapes.waves(t), shapes.tile_efficiency(), shapes.wave_efficiency(t),
             shapes.gemm_efficiency())
    for _ in range(150):
        rows, cols = rng.randint(1, 300), rng.randint(1, 300)
        m, n = rng.choice((16, 32, 64, 128)), rng.choice((8, 16, 32, 64, 128))
        sms, per = rng.randint(1, 20), rng.randint(1, 3)
        tiles, waves, useful = _simulate(rows, cols, m, n, sms * per)
        assert useful == rows * cols
        got = [at(f, T=rows, d_out=cols, B_m=m, B_n=n, N_sm=sms, n_cta=per) for f in forms]
        assert got == [tiles, waves, Rational(useful, tiles * m * n),
                       Rational(tiles, waves * sms * per),
                       Rational(useful, waves * sms * per * m * n)]


def test_the_library_takes_the_best_of_its_tiles_by_brute_force() -> None:
    """library_efficiency is the best simulated efficiency of the tiles B_m × B_n,
    B_m × B_n/2 and B_m/2 × B_n/2, each counted tile by tile and wave by wave."""
    rng = random.Random(29)
    for _ in range(60):
        rows, cols = rng.randint(1, 400), rng.randint(1, 400)
        m, n = rng.choice((32, 64, 128)), rng.choice((32, 64, 128, 256))
        sms, per = rng.randint(1, 40), rng.randint(1, 2)
        best = 0
        for tm, tn in ((m, n), (m, n // 2), (m // 2, n // 2)):
            tiles, waves, useful = _simulate(rows, cols, tm, tn, sms * per)
            best = max(best, Rational(useful, waves * sms * per * tm * tn))
        assert at(shapes.library_efficiency(), T=rows, d_out=cols, B_m=m, B_n=n, N_sm=sms,
                  n_cta=per) == best


def test_brute_force_attention_blocks() -> None:
    rng = random.Random(7)
    for _ in range(100):
        rows, r = rng.randint(1, 700), rng.choice((64, 128, 176))
        heads, batch, sms, per = rng.randint(1, 40), rng.randint(1, 4), rng.randint(1, 30), \
            rng.randint(1, 2)
        blocks = [(q, h, b) for q in range(0, rows, r) for h in range(heads)
                  for b in range(batch)]
        slots, waves, left = sms * per, 0, len(blocks)
        while left > 0:
            left -= slots
            waves += 1
        values = dict(T=rows, B_r=r, n_q=heads, B=batch, N_sm=sms, n_cta=per)
        assert at(shapes.attention_blocks(), **values) == len(blocks)
        # useful query rows over the slots' rows: rows·heads·batch / (waves·slots·B_r)
        assert at(shapes.attention_efficiency(), **values) == \
            Rational(rows * heads * batch, waves * slots * r)


def test_time_steps_in_whole_waves_of_whole_tiles() -> None:
    k = Symbol("k", positive=True, integer=True)
    e = shapes.gemm_efficiency()
    assert 2 * T * d_out * k / e == shapes.waves(shapes.gemm_tiles()) * N_sm * n_cta * B_m \
        * B_n * 2 * k


def test_entries() -> None:
    entries = shapes.entries()
    names = [e.name for e in entries]
    assert names == ["shapes.gemm_tiles", "shapes.waves", "shapes.tile_efficiency",
                     "shapes.wave_efficiency", "shapes.gemm_efficiency",
                     "shapes.library_efficiency", "shapes.attention_blocks",
                     "shapes.attention_efficiency"]
    for e in entries:
        assert e.topic == "shapes" and e.unit == "1" and e.source
        assert not e.expr.atoms(float) and parse_expr(sstr(e.expr), local_dict()) == e.expr
    by_name = dict(zip(names, entries))
    assert by_name["shapes.gemm_efficiency"].expr == shapes.gemm_efficiency()
    assert "Tile Quantization" in by_name["shapes.gemm_efficiency"].source
    assert "Wave Quantization" in by_name["shapes.gemm_efficiency"].source


# --- the figure ---------------------------------------------------------------------------

FALLBACK = {"gemm_tile_m": 128, "gemm_tile_n": 128, "attention_tile": 128, "ctas_per_sm": 1}


def _h100():
    hw = load_hardware("H100-SXM")
    return hw if hw.estimate else replace(hw, estimate=FALLBACK)  # before [estimate] lands


def test_figure_draws(tmp_path) -> None:
    from roofline.plot import shapes as figure

    path = figure.draw(tmp_path / "shapes.png", _h100(), load_model("Llama-3-8B"))
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Llama-3-8B: QKV (32 + 2·8)·128 = 6144; O and down 4096; up and gate 2·14336 = 28672
    assert figure.gemm_widths(load_model("Llama-3-8B")) == [
        ("QKV", 6144), ("O, MLP down", 4096), ("MLP up, gate", 28672)]


def test_figure_refuses_what_it_cannot_draw(tmp_path) -> None:
    from roofline.plot import shapes as figure

    bare = replace(load_hardware("H100-SXM"), estimate={})
    with pytest.raises(InputError, match="estimate"):
        figure.draw(tmp_path / "a.png", bare, load_model("Llama-3-8B"))
    with pytest.raises(InputError, match="mixture of experts"):
        figure.draw(tmp_path / "b.png", _h100(), load_model("Mixtral-8x7B"))
    with pytest.raises(InputError, match="prompts"):
        figure.draw(tmp_path / "c.png", _h100(), load_model("Llama-3-8B"), prompts=[0, 5])
    assert not list(tmp_path.iterdir())
