"""Projection: hand-expanded numbers and the scaling-book's matmul intensity."""

from hypothesis import given, strategies as st
from sympy import Rational, simplify, symbols

from roofline.derive import projection
from roofline.symbols import T, b_a, b_w, d_in, d_out


def test_flops_and_bytes_by_hand():
    v = {T: 3, d_in: 5, d_out: 7, b_w: 2, b_a: 2}
    assert projection.flops().subs(v) == 210  # 2·3·5·7
    assert projection.hbm_bytes().subs(v) == 2 * 35 + 2 * 3 * (5 + 7)  # 142
    assert projection.flops(bias=True).subs(v) == 210 + 3 * 7
    assert projection.hbm_bytes(bias=True).subs(v) == 142 + 2 * 7


def test_scaling_book_matmul_intensity_in_bf16():
    # scaling-book: intensity of a bf16 matmul = 2BDF / (2BD + 2DF + 2BF)
    Bs, Ds, Fs = symbols("B_ D_ F_", positive=True)
    ours = projection.intensity(Bs, Ds, Fs).subs({b_w: 2, b_a: 2})
    assert simplify(ours - 2 * Bs * Ds * Fs / (2 * Bs * Ds + 2 * Ds * Fs + 2 * Bs * Fs)) == 0


def test_limits_from_the_catalogue():
    from roofline.catalog import get

    assert get("projection.intensity.small_T").expr == 2 * T / b_w
    assert simplify(get("projection.intensity.large_T").expr
                    - 2 * d_in * d_out / (b_a * (d_in + d_out))) == 0
    # scaling-book: ≈ B when B ≪ D, F in bf16
    assert get("projection.intensity.small_T").expr.subs(b_w, 2) == T


@given(st.integers(1, 10**6), st.integers(1, 10**5), st.integers(1, 10**5),
       st.sampled_from([Rational(1, 2), 1, 2, 4]))
def test_intensity_stays_below_both_limits(t, n_in, n_out, nbytes):
    v = {T: t, d_in: n_in, d_out: n_out, b_w: nbytes, b_a: nbytes}
    i = projection.intensity().subs(v)
    assert 0 < i < 2 * t / nbytes
    assert i < Rational(2 * n_in * n_out, 1) / (nbytes * (n_in + n_out))
