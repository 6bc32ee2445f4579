"""Derived forms: every expression the numbers need, per architecture, as generated Python.

For one :class:`~roofline.derive.architecture.Architecture` behind a device's cache levels the
forms are the prefill's operations in each attention mode (name, kind, count, FLOPs, bytes, and
the bytes each further memory level serves), one decode step's operations, the weights, KV
cache and naive score footprint, one device's share of each under parallelism, and every
crossover (its defining equality, the Max/Min atoms that name its branches, and its wide-layer
approximation). SymPy derives them (:mod:`roofline.derive`) and writes them as Python modules
(:mod:`roofline.codegen`), kept in the user's cache and imported from there on later calls:
each expression is a plain function of its symbols by name, evaluated with
:func:`roofline.codegen.call`. Each part (:data:`PARTS`: the footprints, the decode step, each
attention mode's prefill) and the crossovers are modules of their own, made on first use, so
that a command pays only for what it reads; the closed forms of the crossovers' branches are
solved when first asked for (:mod:`.solved`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from .. import codegen
from ..derive.architecture import ATTENTION_MODES, Architecture

__all__ = ["arch_key", "forms", "crossover_forms", "sympy_forms", "sympy_part",
           "sympy_crossovers", "module_name", "PARTS"]


def arch_key(arch: Architecture, caches: Sequence[str] = ()) -> str:
    """A stable text key of an architecture's flags and the cache levels it runs behind."""
    return json.dumps({**dataclasses.asdict(arch), "caches": list(caches)}, sort_keys=True)


def module_name(part: str, arch: Architecture, caches: Sequence[str] = ()) -> str:
    """The cache's name of an architecture's generated ``part`` (one of :data:`PARTS`,
    "crossovers", "roots")."""
    return codegen.module_name(part, arch, list(caches))


def _ops(ops: list[Any]) -> list[dict[str, Any]]:
    return [{"name": op.name, "kind": op.kind, "count": op.count, "flops": op.flops,
             "bytes": op.bytes, "levels": dict(op.levels), "shape": op.shape} for op in ops]


# The parts of an architecture's forms, each a module of its own made on first use, so that a
# command pays only for what it reads: a prefill the operations of its attention mode, a
# crossover table the footprints.
PARTS = ("decode", "footprints", "hybrid", *(f"prefill-{mode}" for mode in ATTENTION_MODES))


def sympy_part(arch: Architecture, caches: tuple[str, ...], part: str) -> dict[str, Any]:
    """One part of the forms of ``arch`` behind ``caches`` (:data:`PARTS`), derived by SymPy."""
    from ..derive import local, parallel, tensor_parallel
    from ..derive.decode import decode_operations, model_kv_cache_bytes
    from ..derive.transformer import prefill_operations, weight_bytes

    if part == "decode":
        return {"decode": _ops(decode_operations(arch)),
                "decode_tp": _ops(parallel.device_decode_operations(arch))}
    if part == "hybrid":  # a prefill chunk beside decodes, each attention mode's
        from ..derive import hybrid

        done = hybrid.unsupported(arch) is None
        return {f"hybrid{tp}": {mode: _ops(ops(arch, mode, caches)) for mode in ATTENTION_MODES}
                if done else {} for tp, ops in (("", hybrid.hybrid_operations),
                                                ("_tp", hybrid.tp_hybrid_operations))}
    if part == "footprints":
        from ..derive import workspace

        live = ({mode: workspace.activation_bytes(arch, mode) for mode in ATTENTION_MODES}
                if workspace.supported(arch) else {})
        return {"weights": weight_bytes(arch), "kv_cache": model_kv_cache_bytes(arch),
                "activations": live,
                "scores": local.largest_scores(arch),
                "weights_parallel": parallel.device_weight_bytes(arch),
                "kv_cache_tp": tensor_parallel.device_kv_cache_bytes(arch),
                "kv_cache_parallel": parallel.device_kv_cache_bytes(arch),
                "edges_parallel": dict(zip(("counted", "first", "last"),
                                           parallel.device_edge_bytes(arch)))}
    mode = part.removeprefix("prefill-")
    # one device's share under tensor, pipeline, expert and context parallelism too, the
    # degrees (N_tp, N_pp, N_ep, N_cp) symbols that the setting supplies
    return {"prefill": _ops(prefill_operations(arch, mode, caches=caches)),
            "prefill_parallel": _ops(parallel.device_prefill_operations(arch, mode,
                                                                        caches=caches))}


def sympy_forms(arch: Architecture, caches: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """Every form of ``arch`` behind ``caches`` but its crossovers, as SymPy expressions, under
    the keys of :func:`forms`."""
    return _Forms({part: sympy_part(arch, caches, part) for part in PARTS})


class _ByMode(Mapping[str, Any]):
    """An attention mode → its forms under ``key``, each mode's part read on first use."""

    def __init__(self, parts: Mapping[str, Any], key: str):
        self._parts, self._key = parts, key

    def __getitem__(self, mode: str) -> Any:
        if mode not in ATTENTION_MODES:
            raise KeyError(mode)
        return self._parts[f"prefill-{mode}"][self._key]

    def __iter__(self) -> Iterator[str]:
        return iter(ATTENTION_MODES)

    def __len__(self) -> int:
        return len(ATTENTION_MODES)


class _Parts(Mapping[str, Any]):
    """The generated modules of an architecture's parts, each loaded (or made) on first use."""

    def __init__(self, arch: Architecture, caches: tuple[str, ...]):
        self._arch, self._caches, self._loaded = arch, caches, {}

    def __getitem__(self, part: str) -> Any:
        if part not in PARTS:
            raise KeyError(part)
        if part not in self._loaded:
            def make() -> str:
                return codegen.module_source(_title(part, self._arch, self._caches),
                                             sympy_part(self._arch, self._caches, part))
            name = module_name(part, self._arch, self._caches)
            self._loaded[part] = codegen.load(name, make).DATA
        return self._loaded[part]

    def __iter__(self) -> Iterator[str]:
        return iter(PARTS)

    def __len__(self) -> int:
        return len(PARTS)


def sympy_crossovers(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every crossover of ``arch`` behind ``caches`` as data with SymPy expressions: its
    equality (``grows``, ``other``), its atoms' arguments, the key of its main branch
    (:func:`.solved.choice_key`) and its wide-layer approximation (text, LaTeX and value)."""
    from ..derive.crossovers import crossovers
    from ..forked import map_halves
    from .solved import choice_key

    found = crossovers(arch, caches)
    # the wide-layer forms solved half in a forked process (which inherits ``found``)
    approx = dict(zip(found, map_halves(_simplified, list(found.values()), least=8)))
    return {name: {"meaning": c.meaning, "unit": c.unit, "unknown": c.unknown.name,
                   "kind": c.kind, "grows": c.grows, "other": c.other,
                   "atoms": [{"kind": type(a).__name__, "args": list(a.args)} for a in c.atoms],
                   "main": choice_key(c.main_choice), "simplified": approx[name]}
            for name, c in found.items()}


def _simplified(c: Any) -> dict[str, Any] | None:
    """A crossover's wide-layer form (text, LaTeX, expression), or None."""
    from sympy import sstr

    from ..symbols import latex

    approx = c.simplified()
    if approx is None:
        return None
    return {"expr": sstr(approx), "latex": latex(approx), "value": approx}


def _title(part: str, arch: Architecture, caches: tuple[str, ...]) -> str:
    return f"The {part} of the architecture {arch_key(arch, caches)}."


@cache
def forms(arch: Architecture, caches: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """The forms of ``arch`` behind ``caches`` but its crossovers, as generated functions: the
    footprints and the decode step's, and by attention mode the prefill's (each part a module
    of its own, made or read when first used). They hold one device's and its share under
    parallelism alike: ``arch.parallel`` and ``arch.staged`` do not key them."""
    if arch.parallel or arch.staged:
        return forms(dataclasses.replace(arch, parallel=False, staged=False), caches)
    return _Forms(_Parts(arch, caches))


class _Forms(Mapping[str, Any]):
    """The forms under one mapping, from their parts (:data:`PARTS`): ``prefill`` and
    ``prefill_parallel`` by attention mode, the rest by key; a key reads only its own part (a
    part of :class:`_Parts` is made or read on first use)."""

    _OWN = {"decode": ("decode", "decode_tp"), "hybrid": ("hybrid", "hybrid_tp"),
            "footprints": ("weights", "kv_cache", "scores", "activations", "weights_parallel",
                           "kv_cache_tp", "kv_cache_parallel", "edges_parallel")}

    def __init__(self, parts: Mapping[str, Any]):
        self._parts = parts

    def __getitem__(self, key: str) -> Any:
        if key in ("prefill", "prefill_parallel"):
            return _ByMode(self._parts, key)
        part = next((p for p, keys in self._OWN.items() if key in keys), None)
        if part is None:
            raise KeyError(key)
        return self._parts[part][key]

    def __iter__(self) -> Iterator[str]:
        return iter(("prefill", "prefill_parallel", *(k for ks in self._OWN.values()
                                                      for k in ks)))

    def __len__(self) -> int:
        return 2 + sum(map(len, self._OWN.values()))


@cache
def crossover_forms(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every crossover of ``arch`` behind ``caches``, as generated functions, each with the
    closed forms of its branches solved so far (``roots``: :mod:`.solved`)."""
    from .solved import roots

    def make() -> str:
        return codegen.module_source(_title("crossovers", arch, caches),
                                     sympy_crossovers(arch, caches))
    data = codegen.load(module_name("crossovers", arch, caches), make).DATA
    solved = roots(arch, caches)
    for name, c in data.items():
        c["roots"] = solved.setdefault(name, {})
    return data

