"""Numeric sweeps for the figures, over arrays of prompt lengths (or decode batches). Every
number comes from the evaluation core: the prefill's compiled operations
(:func:`roofline.evaluate.operations`, timed by :func:`roofline.evaluate.roofline_time`) or, for
the other curves, a derivation's expression evaluated by :func:`roofline.evaluate.numeric`. No
formula is typed in here; ``tests/test_sweeps.py`` checks the arrays against exact substitution
and against hand-expanded numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
from sympy import Expr, Integer, Symbol, limit, oo

from . import evaluate
from .derive import attention, window
from .derive.decode import decode_operations
from .derive.architecture import KINDS
from .derive.transformer import total_bytes, total_flops
from .errors import InputError
from .evaluate import Setting, numeric, roofline_time
from .evaluate.links import LEVELS as LINK_LEVELS
from .symbols import B, M_sram, T, T_ctx

__all__ = ["KindSweep", "by_kind", "intensity", "attention_bytes", "window_attention",
           "linear_attention", "sparse_attention",
           "attention_flops", "attention_t2_coefficient",
           "attention_intensity_limit", "footprint", "scores_fit", "prefill_fits", "decode_memory",
           "decode_fits", "max_batch", "decode_intensity", "OperationPoint",
           "operation_points", "decode_point", "decode_forms", "with_mode", "with_batch"]

def _numeric(expr: Expr, x: Symbol, where: Any = None) -> Callable[[np.ndarray], np.ndarray]:
    """``expr`` as a numpy function of an array of ``x`` (the evaluation core's ``numeric``)."""
    return numeric(expr, {} if where is None else where, x)


def _array(values: np.ndarray | Sequence[float], option: str) -> np.ndarray:
    xs = np.asarray(values, dtype=float)
    if xs.ndim != 1 or xs.size == 0 or not np.all(np.isfinite(xs)) or np.any(xs <= 0):
        raise InputError(option, "needs a non-empty list of positive numbers",
                         list(np.ravel(xs)))
    return xs


def with_mode(setting: Setting, mode: str) -> Setting:
    """The same setting with another attention mode."""
    return setting if setting.attention == mode else replace(setting, attention=mode)


# --- prefill against prompt length ----------------------------------------------------------
@dataclass(frozen=True)
class KindSweep:
    """A prefill over an array of prompt lengths, per operation kind (all layers): FLOPs, HBM
    bytes and roofline time Σ count·max(F/P, Q/β, Q_level/β_level); key ``"communication"``
    (under parallelism): the collectives' time at their links' bandwidths, before any of it is
    hidden; key ``"total"``: the prefill's time (every kind, the collectives hidden as the
    evaluation hides them). ``memory`` is each kind's memory time taken as one aggregated operation: its slowest
    level, HBM or one whose traffic is derived (the evaluation's rule for the whole prefill)."""

    tokens: np.ndarray
    flops: dict[str, np.ndarray]
    bytes: dict[str, np.ndarray]
    time: dict[str, np.ndarray]  # seconds
    ridge: float
    memory: dict[str, np.ndarray]  # seconds
    peak: float

    def compute_bound(self, kind: str = "total") -> np.ndarray:
        """Where the kind's compute time reaches its aggregated memory time (the evaluation's
        rule: at HBM alone, the FLOPs over the bytes reach the ridge)."""
        return self.flops[kind] / self.peak >= self.memory[kind]


def by_kind(setting: Setting, tokens: np.ndarray | Sequence[int]) -> KindSweep:
    """FLOPs, bytes and time of each operation kind of the setting's prefill at each T."""
    xs = _array(tokens, "prompt")
    peak, bw = setting.peak, setting.bandwidth
    flops: dict[str, np.ndarray] = {}
    nbytes: dict[str, np.ndarray] = {}
    time: dict[str, np.ndarray] = {}
    beyond: dict[str, dict[str, np.ndarray]] = {}  # kind → level → bytes beyond the HBM bytes
    for op in evaluate.operations(setting):
        f = np.broadcast_to(op.count * op.flops(xs), xs.shape).astype(float)
        q = np.broadcast_to(op.count * op.bytes(xs), xs.shape).astype(float)
        t = roofline_time(f, q, peak, bw)
        served = {level: (level_bw, op.count * q_at(xs)) for level, level_bw, q_at in op.levels}
        for level_bw, q_level in served.values():
            t = np.maximum(t, q_level / level_bw)
        for key in (op.kind, "total"):
            flops[key] = flops.get(key, 0.0) + f
            nbytes[key] = nbytes.get(key, 0.0) + q
            time[key] = time.get(key, 0.0) + t
            for level, (_, q_level) in served.items():
                if level in LINK_LEVELS:  # a collective's time, not memory traffic
                    continue
                extra = beyond.setdefault(key, {})
                extra[level] = extra.get(level, 0.0) + q_level - q
    if setting.parallel:  # the collectives hidden as the evaluation hides them (ring, overlap)
        time["total"] = evaluate.prefill_time(setting, xs)
    order = [k for k in (*KINDS, "communication", "total") if k in flops]
    memory = {}
    for k in order:
        m = nbytes[k] / bw
        for level, extra in beyond.get(k, {}).items():
            m = np.maximum(m, (nbytes[k] + extra) / setting.level_bandwidths[level])
        memory[k] = m
    return KindSweep(xs, {k: flops[k] for k in order}, {k: nbytes[k] for k in order},
                     {k: time[k] for k in order}, setting.ridge, memory, peak)


def intensity(setting: Setting, tokens: np.ndarray | Sequence[int],
              kinds: tuple[str, ...] = KINDS) -> np.ndarray:
    """FLOP per HBM byte of the prefill's operations of ``kinds`` (all of them by default), of
    the whole model on one device (the setting without its splits): Σ count·F / Σ count·Q over
    the compiled operations."""
    xs = _array(tokens, "prompt")
    whole = setting if not setting.parallel else replace(
        setting, tp=1, pp=1, ep=1, cp=1, overlap=False, network=None)
    flops: Any = 0.0
    nbytes: Any = 0.0
    for op in evaluate.operations(whole):
        if op.kind in kinds:
            flops = flops + op.count * op.flops(xs)
            nbytes = nbytes + op.count * op.bytes(xs)
    return np.broadcast_to(flops / nbytes, xs.shape).astype(float)


# --- attention traffic ----------------------------------------------------------------------
def _attention_values(setting: Setting, sram: float | None) -> dict[Symbol, Any]:
    vals = setting.values()
    if sram is not None:
        vals[M_sram] = Integer(int(sram)) if float(sram).is_integer() else sram
    return vals


def _heads(setting: Setting, expr: Expr) -> Expr:
    """One layer's attention ``expr`` for the heads one device runs: multi-head latent
    attention's keys of H + H_r and values of H (``roofline.derive.mla.head_substitution``);
    under parallelism one device's share (``roofline.derive.parallel``): its heads under
    tensor parallelism, 1/N_cp of the whole under context parallelism."""
    if setting.architecture.mla:
        from .derive.mla import head_substitution

        expr = expr.xreplace(head_substitution())
    if setting.parallel:
        from .derive import tensor_parallel
        from .symbols import N_cp

        expr = expr.xreplace(tensor_parallel.substitution()) / N_cp
    return expr


def attention_bytes(setting: Setting, tokens: np.ndarray | Sequence[int], mode: str,
                    sram: float | None = None) -> np.ndarray:
    """HBM bytes of one layer's prefill attention in ``mode`` (``attention.hbm_bytes``), with
    the on-chip SRAM per SM set to ``sram`` bytes (default: the device's)."""
    expr = _heads(setting, attention.hbm_bytes(mode))
    return _numeric(expr, T, _attention_values(setting, sram))(_array(tokens, "prompt"))


def window_attention(setting: Setting, tokens: np.ndarray | Sequence[int],
                     mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(FLOPs, HBM bytes) of one sliding-window layer's prefill attention in ``mode``
    (``window.flops``, ``window.hbm_bytes``) at the model's window W, or a chunked layer's
    (``chunked.flops``, ``chunked.level_bytes`` without a cache), for the heads one device
    runs (:func:`_heads`, as :func:`attention_bytes` and :func:`attention_flops`)."""
    if setting.model.window == "none":
        raise InputError("model", "has no sliding window or chunked attention",
                         setting.model.name)
    xs = _array(tokens, "prompt")
    vals = _attention_values(setting, None)
    if setting.architecture.window_kind == "chunked":  # each chunk a causal prompt
        from .derive import chunked

        flops, nbytes = chunked.flops(mode), chunked.level_bytes(mode, ())[0]
    else:
        flops, nbytes = window.flops(mode), window.hbm_bytes(mode)
    return (_numeric(_heads(setting, flops), T, vals)(xs),
            _numeric(_heads(setting, nbytes), T, vals)(xs))


def linear_attention(setting: Setting, tokens: np.ndarray | Sequence[int],
                     mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(FLOPs, HBM bytes) of one linear-attention layer's chunked recurrence in ``mode``
    (``linear_attention.recurrence``: FLA's kernels, or the ideal traffic), for the heads one
    device runs."""
    from .derive import linear_attention as la

    if not setting.architecture.linear_attention:
        raise InputError("model", "has no linear-attention layers", setting.model.name)
    op = la.recurrence(mode)
    xs, vals = _array(tokens, "prompt"), _attention_values(setting, None)
    return (_numeric(_heads(setting, op.flops), T, vals)(xs),
            _numeric(_heads(setting, op.bytes), T, vals)(xs))


def sparse_attention(setting: Setting, tokens: np.ndarray | Sequence[int],
                     mode: str) -> dict[str, np.ndarray]:
    """One sparse-attention layer's indexer (scores, top-k) and attention in ``mode``, FLOPs
    and HBM bytes (keys ``indexer_flops``, ``attention_bytes``, ...), one device's share."""
    from .derive import sparse_attention as dsa

    if not setting.architecture.sparse_attention:
        raise InputError("model", "has no sparse attention", setting.model.name)
    xs, vals = _array(tokens, "prompt"), _attention_values(setting, None)
    out: dict[str, Any] = {}
    for op in dsa.attention_operations(setting.architecture, mode, caches=setting.caches):
        if op.kind != "attention":
            continue
        part = "indexer" if op.name.startswith("dsa.indexer") else "attention"
        for what, expr in (("flops", op.flops), ("bytes", op.bytes)):
            if setting.parallel:  # the indexer replicated, the attention over its heads;
                from .derive import tensor_parallel  # 1/N_cp of the rows
                from .symbols import N_cp

                expr = expr.xreplace(tensor_parallel.substitution()) / N_cp
            key = f"{part}_{what}"
            out[key] = out.get(key, 0.0) + _numeric(expr, T, vals)(xs)
    return {k: np.broadcast_to(v, xs.shape).astype(float) for k, v in out.items()}


def attention_flops(setting: Setting, tokens: np.ndarray | Sequence[int],
                    mode: str) -> np.ndarray:
    """FLOPs of one global (unwindowed) layer's prefill attention in ``mode``."""
    vals = _attention_values(setting, None)
    return _numeric(_heads(setting, attention.mode_flops(mode)), T, vals)(
        _array(tokens, "prompt"))


@lru_cache(maxsize=64)
def attention_t2_coefficient(setting: Setting, mode: str, sram: float | None = None) -> float:
    """c in bytes ≈ c·T² as T → ∞ for one layer (ceilings relaxed): naive 4·B·n_q·b_a (Θ(T²));
    tiled 2·B·n_q·b_a²·H·(3H + 4)/M_sram (FlashAttention Theorem 2: Θ(T²H²/M)). SymPy takes a
    tenth of a second for the limit: kept for the setting (a figure asks again)."""
    expr = evaluate.exact(_heads(setting, attention.hbm_bytes(mode, smooth=True)),
                          _attention_values(setting, sram))
    return float(limit(attention.long_prompts(expr) / T**2, T, oo))


@lru_cache(maxsize=64)
def attention_intensity_limit(setting: Setting, mode: str, sram: float | None = None) -> float:
    """FLOP/byte of ``mode`` attention as T → ∞ (ceilings relaxed): the ceiling that the SRAM
    size sets on tiled attention (``inf`` for ideal, whose intensity grows with T); kept for
    the setting, as :func:`attention_t2_coefficient`."""
    vals = _attention_values(setting, sram)
    expr = evaluate.exact(_heads(setting, attention.mode_flops(mode)
                                 / attention.hbm_bytes(mode, smooth=True)), vals)
    return float(limit(attention.long_prompts(expr), T, oo))


def footprint(setting: Setting, tokens: np.ndarray | Sequence[int],
              step: str = "prefill") -> dict[str, np.ndarray]:
    """Device memory at each T: ``weights``, one layer's naive ``scores`` (T×T per head; the
    T×min(T, W) band where every layer is windowed) and the ``kv_cache`` of all layers (a
    windowed layer's as the setting's ``kv_cache`` says), in bytes; one device's share where
    several run the setting, in a prefill or (``step="decode"``) a decode step at a context of
    T (:func:`roofline.evaluate.footprint`)."""
    xs = _array(tokens, "prompt")
    return {key: np.broadcast_to(evaluate.footprint(setting, key, step)(xs),
                                 xs.shape).astype(float)
            for key in ("weights", "scores", "kv_cache")}


def scores_fit(setting: Setting, tokens: np.ndarray | Sequence[int]) -> np.ndarray:
    """Whether one layer's naive score matrix fits beside the weights and the KV cache at each
    T (the rule of the crossover ``naive_scores_exceed_memory_tokens``)."""
    used = footprint(with_mode(setting, "naive"), tokens)
    return used["weights"] + used["kv_cache"] + used["scores"] <= setting.hardware.memory_capacity


def prefill_fits(setting: Setting, tokens: np.ndarray | Sequence[int]) -> np.ndarray:
    """Whether a prefill of T tokens fits in the device's memory at each T: its peak, the rule
    of ``prefill``'s warning and of ``prefill_exceeds_memory_tokens``
    (:func:`roofline.evaluate.memory.peak_bytes`: the weights, the KV cache of the setting's
    batch and the live activations; where those are not derived, naive attention's scores)."""
    xs = _array(tokens, "prompt")
    used = np.broadcast_to(evaluate.peak_bytes(setting, xs), xs.shape)
    return used <= setting.hardware.memory_capacity


def decode_memory(setting: Setting, batches: np.ndarray | Sequence[int],
                  context: int) -> np.ndarray:
    """Bytes in use by a decode step of B sequences at ``context`` cached tokens, over an array
    of B: the weights and B times one sequence's KV cache (:func:`footprint` at the context)."""
    one = footprint(with_batch(setting, 1), [context], "decode")
    return one["weights"][0] + _array(batches, "batch") * one["kv_cache"][0]


def decode_fits(setting: Setting, batches: np.ndarray | Sequence[int],
                context: int) -> np.ndarray:
    """Whether a decode step of B sequences at ``context`` fits in the device's memory."""
    return decode_memory(setting, batches, context) <= setting.hardware.memory_capacity


def max_batch(setting: Setting, context: int) -> int:
    """The largest batch whose weights and KV cache at ``context`` fit in the device's memory
    (0: not even one sequence fits)."""
    one = footprint(with_batch(setting, 1), [context], "decode")
    room = setting.hardware.memory_capacity - one["weights"][0]
    return max(0, int(np.floor(room / one["kv_cache"][0]))) if room >= 0 else 0


def with_batch(setting: Setting, batch: int) -> Setting:
    """The same setting with another batch."""
    return setting if setting.batch == batch else replace(setting, batch=batch)


# --- decode against batch -------------------------------------------------------------------
def decode_intensity(setting: Setting, batches: np.ndarray | Sequence[int], context: int,
                     kinds: tuple[str, ...] = KINDS) -> np.ndarray:
    """FLOP per HBM byte of one decode step of B sequences at ``context`` cached tokens, over
    an array of B (operations of ``kinds``; projections alone give the critical batch)."""
    if int(context) != context or context <= 0:
        raise InputError("context", "must be a positive integer", context)
    ops = decode_operations(setting.architecture)
    vals = {**setting.values(batch=False), T_ctx: Integer(context), T: Integer(context)}
    expr = total_flops(ops, kinds) / total_bytes(ops, kinds)
    return _numeric(expr, B, vals)(_array(batches, "batch"))


# --- points for the roofline ----------------------------------------------------------------
@dataclass(frozen=True)
class OperationPoint:
    """One class of operations at one prompt length: FLOPs, bytes, roofline time (all layers)
    and where it sits on the roofline: intensity and attained FLOP/s = FLOPs / time."""

    label: str
    group: str  # "projection" | "attention.<mode>" | "prefill" | "decode"
    tokens: int  # prompt length (decode: the context)
    flops: float
    bytes: float
    time_s: float
    levels: tuple[tuple[str, float], ...] = ()  # bytes at each further memory level, if derived

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    def level_intensity(self, level: str) -> float:
        """FLOP per byte at a further memory level ("l2", "l3", "sram")."""
        return self.flops / dict(self.levels)[level]

    @property
    def attained(self) -> float:
        return self.flops / self.time_s


def _class_point(label: str, group: str, tokens: int, ops: Sequence[Any]) -> OperationPoint:
    """The operations ``ops`` as one point; the levels that every one of them has derived."""
    names = [name for name, _ in ops[0].levels] if ops else []
    shared = [n for n in names if all(n in dict(o.levels) for o in ops)]
    levels = tuple((n, sum(dict(o.levels)[n] for o in ops)) for n in shared)
    return OperationPoint(label, group, tokens, sum(o.flops for o in ops),
                          sum(o.bytes for o in ops), sum(o.time_s for o in ops), levels)


def operation_points(setting: Setting, prompts: Sequence[int],
                     modes: Sequence[str] = ("naive", "kernel", "ideal")) -> list[OperationPoint]:
    """The prefill's projections, its attention in each of ``modes`` and the whole prefill (the
    setting's mode) at each prompt length, from :func:`roofline.evaluate.prefill`. Tiled modes
    are left out for a device that gives no SRAM size."""
    out: list[OperationPoint] = []
    for p in evaluate.prefill(setting, prompts):
        t = p.prompt_tokens
        out.append(_class_point("projections", "projection", t,
                                [o for o in p.operations if o.kind == "projection"]))
        out.append(OperationPoint(f"whole prefill ({setting.attention} attention)", "prefill",
                                  t, p.flops, p.bytes, p.time_s))
    for mode in modes:
        if mode.startswith("tiled") and setting.hardware.sram_per_sm is None:
            continue
        for p in evaluate.prefill(with_mode(setting, mode), prompts):
            out.append(_class_point(f"attention, {mode}", f"attention.{mode}", p.prompt_tokens,
                                    [o for o in p.operations if o.kind == "attention"]))
    return out


def decode_point(setting: Setting, batch: int, context: int) -> OperationPoint:
    """One decode step of ``batch`` sequences at ``context`` cached tokens, as a point (group
    ``decode``; ``decode.naive`` for latent attention's naive form)."""
    d = evaluate.decode(replace(setting, batch=batch), context)
    naive = setting.architecture.mla and setting.mla_decode == "naive"
    return OperationPoint(f"decode step{', naive MLA' if naive else ''}, batch {batch}",
                          "decode.naive" if naive else "decode", context, d.flops, d.bytes,
                          d.time_s)


def decode_forms(setting: Setting) -> list[Setting]:
    """The setting, and for multi-head latent attention the same with the other decode form
    (absorbed first, then naive): the figures draw both."""
    if not setting.architecture.mla:
        return [setting]
    return [replace(setting, mla_decode=form) for form in ("absorbed", "naive")]

