"""How a prefill grows with the prompt: the T⁰, T¹ and T² terms of its FLOPs and bytes, and the
leading terms of its time, per attention mode, derived by SymPy (``Poly`` coefficients in T).

The papers' schedules (``naive``, ``tiled``, ``tiled_fa2``, ``ideal``) count every byte at HBM,
and the tiled ones use the continuous relaxation (ceilings dropped) in its long-prompt regime
(at least one block of each kind: T ≥ B_c, M_sram ≥ 4·H·b_a) so that they are polynomials. The
T² bytes term of ``tiled`` is Theorem 2's Θ(T²H²/M) (FlashAttention, arXiv 2205.14135); that of
``tiled_fa2`` is Θ(T²·H/B_r), which stops falling with M once B_r reaches H. The default mode
(``kernel``, names without a mode) is taken as the tool evaluates it, behind an L2: each max
and min in it replaced by the argument that dominates as T → ∞, then each term's limit.
"""

from __future__ import annotations

from sympy import Expr, Integer, Max, Min, Poly, expand, limit, oo

from ..symbols import P_peak, T, beta_hbm
from . import attention
from .architecture import DEFAULT_ATTENTION
from .bounds import memory_time
from .entry import Entry
from .transformer import (DEFAULT_CACHES, Architecture, Operation, prefill_operations,
                          total_bytes, total_flops)

__all__ = ["coefficients", "time_coefficients", "entries"]

SOURCE = "prefill.flops and prefill.bytes; FlashAttention (arXiv 2205.14135) Theorem 2"


def _long_prompts(mode: str, arch: Architecture) -> list[Operation]:
    """The smooth operations with every max(1, x) block count taken as x (T ≥ B_c); the default
    mode behind an L2, each max and min at its argument that dominates as T → ∞
    (:func:`dominant`)."""
    if mode == DEFAULT_ATTENTION:
        ops = prefill_operations(arch, mode, smooth=True, caches=DEFAULT_CACHES)
        return [Operation(op.name, op.kind, dominant(op.flops), dominant(op.bytes), op.count,
                          tuple((level, dominant(q)) for level, q in op.levels)) for op in ops]
    long = attention.long_prompts
    return [Operation(op.name, op.kind, long(op.flops), long(op.bytes), op.count)
            for op in prefill_operations(arch, mode, smooth=True)]


def dominant(expr: Expr) -> Expr:
    """``expr`` with each Max (Min), innermost first, replaced by its argument that is the
    largest (smallest) as T → ∞.

    >>> dominant(Max(1, T / 128) + Min(8, 1 / T))
    T/128 + 1/T
    """
    atoms = sorted(expr.atoms(Max, Min), key=lambda a: len(str(a)))
    while atoms:
        atom = atoms.pop(0)
        pick = max if isinstance(atom, Max) else min
        best = atom.args[0]
        for arg in atom.args[1:]:
            ratio = limit(arg / best, T, oo) if best != 0 else oo
            if (ratio > 1) if pick is max else (ratio < 1):
                best = arg
        expr = expr.xreplace({atom: best})
        atoms = sorted(expr.atoms(Max, Min), key=lambda a: len(str(a)))
    return expand(expr)


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
    time/T² → Σ max(F_i,2/P, Q_i,2/β, Q_i,2,level/β_level): the operations with a T² term
    (attention) at their roofs, the slowest memory level's where their traffic there is
    derived."""
    ops = _long_prompts(mode, arch)
    t0, t2 = Integer(0), Integer(0)
    for op in ops:
        f0 = coefficients(op.flops).get(0, Integer(0))
        q0 = coefficients(op.bytes).get(0, Integer(0))
        if f0 != 0 or q0 != 0:
            t0 += op.count * Max(f0 / P_peak, q0 / beta_hbm)
        f2 = coefficients(op.flops).get(2, Integer(0))
        q2 = coefficients(op.bytes).get(2, Integer(0))
        levels = [(level, coefficients(q).get(2, Integer(0))) for level, q in op.levels]
        if f2 != 0 or q2 != 0:
            t2 += op.count * Max(f2 / P_peak, memory_time(q2, levels))
    return {0: t0, 2: t2}


def entries() -> list[Entry]:
    out = []
    for mode in attention.MODES:
        own = mode == DEFAULT_ATTENTION  # the default mode, behind an L2: named without it
        note = ("Llama-style dense model", "behind an L2, T → ∞ (the default mode)" if own
                else "every byte at HBM; tiled modes without ceilings, T ≥ B_c")
        name = "" if own else f".{mode}"
        ops = _long_prompts(mode, Architecture())
        for quantity, expr, unit in (("flops", total_flops(ops), "FLOP"),
                                     ("bytes", total_bytes(ops), "bytes")):
            for power, coeff in coefficients(expr).items():
                if power == 0 and coeff == 0:
                    continue
                out.append(Entry(f"scaling.{quantity}{name}.T{power}", coeff,
                                 f"coefficient of T^{power} in the prefill's {quantity} "
                                 f"({mode} attention)", f"{unit}/token^{power}", SOURCE,
                                 (*note, f"attention: {mode}")))
        times = time_coefficients(mode)
        out.append(Entry(f"scaling.time{name}.T0", times[0],
                         f"prefill time as T → 0: the weights read once ({mode} attention)", "s",
                         SOURCE, (*note, "T → 0")))
        out.append(Entry(f"scaling.time{name}.T2", times[2],
                         f"limit of prefill time / T² as T → ∞ ({mode} attention)", "s/token^2",
                         SOURCE, (*note, "T → ∞")))
    return out
