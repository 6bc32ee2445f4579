"""The service derivations against DistServe's printed forms, hand-expanded numbers, and
identities checked by substitution."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st
from sympy import Float, Integer, Min, Rational, Symbol, simplify, solve, summation

from roofline.derive import batching, projection, service
from roofline.derive.transformer import Architecture
from roofline.symbols import (B, D, F, H, K_intra, L, P_peak, R, T, T_chunk, b_a, b_kv, b_w,
                              beta_hbm, n_kv, n_q, n_rep, t_mean, t_pre, t_slo, t_sq)

D_ = Rational(1, 10)  # 0.1 s of prefill
R_ = Integer(5)  # 5 requests/s


def _total(parts):
    return parts[0] + parts[1]


# --- DistServe Eq. 1–3 -------------------------------------------------------------------------
def test_eq1_hand_numbers():
    # 0.1 + 5·0.01 / (2·(1 − 0.5)) = 0.1 + 0.05 = 0.15 s
    assert service.md1().subs({R: R_, t_pre: D_}) == Rational(15, 100)
    assert service.md1_queueing().subs({R: R_, t_pre: D_}) == Rational(5, 100)


def test_eq2_is_distservers_printed_form_and_hand_numbers():
    printed = t_pre + R * t_pre**2 / (4 * (2 - R * t_pre))  # DistServe Eq. 2, right-hand side
    assert simplify(_total(service.inter_op()) - printed) == 0
    # 0.1 + 5·0.01 / (4·(2 − 0.5)) = 0.1 + 0.05/6 = 13/120 s
    assert _total(service.inter_op()).subs({R: R_, t_pre: D_}) == Rational(13, 120)


def test_eq3_is_distservers_printed_form_and_hand_numbers():
    printed = t_pre / K_intra + R * t_pre**2 / (2 * K_intra * (K_intra - R * t_pre))
    assert simplify(_total(service.intra_op()) - printed) == 0
    # K = 1.5: 0.1/1.5 + 0.05 / (3·(1.5 − 0.5)) = 1/15 + 1/60 = 1/12 s
    vals = {R: R_, t_pre: D_, K_intra: Rational(3, 2)}
    assert _total(service.intra_op()).subs(vals) == Rational(1, 12)


def test_replicas_split_the_rate():
    # two replicas at 10/s: each sees 5/s, so 0.15 s as in Eq. 1's example
    assert service.replicas().subs({R: 10, t_pre: D_, n_rep: 2}) == Rational(15, 100)


def test_mg1_with_one_length_is_eq1():
    assert simplify(service.mg1(R, t_pre, t_pre**2) - service.md1()) == 0


def test_mg1_hand_numbers():
    # lengths giving 0.1 s and 0.3 s, equally likely: E[t] = 0.2, E[t²] = (0.01 + 0.09)/2 = 0.05
    # at R = 2: 0.2 + 2·0.05 / (2·(1 − 0.4)) = 0.2 + 1/12 = 17/60
    vals = {R: 2, t_mean: Rational(2, 10), t_sq: Rational(5, 100)}
    assert service.mg1().subs(vals) == Rational(17, 60)


# --- solved forms ------------------------------------------------------------------------------
def test_max_rate_hand_numbers():
    # t = 0.1, target 0.2: R = 2·0.1 / (0.1·0.3) = 20/3
    assert service.max_rate_for_slo().subs({t_pre: D_, t_slo: Rational(2, 10)}) == Rational(20, 3)


fractions = st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(10))


@settings(max_examples=40, deadline=None)
@given(t=fractions, extra=fractions)
def test_max_rate_meets_the_target_exactly(t, extra):
    t_, slo = Rational(t.numerator, t.denominator), Rational((t + extra).numerator,
                                                            (t + extra).denominator)
    rate = service.max_rate_for_slo().subs({t_pre: t_, t_slo: slo})
    assert 0 < rate < 1 / t_  # a valid rate: the queue has a steady state
    assert service.md1().subs({R: rate, t_pre: t_}) == slo


def test_max_rate_mg1_meets_the_target():
    expr = service.max_rate(t_mean, t_mean, t_sq)
    vals = {t_mean: Rational(2, 10), t_sq: Rational(5, 100), t_slo: Rational(1, 2)}
    rate = expr.subs(vals)
    assert service.mg1().subs({**vals, R: rate}) == Rational(1, 2)


def test_queueing_equals_execution_at_two_thirds_load():
    rate, load = service.load_queueing_equals_execution()
    assert load == Rational(2, 3)
    assert rate == 2 / (3 * t_pre)
    # by hand at load 2/3: R·t²/(2(1 − R·t)) = (2/3)·t / (2/3) = t
    assert service.md1_queueing(rate, t_pre) == t_pre


def test_inter_beats_intra_rate():
    cross = service.inter_beats_intra_rate()
    for k, t in ((Rational(3, 2), Rational(1, 10)), (Rational(6, 5), Integer(2))):
        rate = cross.subs({K_intra: k, t_pre: t})
        assert 0 < float(rate) < float(k / t)
        inter = lambda r: _total(service.inter_op(r, t))  # noqa: E731
        intra = lambda r: _total(service.intra_op(r, t, k))  # noqa: E731
        assert abs(float(inter(rate) - intra(rate))) < 1e-12
        below, above = rate * Rational(9, 10), rate + (k / t - rate) / 2
        assert intra(below) < inter(below)  # intra-op wins at low rates (DistServe Fig. 4)
        assert inter(above) < intra(above)


# --- batching ----------------------------------------------------------------------------------
def test_batch_first_waits_for_the_later_arrivals():
    first, last = batching.batch_ttft_first(), batching.batch_ttft_last()
    assert simplify(first - last - (B - 1) / R) == 0
    assert simplify((first - last).subs(B, 1)) == 0


def _hand_projection_crossover(rows: Symbol) -> object:
    """Aggregated projections of a Llama layer (HF modeling_llama.py): QKV D → (n_q+2n_kv)H,
    O n_q·H → D, gate+up D → 2F, down F → D; intensity = P_peak/beta_hbm solved for rows."""
    shapes = [(D, (n_q + 2 * n_kv) * H), (n_q * H, D), (D, 2 * F), (F, D)]
    fl = sum(2 * rows * a * b for a, b in shapes)
    by = sum(b_w * a * b + b_a * rows * (a + b) for a, b in shapes)
    (root,) = solve(fl * beta_hbm - P_peak * by, rows)
    return root


def test_batch_stops_helping_at_the_projection_crossover():
    rows = Symbol("rows", positive=True)
    expected = _hand_projection_crossover(rows) / T
    assert simplify(batching.batch_stops_helping() - expected) == 0


# --- chunked prefill ---------------------------------------------------------------------------
def _sum(ops, attr):
    return sum((op.count * getattr(op, attr) for op in ops), Integer(0))


def test_chunk_attention_reads_earlier_kv_cache():
    ops = batching.chunk_operations()
    later = _sum(ops, "bytes")
    first = later.subs(batching.i_chunk, 0)
    # each layer reads 2·n_kv·H·i·c·b_kv bytes of cache written by the i earlier chunks
    assert simplify(later - first - L * 2 * n_kv * H * batching.i_chunk * T_chunk * b_kv) == 0


def test_chunk_attention_flops_by_hand():
    (attn,) = [op for op in batching.chunk_operations() if op.kind == "attention"]
    # chunk 1 of c = 2: queries at positions 2, 3 see 3 and 4 keys → 7 pairs, 4·H·n_q each
    assert attn.flops.subs({batching.i_chunk: 1, T_chunk: 2}) == 4 * H * n_q * 7


def test_chunked_flops_total_equals_one_shot():
    i = batching.i_chunk
    per_chunk = _sum(batching.chunk_operations(), "flops")
    total = summation(per_chunk, (i, 0, T / T_chunk - 1))
    one_shot = per_chunk.subs({i: 0, T_chunk: T})
    assert simplify(total - one_shot) == 0


def test_chunked_extra_bytes_by_hand():
    # per layer, each extra chunk reads the weights again (projections and the two norm gains);
    # and the KV cache re-reads sum to Σ_i 2·n_kv·H·i·c·b_kv = n_kv·H·b_kv·T·(T/c − 1)
    weights = D * (n_q + 2 * n_kv) * H + n_q * H * D + 2 * D * F + F * D + 2 * D
    chunks = T / T_chunk
    expected = L * ((chunks - 1) * b_w * weights + n_kv * H * b_kv * T * (chunks - 1))
    assert simplify(batching.chunk_bytes_extra() - expected) == 0


def test_min_compute_bound_chunk_is_the_projection_crossover():
    expected = _hand_projection_crossover(T_chunk)
    assert simplify(batching.min_compute_bound_chunk() - expected) == 0
    # and the catalogue's projection crossover (rows B·T) at one sequence, T → T_chunk
    from roofline.derive.crossovers import crossovers
    cross = crossovers()["projection_compute_bound_tokens"].closed_form()
    assert simplify(cross.subs({B: 1}).subs(T, T_chunk) - expected) == 0


def test_min_compute_bound_chunk_reaches_the_ridge():
    # made-up device and layer: the chunk's projections at that size sit exactly on the ridge
    vals = {D: 4096, F: 14336, H: 128, n_q: 32, n_kv: 8, b_w: 2, b_a: 2,
            P_peak: 10**15, beta_hbm: 3 * 10**12}
    c = batching.min_compute_bound_chunk().subs(vals)
    ops = batching.projection_ops(Architecture(), T_chunk)
    intensity = (_sum(ops, "flops") / _sum(ops, "bytes")).subs(vals).subs(T_chunk, c)
    assert intensity == Rational(10**15, 3 * 10**12)
    # one projection alone at those rows (wide layer) is near I_ridge·b_w/2 ≈ 333
    assert 300 < float(c) < 420
    assert float(projection.intensity(c, 4096, 4096).subs({b_w: 2, b_a: 2})) < 1000 / 3 + 1


# --- the catalogue -----------------------------------------------------------------------------
def test_entries_are_exact_and_named():
    entries = service.entries()
    names = [e.name for e in entries]
    assert len(names) == len(set(names))
    for required in ("service.ttft.md1", "service.ttft.inter_op", "service.ttft.intra_op",
                     "service.ttft.replicas", "service.ttft.mg1", "service.max_rate_for_slo",
                     "service.load_queueing_equals_execution", "service.inter_beats_intra_rate",
                     "service.batch.ttft_first", "service.batch.ttft_last",
                     "service.batch.stops_helping", "service.chunk.time",
                     "service.chunk.min_compute_bound"):
        assert required in names
    for e in entries:
        assert all(n.startswith("service.") for n in [e.name])
        assert not e.expr.atoms(Float), e.name
        assert e.source


def test_chunk_index_symbol():
    # the chunk index is the one symbol this module defines; it is a count from 0
    assert batching.i_chunk.is_integer and batching.i_chunk.is_nonnegative


def test_max_rate_is_no_valid_rate_when_the_target_is_below_execution():
    # the condition t_slo > t_pre matters: below it the root lies beyond the steady state
    for slo in (Rational(1, 4), Rational(1, 3), Rational(9, 10)):
        rate = service.max_rate_for_slo().subs({t_pre: 1, t_slo: slo})
        assert rate < 0 or rate >= 1, slo


# --- chunks in every attention mode --------------------------------------------------------------
def _brute_tiled(q, o, b_c, h):
    """Algorithm 1 over o + q keys in column blocks of b_c from position 0, counted row by row:
    per query head, elements at b_a and at b_kv."""
    keys = o + q
    visits = sum(1 for j in range(-(-keys // b_c)) for p in range(o, o + q) if j * b_c <= p)
    return 2 * q * h + q * h + 2 * q + visits * (3 * h + 4), 2 * o * h


def _brute_fa2(q, o, b_r, h):
    """FlashAttention-2 order, row blocks of b_r aligned to the chunk, each reading the keys up
    to its last row: per query head, elements at b_a (own keys) and at b_kv (cached keys)."""
    own = cached = 0
    for start in range(0, q, b_r):
        last = min(start + b_r, q)
        own, cached = own + last, cached + o
    return 2 * q * h + q + 2 * h * own, 2 * h * cached


def test_tiled_chunks_count_their_block_visits():
    from roofline.symbols import M_sram

    i = batching.i_chunk
    vals = {H: 4, n_q: 1, b_a: 1, b_kv: 3, M_sram: 48}  # B_c = ⌈48/16⌉ = 3, B_r = min(3, 4) = 3
    tiled = batching.chunk_attention("tiled").bytes.subs(vals)
    fa2 = batching.chunk_attention("tiled_fa2").bytes.subs(vals)
    for q, k in ((5, 0), (5, 1), (5, 3), (7, 2), (3, 4), (1, 6), (6, 1)):
        o = q * k
        at_a, at_kv = _brute_tiled(q, o, 3, 4)
        assert tiled.subs({i: k, T_chunk: q}) == at_a + 3 * at_kv, (q, k)
        at_a, at_kv = _brute_fa2(q, o, 3, 4)
        assert fa2.subs({i: k, T_chunk: q}) == at_a + 3 * at_kv, (q, k)


def test_naive_chunk_by_hand():
    # 2 queries at offset 4 over 6 keys, H = 3: Q, O 2·2·3, own K, V 2·2·3 at b_a, the scores
    # 4·2·6 at b_a, cached K, V 2·4·3 at b_kv; every one of the 2·6 scores computed
    op = batching.chunk_attention("naive", Integer(2), Integer(2))
    vals = {H: 3, n_q: 1, b_a: 1, b_kv: 10}
    assert op.bytes.subs(vals) == 12 + 12 + 48 + 10 * 24
    assert op.flops.subs(vals) == 4 * 3 * 2 * 6


def test_chunk_modes_at_offset_zero_are_the_prefill_attention():
    from roofline.derive import attention

    i = batching.i_chunk
    for mode in attention.MODES:
        op = batching.chunk_attention(mode)
        full = {i: 0, T_chunk: T}
        assert simplify(op.bytes.subs(full) - attention.hbm_bytes(mode).subs(B, 1)) == 0, mode
        assert simplify(op.flops.subs(full) - attention.mode_flops(mode).subs(B, 1)) == 0, mode


def test_moe_projection_crossover_is_solved():
    # issue 14: solve() raised "multiple generators [Min(n_e, T_chunk*n_a), T_chunk]"
    moe = Architecture(moe=True)
    chunk = batching.min_compute_bound_chunk(moe)
    assert not chunk.has(Min)
    assert simplify(batching.batch_stops_helping(moe) * T
                    - batching.projection_crossover_rows(moe)) == 0
