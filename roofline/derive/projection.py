"""A dense projection (one linear layer) over ``rows`` token rows: FLOPs, HBM bytes, intensity.

Source: scaling-book, "All the Transformer Math You Need to Know" ("Counting Dots": an
[N, P]·[P, M] product is 2·N·P·M FLOPs, multiply and add counted apart, so 2·T·d_in·d_out
here); scaling-book, "All About Rooflines" (matmul intensity 2BDF / (2BD + 2DF + 2BF) in bf16).
"""

from __future__ import annotations

from sympy import Expr, Integer, limit, oo, simplify

from ..symbols import T, b_a, b_w, d_in, d_out
from .entry import Entry

__all__ = ["flops", "hbm_bytes", "intensity", "entries"]

SOURCE = (
    "scaling-book 'All the Transformer Math You Need to Know' (an [N,P]·[P,M] product is 2NPM "
    "FLOPs); scaling-book 'All About Rooflines' (matmul intensity 2BDF/(2BD+2DF+2BF))"
)


def flops(rows: Expr = T, n_in: Expr = d_in, n_out: Expr = d_out, bias: bool = False) -> Expr:
    """FLOPs of ``rows × n_in`` by ``n_in × n_out``: 2·rows·n_in·n_out (+ rows·n_out for a bias).

    >>> flops()
    2*T*d_in*d_out
    """
    return 2 * rows * n_in * n_out + (rows * n_out if bias else 0)


def hbm_bytes(
    rows: Expr = T,
    n_in: Expr = d_in,
    n_out: Expr = d_out,
    bias: bool = False,
    matrices: Expr = Integer(1),
) -> Expr:
    """HBM bytes: the weights once, activations in and out: b_w·n_in·n_out + b_a·rows·(n_in + n_out).

    ``matrices`` weight matrices of that shape are read (MoE: the experts that receive a token).

    >>> hbm_bytes()
    T*b_a*(d_in + d_out) + b_w*d_in*d_out
    """
    weights = matrices * (n_in * n_out + (n_out if bias else 0))
    return b_w * weights + b_a * rows * (n_in + n_out)


def intensity(rows: Expr = T, n_in: Expr = d_in, n_out: Expr = d_out) -> Expr:
    """FLOP per HBM byte: 2·T·d_in·d_out / (b_w·d_in·d_out + b_a·T·(d_in + d_out)).

    >>> intensity()
    2*T*d_in*d_out/(T*b_a*(d_in + d_out) + b_w*d_in*d_out)
    """
    return flops(rows, n_in, n_out) / hbm_bytes(rows, n_in, n_out)


def entries() -> list[Entry]:
    i = intensity()
    small = simplify(limit(i / T, T, 0)) * T  # leading term as T → 0
    large = simplify(limit(i, T, oo))
    rows = "T token rows; weights read once per call; no cache reuse across calls"
    return [
        Entry("projection.flops", flops(), "FLOPs of one projection d_in → d_out over T rows",
              "FLOP", SOURCE, (rows,)),
        Entry("projection.bytes", hbm_bytes(),
              "HBM bytes of one projection: weights once, activations in and out", "bytes",
              SOURCE, (rows,)),
        Entry("projection.intensity", i, "arithmetic intensity of one projection", "FLOP/byte",
              SOURCE, (rows,)),
        Entry("projection.intensity.small_T", small,
              "leading term of the projection's intensity as T → 0 (weights dominate)",
              "FLOP/byte", SOURCE, (rows, "T ≪ d_in, d_out"),
              steps=(("intensity", i), ("limit(intensity/T, T→0)", small / T)),
              holds=(10 * T * b_a * (d_in + d_out) <= b_w * d_in * d_out,),
              example=((T, Integer(16), "a short prompt: the activations' bytes under a "
                        "tenth of the weights'"),)),
        Entry("projection.intensity.large_T", large,
              "limit of the projection's intensity as T → ∞ (activations dominate)",
              "FLOP/byte", SOURCE, (rows, "T ≫ d_in, d_out"),
              steps=(("intensity", i), ("limit(intensity, T→∞)", large))),
    ]
