"""The phases figure's axes (:mod:`roofline.plot.phases`): the prompt lengths of its prefill
panel, long enough to show where a cache level's traffic ends the compute-bound regime, and
the batches of its decode panel; the whole prefill's intensity at a cache level."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import evaluate, sweeps
from ..errors import InputError
from ..evaluate import Setting
from ._common import as_list, crossovers

__all__ = ["PROMPTS", "level_intensity", "prompt_sweep", "decode_batches", "regime", "cached"]

PROMPTS = np.geomspace(16, 2**17, 141)
_LONGEST = 2**20  # the prompt axis runs at most this far to show where a cache level binds


def level_intensity(setting: Setting, tokens: np.ndarray | Sequence[int],
                    level: str) -> np.ndarray:
    """FLOP per byte at the memory level ``level`` ("l2", "l3", "sram") of the whole prefill of
    the whole model on one device (as :func:`roofline.sweeps.intensity`): Σ count·F over the
    bytes at that level, an operation whose traffic there is derived (fused attention behind
    a cache) with those bytes, every other with its HBM bytes, which pass through the level
    (the whole prefill's rule in :func:`roofline.evaluate.prefill_columns`)."""
    xs = np.asarray(tokens, dtype=float)
    whole = setting if not setting.parallel else replace(
        setting, tp=1, pp=1, ep=1, cp=1, overlap=False, network=None)
    flops: Any = 0.0
    nbytes: Any = 0.0
    for op in evaluate.operations(whole):
        served = {name: q_at for name, _, q_at in op.levels}
        flops = flops + op.count * op.flops(xs)
        nbytes = nbytes + op.count * (served[level](xs) if level in served else op.bytes(xs))
    return np.broadcast_to(flops / nbytes, xs.shape).astype(float)


def regime(s: Setting) -> tuple[Any, str]:
    """The prefill's compute-bound crossover and the memory level whose traffic ends it
    ("hbm"; "l2", "l3" or "sram" for a cache level; "" where it does not end)."""
    v = crossovers(s)[f"prefill_compute_bound_tokens.{s.attention}"]
    if not (v.exists and v.ends_at):
        return v, ""
    level = evaluate.attention_level(s, math.ceil(v.ends_at))
    return v, "hbm" if level == "compute" else level


def cached(level: str) -> bool:
    """Whether :func:`regime`'s level is a cache level (not HBM, not none)."""
    return level not in ("", "hbm")


def prompt_sweep(settings: Setting | Sequence[Setting],
                 max_prompt: int | None = None) -> np.ndarray:
    """The prefill panel's prompt lengths: 16 to 131,072 (:data:`PROMPTS`), or on to the
    power of two past 1.25× the longest prompt (up to 2²⁰) where a cache level's traffic
    ends a device's compute-bound regime, so that the crossing shows; or, given
    ``max_prompt``, 16 to it (the axis ends there), 36 a decade as the default's.

    >>> from roofline.api import setting
    >>> xs = prompt_sweep(setting("H100-SXM", "Llama-3-8B"), max_prompt=4096)
    >>> xs[[0, -1]].tolist(), len(xs)
    ([16.0, 4096.0], 88)
    """
    if max_prompt is not None:
        high = float(max_prompt)
        if isinstance(max_prompt, bool) or not high > 16:
            raise InputError("max_prompt", "must be more than 16 tokens", max_prompt)
        return np.geomspace(16, high, max(int(round(36 * np.log10(high / 16))) + 1, 2))
    ends = [v.ends_at for v, level in map(regime, as_list(settings))
            if cached(level) and v.ends_at <= _LONGEST / 1.25]
    high = 2.0 ** np.ceil(np.log2(1.25 * max(ends))) if ends else PROMPTS[-1]
    if high <= PROMPTS[-1]:
        return PROMPTS
    return np.geomspace(16, high, int(round(36 * np.log10(high / 16))) + 1)


def decode_batches(settings: Setting | Sequence[Setting], context: int,
                   batches: Sequence[int] = ()) -> np.ndarray:
    """The decode panel's batches: 1 to the power of two past the largest of twice the largest
    batch any device holds at ``context``, the batches asked for and the critical batches
    (×1.2), 30 per decade: the axis no longer runs far past what any device holds."""
    group = as_list(settings)
    held = max(sweeps.max_batch(s, context) for s in group)
    critical = [crossovers(s)["decode_critical_batch"] for s in group]
    high = max([16.0, 2.0 * held, *batches, *(1.2 * v.value for v in critical if v.exists)])
    high = 2.0 ** np.ceil(np.log2(high))
    return np.geomspace(1, high, int(30 * np.log10(high)) + 1)
