"""The inputs of the TTFT models, checked: each error names the argument in the library's words
(``rate``, ``batch_prompts``, ``chunk``), the rule and the value."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from ..errors import InputError
from ..specs.distribution import MAX_TOKENS, is_tokens

__all__ = ["PARALLEL", "MAX_BATCH", "MAX_CHUNKS", "MAX_TOKENS", "check_rate", "check_slo",
           "check_speedup", "check_replicas", "check_prompt", "check_batch", "check_chunk",
           "shown"]

PARALLEL = ("inter", "intra")
MAX_BATCH = 10**6  # the most prompts one batched prefill may hold
MAX_CHUNKS = 10**5  # the most chunks one chunked prefill may take (each is evaluated)


def shown(x: float) -> float | int:
    """A number as a message shows it: 10 rather than 10.0 (non-finite numbers as they are).

    >>> shown(10.0), shown(2.5), shown(float("inf"))
    (10, 2.5, inf)
    """
    x = _float(x)
    return int(x) if math.isfinite(x) and x.is_integer() and abs(x) < 1e15 else x


def _float(x: float) -> float:
    """``x`` as a float, an integer too large for one (``10**400``) as infinity."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _number(x: object) -> bool:
    """A real number (numpy's too), not a bool and not a string."""
    return isinstance(x, Real) and not isinstance(x, bool)


def _positive(x: object) -> bool:
    return _number(x) and math.isfinite(_float(x)) and x > 0


def check_rate(rate: float, option: str = "rate") -> None:
    if not _positive(rate):
        raise InputError(option, "the arrival rate must be a finite number > 0 per second",
                         shown(rate) if _number(rate) else rate)


def check_slo(slo: float, option: str = "slo", what: str = "the TTFT target") -> None:
    if not _positive(slo):
        raise InputError(option, f"{what} must be a finite number of seconds > 0",
                         shown(slo) if _number(slo) else slo)


def check_speedup(speedup: float, option: str = "speedup") -> None:
    """Two-way intra-op parallelism speeds a prefill up by K in (1, 2] (DistServe §3.1)."""
    if not (_number(speedup) and 1 < speedup <= 2):
        raise InputError(option, "a two-way intra-op speedup must lie in (1, 2]",
                         shown(speedup) if _number(speedup) else speedup)


def check_replicas(replicas: int, option: str = "replicas") -> None:
    """1 to MAX_BATCH replicas: more devices than any deployment is an input error, not a
    queue of 10⁵⁰ replicas."""
    if isinstance(replicas, bool) or not isinstance(replicas, Integral) or replicas < 1:
        raise InputError(option, "must be an integer ≥ 1", replicas)
    if replicas > MAX_BATCH:
        raise InputError(option, f"must be at most {MAX_BATCH:,}", replicas)


def check_prompt(prompt: int, option: str = "prompt") -> None:
    if not is_tokens(prompt):
        raise InputError(option, f"a prompt length must be a positive integer of at most "
                         f"{MAX_TOKENS:,} tokens", prompt)


def check_batch(batch: int, option: str = "batch_prompts") -> None:
    if isinstance(batch, bool) or not isinstance(batch, Integral) or not 1 <= batch <= MAX_BATCH:
        raise InputError(option, f"the number of prompts in a batch must be an integer from 1 "
                         f"to {MAX_BATCH:,}", batch)


def check_chunk(chunk: int, prompt: int, option: str = "chunk") -> None:
    if not (is_tokens(chunk) and chunk <= prompt):
        raise InputError(option, f"a chunk must be an integer from 1 to the prompt length "
                         f"{prompt} tokens", chunk)
    if -(-prompt // chunk) > MAX_CHUNKS:
        raise InputError(option, f"at most {MAX_CHUNKS:,} chunks: for {prompt:,} tokens, "
                         f"chunks of at least {-(-prompt // MAX_CHUNKS):,} tokens", chunk)


def first_split(setting: Any) -> tuple[str, int]:
    """The first of the setting's parallel degrees above 1, by its option's name, and its
    value: what an error names where a command models one device."""
    return next((name, getattr(setting, name)) for name in ("tp", "pp", "ep", "cp")
                if getattr(setting, name) > 1)
