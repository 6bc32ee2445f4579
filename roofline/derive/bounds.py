"""The roofline itself: ridge, attainable FLOP/s, the time of one operation, a prefill's time.

Source: Williams, Waterman, Patterson, "Roofline" (CACM 2009); scaling-book "All About
Rooflines": attainable = min(P_peak, I·beta_hbm); T_lower = max(F/P, Q/β) (perfect overlap),
T_upper = F/P + Q/β (no overlap). With a memory hierarchy (Yang, Kurth & Williams, "Hierarchical
Roofline Analysis", arXiv 2009.05257): the time is the largest of the compute time and each
level's bytes over its bandwidth, max(F/P, Q/β_HBM, Q_L2/β_L2, ...).
"""

from __future__ import annotations

from collections.abc import Iterable

from sympy import Expr, Integer, Max, Min

from ..symbols import F_op, I_op, P_peak, Q_op, beta_hbm
from .entry import Entry
from . import levels
from .layers import Operation, total_bytes, total_flops
from .levels import BANDWIDTH
from .architecture import DEFAULT_ATTENTION
from .transformer import DEFAULT_CACHES, Architecture, prefill_operations

__all__ = ["ridge", "attainable", "op_time", "memory_time", "op_time_no_overlap", "total_time",
           "aggregate_time", "aggregate_memory_time", "entries"]

SOURCE = "Williams et al., 'Roofline' (CACM 2009); scaling-book 'All About Rooflines'"


def ridge() -> Expr:
    """I_ridge = P_peak / beta_hbm: the intensity at which an operation turns compute-bound."""
    return P_peak / beta_hbm


def attainable(intensity: Expr = I_op) -> Expr:
    """min(P_peak, I·beta_hbm)."""
    return Min(P_peak, intensity * beta_hbm)


def _times(nbytes: Expr, levels: Iterable[tuple[str, Expr]]) -> list[Expr]:
    return [nbytes / beta_hbm, *(q / BANDWIDTH[level] for level, q in levels)]


def _max(args: list[Expr]) -> Expr:
    """max of the times, kept as written where none is a number (SymPy would compare every pair
    of long expressions to drop dominated ones: seconds for a layer behind a cache or a latent
    attention, and no time of a device's compute or memory dominates another for every
    device); a number among them (an operation without FLOPs or bytes) is dropped as usual."""
    if any(a.is_Number for a in args):
        return Max(*args)
    return Max(*args, evaluate=False)


def aggregate_memory_time(ops: list[Operation]) -> Expr:
    """The memory time of a class of operations taken as one aggregated operation: its slowest
    level, HBM or one the operations' traffic is derived at (each level's bytes summed)."""
    present = [lv for lv in levels.LEVELS if any(lv in dict(op.levels) for op in ops)]
    return memory_time(total_bytes(ops), [(lv, total_bytes(ops, level=lv)) for lv in present])


def aggregate_time(ops: list[Operation]) -> Expr:
    """One roofline time for a class of operations, taken as one aggregated operation."""
    present = [lv for lv in levels.LEVELS if any(lv in dict(op.levels) for op in ops)]
    return op_time(total_flops(ops), total_bytes(ops),
                   [(lv, total_bytes(ops, level=lv)) for lv in present])


def memory_time(nbytes: Expr = Q_op, levels: Iterable[tuple[str, Expr]] = ()) -> Expr:
    """The slowest memory level's time: max(Q/beta_hbm, Q_level/beta_level, ...)."""
    times = _times(nbytes, levels)
    return times[0] if len(times) == 1 else _max(times)


def op_time(flops: Expr = F_op, nbytes: Expr = Q_op,
            levels: Iterable[tuple[str, Expr]] = ()) -> Expr:
    """Lower bound of one operation's time: max(F/P_peak, Q/beta_hbm), and the time at each
    further memory level of ``levels`` ((level, bytes) pairs) where given."""
    return _max([flops / P_peak, *_times(nbytes, levels)])


def op_time_no_overlap(flops: Expr = F_op, nbytes: Expr = Q_op) -> Expr:
    """Upper bound (compute and memory traffic never overlap): F/P_peak + Q/beta_hbm."""
    return flops / P_peak + nbytes / beta_hbm


def total_time(ops: list[Operation]) -> Expr:
    """Σ count·max(F_i/P, Q_i/β): every operation bound by its own roof, run one after another."""
    return sum((op.count * op_time(op.flops, op.bytes, op.levels) for op in ops), Integer(0))


def entries() -> list[Entry]:
    prefill = total_time(prefill_operations(Architecture(), DEFAULT_ATTENTION,
                                            caches=DEFAULT_CACHES))
    return [
        Entry("roofline.ridge", ridge(), "ridge intensity: compute-bound above it", "FLOP/byte",
              SOURCE),
        Entry("roofline.attainable", attainable(), "attainable FLOP/s at intensity I_op",
              "FLOP/s", SOURCE),
        Entry("roofline.time", op_time(), "time of one operation (perfect overlap)", "s",
              SOURCE, ("compute and memory traffic overlap perfectly",)),
        Entry("roofline.time.no_overlap", op_time_no_overlap(),
              "time of one operation when compute and traffic never overlap", "s", SOURCE),
        Entry("prefill.time", prefill, "prefill time: the sum of every operation's roofline time",
              "s", SOURCE + "; operations as prefill.flops",
              ("operations run one after another, each at its own roof",
               "attention: kernel, behind an L2 (the default)")),
    ]
