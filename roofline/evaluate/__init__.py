"""The evaluation core: the one place where numbers are made.

A :class:`Setting` (device, model, data types, attention mode, batch) specialises the derived
forms of its model's architecture (:mod:`.forms`: Python functions that SymPy wrote, kept in the
user's cache by :mod:`roofline.codegen`), with the setting's numbers bound
(:mod:`.compiled`), to prefill, decode (:mod:`.phases`; the prefill at many prompt lengths,
:mod:`.points`; their memory, :mod:`.memory`) and crossovers (:mod:`.crossover`); the
symbolic path (:mod:`.symbolic`) evaluates any other SymPy expression for a setting, exactly
or over arrays.
An operation's roofline time is :func:`roofline_time`, written once.

>>> from roofline.evaluate import Setting, prefill  # doctest: +SKIP
"""

from __future__ import annotations

from .._lazy import lazy

# public name → the module of this package that defines it; imported on first use (PEP 562), so
# that a caller of one part (the catalogue's index in ``forms``) loads no other
_WHERE = {
    **dict.fromkeys(("CrossoverValue", "crossover_value", "crossover_values",
                     "solve_closed_forms"), "crossover"),
    "CompiledOp": "compiled",
    **dict.fromkeys(("DecodeResult", "OpResult", "PrefillPoint", "bound", "check_count",
                     "check_prompts", "decode", "operations", "prefill_time", "prefill_columns",
                     "roofline_time"), "phases"),
    **dict.fromkeys(("check_memory", "footprint", "held_bytes", "memory_bytes", "fullest_stage",
                     "activation_bytes", "peak_bytes"), "memory"),
    **dict.fromkeys(("prefill", "PrefillPoints", "attention_level"), "points"),
    "Setting": "setting",
    **dict.fromkeys(("exact", "numeric", "scalar", "prefill_expressions"), "symbolic"),
}

__all__ = list(_WHERE)
__getattr__, __dir__ = lazy(__name__, _WHERE)
