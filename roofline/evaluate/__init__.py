"""The evaluation core: the one place where numbers are made.

A :class:`Setting` (device, model, data types, attention mode, batch) specialises the derived
forms of its model's architecture (:mod:`.forms`: text written once by SymPy, shipped for the
shipped architectures and checked by fingerprint). The fast path compiles those texts with the
setting's numbers folded in (:mod:`.arith`, no SymPy, no ``eval``) and evaluates prefill,
decode (:mod:`.prefill`) and crossovers (:mod:`.crossover`); the symbolic path
(:mod:`.symbolic`) evaluates any other SymPy expression for a setting, exactly or over arrays.
An operation's roofline time is :func:`roofline_time`, written once.

>>> from roofline.evaluate import Setting, prefill  # doctest: +SKIP
"""

from .crossover import CrossoverValue, crossover_value, crossover_values
from .prefill import (CompiledOp, DecodeResult, OpResult, PrefillPoint, bound, check_count,
                      check_memory, check_prompts, memory_bytes,
                      decode, operations, prefill, prefill_time, roofline_time)
from .setting import Setting
from .symbolic import exact, numeric, scalar

__all__ = ["Setting", "OpResult", "PrefillPoint", "DecodeResult", "CrossoverValue", "CompiledOp",
           "prefill", "prefill_time", "decode", "operations", "crossover_values", "crossover_value",
           "roofline_time", "bound", "check_prompts", "check_count", "check_memory", "memory_bytes", "exact", "numeric", "scalar"]
