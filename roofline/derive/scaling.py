"""How a prefill grows with the prompt: the T⁰, T¹ and T² terms of its FLOPs and bytes, and the
leading terms of its time, per attention mode, derived by SymPy (``Poly`` coefficients in T).

The tiled modes use the continuous relaxation (ceilings dropped) in its long-prompt regime (at
least one block of each kind: T ≥ B_c, M_sram ≥ 4·H·b_a) so that they are polynomials. The T²
bytes term of ``tiled`` is Theorem 2's Θ(T²H²/M) (FlashAttention, arXiv 2205.14135); that of
``tiled_fa2`` is Θ(T²·H/B_r), which stops falling with M once B_r reaches H.
"""

from __future__ import annotations

from sympy import Expr, Integer, Max, Poly

from ..symbols import P_peak, T, beta_hbm
from . import attention
from .entry import Entry
from .transformer import Architecture, Operation, prefill_operations, total_bytes, total_flops

__all__ = ["coefficients", "time_coefficients", "entries"]

SOURCE = "prefill.flops and prefill.bytes; FlashAttention (arXiv 2205.14135) Theorem 2"


def _long_prompts(mode: str, arch: Architecture) -> list[Operation]:
    """The smooth operations with every max(1, x) block count taken as x (T ≥ B_c)."""
    long = attention.long_prompts
    return [Operation(op.name, op.kind, long(op.flops), long(op.bytes), op.count)
            for op in prefill_operations(arch, mode, smooth=True)]


def coefficients(expr: Expr) -> dict[int, Expr]:
    """{power of T: coefficient} of a polynomial in T.

    >>> coefficients(3*T**2 + 2*T + 1)
    {0: 1, 1: 2, 2: 3}
    """
    poly = Poly(expr, T)
    return {k[0]: v for k, v in sorted(poly.terms())}


def time_coefficients(mode: str, arch: Architecture = Architecture()) -> dict[int, Expr]:
    """Leading terms of the roofline time: as T → 0, time → Σ max(F_i(0)/P, Q_i(0)/β) (the
    weights read once, and the LM head on the last positions); as T → ∞,
    time/T² → Σ max(F_i,2/P, Q_i,2/β): the operations with a T² term (attention) at their roofs."""
    ops = _long_prompts(mode, arch)
    t0, t2 = Integer(0), Integer(0)
    for op in ops:
        f0 = coefficients(op.flops).get(0, Integer(0))
        q0 = coefficients(op.bytes).get(0, Integer(0))
        if f0 != 0 or q0 != 0:
            t0 += op.count * Max(f0 / P_peak, q0 / beta_hbm)
        f2 = coefficients(op.flops).get(2, Integer(0))
        q2 = coefficients(op.bytes).get(2, Integer(0))
        if f2 != 0 or q2 != 0:
            t2 += op.count * Max(f2 / P_peak, q2 / beta_hbm)
    return {0: t0, 2: t2}


def entries() -> list[Entry]:
    out = []
    note = ("Llama-style dense model", "tiled modes without ceilings, T ≥ B_c")
    for mode in attention.MODES:
        ops = _long_prompts(mode, Architecture())
        for quantity, expr, unit in (("flops", total_flops(ops), "FLOP"),
                                     ("bytes", total_bytes(ops), "bytes")):
            for power, coeff in coefficients(expr).items():
                if power == 0 and coeff == 0:
                    continue
                out.append(Entry(f"scaling.{quantity}.{mode}.T{power}", coeff,
                                 f"coefficient of T^{power} in the prefill's {quantity} "
                                 f"({mode} attention)", f"{unit}/token^{power}", SOURCE,
                                 (*note, f"attention: {mode}")))
        times = time_coefficients(mode)
        out.append(Entry(f"scaling.time.{mode}.T0", times[0],
                         f"prefill time as T → 0: the weights read once ({mode} attention)", "s",
                         SOURCE, (*note, "T → 0")))
        out.append(Entry(f"scaling.time.{mode}.T2", times[2],
                         f"limit of prefill time / T² as T → ∞ ({mode} attention)", "s/token^2",
                         SOURCE, (*note, "T → ∞")))
    return out
