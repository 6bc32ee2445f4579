"""Derived forms: every expression the numbers need, per architecture, as generated Python.

For one :class:`~roofline.derive.architecture.Architecture` behind a device's cache levels the
forms are the prefill's operations in each attention mode (name, kind, count, FLOPs, bytes, and
the bytes each further memory level serves), one decode step's operations, the weights, KV
cache and naive score footprint, one device's share of each under parallelism,
and every crossover (its defining equality, the Max/Min atoms that name its branches, and its
wide-layer approximation). SymPy derives them (:mod:`roofline.derive`) and writes them as a
Python module (:mod:`roofline.codegen`), kept in the user's cache and imported from
there on later calls: each expression is a plain function of its symbols by name, evaluated
with :func:`roofline.codegen.call`. The crossovers are a module of their own, so that a prefill does
not pay for them; the closed forms of their branches are solved when first asked for
(:mod:`.solved`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from .. import codegen
from ..derive.architecture import ATTENTION_MODES, Architecture

__all__ = ["arch_key", "forms", "crossover_forms", "sympy_forms", "sympy_crossovers",
           "module_name"]


def arch_key(arch: Architecture, caches: Sequence[str] = ()) -> str:
    """A stable text key of an architecture's flags and the cache levels it runs behind."""
    return json.dumps({**dataclasses.asdict(arch), "caches": list(caches)}, sort_keys=True)


def module_name(part: str, arch: Architecture, caches: Sequence[str] = ()) -> str:
    """The cache's name of an architecture's generated ``part`` ("forms", "crossovers",
    "roots")."""
    return codegen.module_name(part, arch, list(caches))


def _ops(ops: list[Any]) -> list[dict[str, Any]]:
    return [{"name": op.name, "kind": op.kind, "count": op.count, "flops": op.flops,
             "bytes": op.bytes, "levels": dict(op.levels)} for op in ops]


def sympy_forms(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every form of ``arch`` behind ``caches`` but its crossovers, as SymPy expressions."""
    from ..derive import parallel, tensor_parallel, window
    from ..derive.decode import decode_operations, model_kv_cache_bytes
    from ..derive.transformer import prefill_operations, weight_bytes

    return {
        "prefill": {mode: _ops(prefill_operations(arch, mode, caches=caches))
                    for mode in ATTENTION_MODES},
        # one device's share under tensor, pipeline, expert and context parallelism, the
        # degrees (N_tp, N_pp, N_ep, N_cp) symbols that the setting supplies
        "prefill_parallel": {mode: _ops(parallel.device_prefill_operations(arch, mode,
                                                                           caches=caches))
                             for mode in ATTENTION_MODES},
        "decode": _ops(decode_operations(arch)),
        "decode_tp": _ops(parallel.device_decode_operations(arch)),
        "weights": weight_bytes(arch),
        "kv_cache": model_kv_cache_bytes(arch),
        "scores": window.largest_scores(arch),
        "weights_parallel": parallel.device_weight_bytes(arch),
        "kv_cache_tp": tensor_parallel.device_kv_cache_bytes(arch),
        "kv_cache_parallel": parallel.device_kv_cache_bytes(arch),
    }


def sympy_crossovers(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every crossover of ``arch`` behind ``caches`` as data with SymPy expressions: its
    equality (``grows``, ``other``), its atoms' arguments, the key of its main branch
    (:func:`.solved.choice_key`) and its wide-layer approximation (text, LaTeX and value)."""
    from sympy import sstr

    from ..derive.crossovers import crossovers
    from ..symbols import latex
    from .solved import choice_key

    def simplified(c: Any) -> dict[str, Any] | None:
        approx = c.simplified()
        if approx is None:
            return None
        return {"expr": sstr(approx), "latex": latex(approx), "value": approx}

    return {name: {"meaning": c.meaning, "unit": c.unit, "unknown": c.unknown.name,
                   "kind": c.kind, "grows": c.grows, "other": c.other,
                   "atoms": [{"kind": type(a).__name__, "args": list(a.args)} for a in c.atoms],
                   "main": choice_key(c.main_choice), "simplified": simplified(c)}
            for name, c in crossovers(arch, caches).items()}


def _title(part: str, arch: Architecture, caches: tuple[str, ...]) -> str:
    return f"The {part} of the architecture {arch_key(arch, caches)}."


@cache
def forms(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """The forms of ``arch`` behind ``caches`` but its crossovers, as generated functions."""
    def make() -> str:
        return codegen.module_source(_title("forms", arch, caches), sympy_forms(arch, caches))
    return codegen.load(module_name("forms", arch, caches), make).DATA


@cache
def crossover_forms(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every crossover of ``arch`` behind ``caches``, as generated functions, each with the
    closed forms of its branches solved so far (``roots``: :mod:`.solved`)."""
    from .solved import roots

    def make() -> str:
        return codegen.module_source(_title("crossovers", arch, caches), sympy_crossovers(arch, caches))
    data = codegen.load(module_name("crossovers", arch, caches), make).DATA
    solved = roots(arch, caches)
    for name, c in data.items():
        c["roots"] = solved.setdefault(name, {})
    return data

