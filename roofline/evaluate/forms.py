"""Derived forms: every expression the numbers need, per architecture, as trees.

For one :class:`~roofline.derive.architecture.Architecture` the forms are the prefill's
operations in each attention mode (name, kind, count, FLOPs, bytes), one decode step's
operations, the weights, parameters, KV cache and naive score footprint, and every crossover
(its defining equality, and the closed forms of the branches that hold at the shipped devices
and models: :mod:`.solved`) as expression trees of the exact expressions (nested lists:
:func:`tree`; the closed forms shown to users as ``sympy.sstr`` text), evaluated by
:mod:`roofline.evaluate.arith`, never ``eval``.

Deriving them takes SymPy a second or more, so the architectures of the shipped models are
derived ahead of time into ``roofline/derived.jsonl`` (``python -m roofline.evaluate``
rewrites it): a header line (the fingerprint, the catalogue's names, and the byte offset and
length of every line after it), a line with every catalogue entry in its JSON form (LaTeX
included: ``roofline derive NAME`` and the report's derivations need no SymPy), then two lines
per architecture and set of cache levels, its forms and its crossovers, of which a command
reads only those it needs, each with its repeated subtrees written once (:mod:`.sharing`). The
fingerprint covers the derivation sources and the SymPy version that wrote the file; it is
checked when loaded, and a stale file is never served: its architectures are derived afresh,
with a warning. Any other architecture is derived on first use.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import warnings
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from collections.abc import Callable, Iterator, Mapping, Sequence

from ..derive.architecture import ATTENTION_MODES, Architecture
from . import arith
from .sharing import pack, unpack

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["tree", "arch_key", "derive_forms", "forms", "crossover_forms", "fingerprint",
           "generate", "catalogue_topics", "catalogue_entries", "shipped_architectures", "write",
           "SHIPPED"]

SHIPPED = "derived.jsonl"
# What the forms are made from: a change to any of these makes the shipped file stale.
_SOURCES = ("symbols.py", "catalog.py", "derive", "evaluate/forms.py", "evaluate/solved.py",
            "evaluate/sharing.py")
# Forms added with parallelism across devices (issue 13): derived on first use where a shipped
# file written before them lacks them.
_PARALLEL_FORMS = ("prefill_parallel", "decode_tp", "weights_parallel", "kv_cache_tp",
                   "kv_cache_parallel")


def arch_key(arch: Architecture, caches: Sequence[str] = ()) -> str:
    """A stable text key of an architecture's flags and the cache levels it runs behind."""
    return json.dumps({**dataclasses.asdict(arch), "caches": list(caches)}, sort_keys=True)


def _sympy_version() -> str:
    """SymPy's version, read from its ``release.py`` without importing SymPy."""
    spec = find_spec("sympy")
    if spec is None or spec.origin is None:
        return "absent"
    text = Path(spec.origin).with_name("release.py").read_text(encoding="utf-8")
    return text.split("=", 1)[1].strip().strip("\"'") if "=" in text else "unknown"


def _hasher():
    """BLAKE2b-256 (RFC 7693). CPython's own ``_blake2`` when present: ``hashlib`` loads the
    OpenSSL bindings first, a few milliseconds of every start."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python
        from hashlib import blake2b
    return blake2b(digest_size=32)


@cache
def fingerprint() -> str:
    """BLAKE2b-256 of the derivation sources and the SymPy version."""
    root = Path(__file__).parents[1]
    digest = _hasher()
    digest.update(_sympy_version().encode())
    for name in _SOURCES:
        path = root / name
        for file in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(root).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def tree(expr: Any) -> arith.Tree:
    """A SymPy expression as the tree :mod:`.arith` evaluates: written as text in SymPy's own
    order (``roofline.symbols.arithmetic``) and read back, so that a tree shipped and one
    derived now are the same lists and give the same numbers."""
    from ..symbols import arithmetic

    return arith.parse(arithmetic(expr))


def _ops(ops: list[Any]) -> list[dict[str, Any]]:
    def one(op: Any) -> dict[str, Any]:
        out = {"name": op.name, "kind": op.kind, "count": tree(op.count),
               "flops": tree(op.flops), "bytes": tree(op.bytes)}
        if op.levels:  # the bytes each further memory level serves
            out["levels"] = {level: tree(q) for level, q in op.levels}
        return out
    return [one(op) for op in ops]


class Derived(Mapping[str, "Any"]):
    """Forms derived by SymPy on first use, each once: a command on an architecture that is not
    shipped pays only for what it reads (a crossover table needs the weights, not every
    attention mode's operations)."""

    def __init__(self, makers: dict[str, Callable[[], Any]]):
        self._makers, self._made = makers, {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._made:
            self._made[key] = self._makers[key]()
        return self._made[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


def _derivers(arch: Architecture, caches: tuple[str, ...], crossovers: bool) -> Derived:
    from ..derive import window
    from ..derive.decode import decode_operations, model_kv_cache_bytes
    from ..derive.moe import active_parameter_count
    from ..derive.transformer import parameter_count, prefill_operations, weight_bytes
    from .solved import solve_crossovers

    prefill = Derived({mode: lambda mode=mode: _ops(prefill_operations(arch, mode,
                                                                       caches=caches))
                        for mode in ATTENTION_MODES})
    from ..derive import parallel, tensor_parallel

    # one device's share under tensor, pipeline, expert and context parallelism, the degrees
    # symbols (N_tp, N_pp, N_ep, N_cp) that the setting supplies
    prefill_parallel = Derived({mode: lambda mode=mode: _ops(parallel.device_prefill_operations(
        arch, mode, caches=caches)) for mode in ATTENTION_MODES})
    makers = {
        "prefill": lambda: prefill,
        "decode": lambda: _ops(decode_operations(arch)),
        "parameters": lambda: tree(parameter_count(arch)),
        "active_parameters": lambda: tree(active_parameter_count(arch)),
        "weights": lambda: tree(weight_bytes(arch)),
        "kv_cache": lambda: tree(model_kv_cache_bytes(arch)),
        "scores": lambda: tree(window.largest_scores(arch)),
        "prefill_parallel": lambda: prefill_parallel,
        "decode_tp": lambda: _ops(parallel.device_decode_operations(arch)),
        "weights_parallel": lambda: tree(parallel.device_weight_bytes(arch)),
        "kv_cache_tp": lambda: tree(tensor_parallel.device_kv_cache_bytes(arch)),
        "kv_cache_parallel": lambda: tree(parallel.device_kv_cache_bytes(arch)),
    }
    if crossovers:
        makers["crossovers"] = lambda: solve_crossovers(arch, caches)
    return Derived(makers)


def derive_forms(arch: Architecture, caches: tuple[str, ...] = (),
                 crossovers: bool = True) -> dict[str, Any]:
    """Every form of ``arch`` behind ``caches``, derived and solved now by SymPy (the
    crossovers, which take most of the time, only with ``crossovers``), as plain data."""
    return _plain(_derivers(arch, caches, crossovers))


def _plain(value: Any) -> Any:
    """``value`` with every mapping (derived on use) made a dict, recursively: JSON data."""
    if isinstance(value, Mapping):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@cache
def _shipped() -> dict[str, Any]:
    """The shipped file's header: fingerprint, catalogue index, and the index of its lines (key
    → part → byte offset and length after the header), so that a command reads and parses
    only the lines of the architecture it asks for, not the whole file."""
    try:
        with open(Path(__file__).parents[1] / SHIPPED, "rb") as f:
            header = json.loads(f.readline())
    except FileNotFoundError:
        return {}
    if header.get("fingerprint") != fingerprint():
        warnings.warn(f"roofline/{SHIPPED} is stale (the derivations or SymPy changed since it "
                      "was written): deriving afresh; `python -m roofline.evaluate` "
                      "rewrites it", stacklevel=3)
        return {}
    return header


def _shipped_line(where: list[int]) -> dict[str, Any]:
    """The line at ``where`` (byte offset after the header, length) of the shipped file, read
    with the cyclic garbage collector paused: the trees are tens of thousands of small lists
    (no cycles), and a collection every 700 of them made reading a line several times slower
    in a process that holds many objects."""
    start, length = where
    with open(Path(__file__).parents[1] / SHIPPED, "rb") as f:
        f.readline()  # the header: the offsets count from its end
        f.seek(start, 1)
        data = f.read(length)
    paused = gc.isenabled()
    gc.disable()
    try:
        return json.loads(data)
    finally:
        if paused:
            gc.enable()


@cache
def _shipped_part(arch: Architecture, caches: tuple[str, ...],
                  part: str) -> dict[str, Any] | None:
    """The shipped ``part`` of ``arch`` behind ``caches``: "forms" (all but the crossovers) or
    "crossovers", each a line of its own, so that a command reads only the part it needs."""
    key = arch_key(arch, caches)
    where = _shipped().get("index", {}).get(key)
    if where is None:
        return None
    line = _shipped_line(where[part])
    if line["key"] != key:  # pragma: no cover - a file edited by hand
        raise ValueError(f"roofline/{SHIPPED}: its index points {key!r} at {line['key']!r}")
    return unpack(line[part])


@cache
def catalogue_entries() -> dict[str, dict[str, Any]] | None:
    """Every catalogue entry in its JSON form (``Entry.as_dict``: the expression as text and
    LaTeX, its symbols, assumptions and source), from the shipped file (None when stale or
    absent)."""
    where = _shipped().get("entries")
    return _shipped_line(where)["entries"] if where is not None else None


@cache
def forms(arch: Architecture, caches: tuple[str, ...] = ()) -> Mapping[str, Any]:
    """The forms of ``arch`` behind the cache levels ``caches`` but its crossovers: the shipped
    ones when fresh, else each derived on first use (a fraction of a second each)."""
    shipped = _shipped_part(arch, caches, "forms")
    if shipped is not None:  # a form the shipped file lacks is derived on first use
        def later(key: str) -> Callable[[], Any]:
            return lambda: _derivers(arch, caches, crossovers=False)[key]
        made = {k: (lambda v=v: v) for k, v in shipped.items()}
        return Derived({**{k: later(k) for k in _PARALLEL_FORMS if k not in made}, **made})
    return _derivers(arch, caches, crossovers=False)


@cache
def crossover_forms(arch: Architecture, caches: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every crossover of ``arch`` behind ``caches``: shipped, else derived now (only a command
    that asks for crossovers pays it; a branch's closed form is solved when a setting first
    needs it)."""
    from .solved import solve_crossovers

    shipped = _shipped_part(arch, caches, "crossovers")
    return shipped if shipped is not None else solve_crossovers(arch, caches)


def shipped_architectures() -> list[str]:
    """The keys of the architectures whose forms are shipped (and fresh)."""
    return list(_shipped().get("index", {}))


def catalogue_topics() -> dict[str, dict[str, str]] | None:
    """Every catalogue name → its topic, meaning and unit, from the shipped file (None when
    stale or absent)."""
    return _shipped().get("catalogue")


def write() -> Path:
    """Rewrite the shipped ``roofline/derived.jsonl``; the path written."""
    target = Path(__file__).parents[1] / SHIPPED
    target.write_text(generate(), encoding="utf-8")
    return target


def generate(workers: int | None = None) -> str:
    """The text of ``derived.jsonl``: the architectures of every shipped model (each windowed one
    also with its KV cache kept whole, each with its element-wise work fused too), behind every
    set of cache levels a shipped device has. The lines are derived in ``workers`` processes
    (default: one per core)."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from ..catalog import catalogue
    from ..derive.architecture import FUSIONS, MLA_DECODES
    from ..specs.hardware import list_hardware
    from ..specs.model import list_models
    from .setting import device_caches

    devices: dict[tuple[str, ...], list[str]] = {}
    for hw in list_hardware():
        devices.setdefault(device_caches(hw), []).append(hw.name)
    models: dict[Architecture, list[str]] = {}
    for m in list_models():
        base = m.architecture
        kv_caches = ("window", "full") if base.window != "none" else ("window",)
        decodes = MLA_DECODES if base.mla else (base.mla_decode,)  # the figures draw both
        for kv, fusion, decode in itertools.product(kv_caches, FUSIONS, decodes):
            arch = dataclasses.replace(base, kv_cache=kv, fusion=fusion, mla_decode=decode)
            models.setdefault(arch, []).append(m.name)
    jobs = [(arch, caches, shapes, hardware) for arch, shapes in models.items()
            for caches, hardware in devices.items()]
    with ProcessPoolExecutor(workers or os.cpu_count() or 1) as pool:
        lines = sorted(line for pair in pool.map(_lines, *zip(*jobs)) for line in pair)
    entries = json.dumps({"entries": {name: e.as_dict() for name, e in catalogue().items()}},
                         ensure_ascii=False)
    entries_size = len(entries.encode("utf-8"))
    index: dict[str, dict[str, list[int]]] = {}
    offset = entries_size + 1
    for key, part, line in lines:
        size = len(line.encode("utf-8"))
        index.setdefault(key, {})[part] = [offset, size]
        offset += size + 1  # and its newline
    header = {"fingerprint": fingerprint(),
              "catalogue": {name: {"topic": e.topic, "meaning": e.meaning, "unit": e.unit}
                            for name, e in catalogue().items()},
              "entries": [0, entries_size], "index": index}
    return "\n".join([json.dumps(header, ensure_ascii=False), entries,
                      *(ln for _, _, ln in lines)]) + "\n"


def _lines(arch: Architecture, caches: tuple[str, ...], models: list[str],
           hardware: list[str]) -> list[tuple[str, str, str]]:
    """(key, part, line) of the two lines of ``derived.jsonl`` for ``arch`` behind ``caches``:
    its forms, and its crossovers with the closed forms of the branches that hold at the
    shipped ``hardware`` and ``models``."""
    key = arch_key(arch, caches)
    derived = derive_forms(arch, caches)
    _add_shipped_branches(arch, caches, derived["crossovers"], models, hardware)
    crossovers = derived.pop("crossovers")
    return [(key, part, json.dumps({"key": key, part: pack(value)}, ensure_ascii=False,
                                   separators=(",", ":")))
            for part, value in (("forms", derived), ("crossovers", crossovers))]


def _add_shipped_branches(arch: Architecture, caches: tuple[str, ...],
                          crossovers: dict[str, Any], models: list[str],
                          hardware: list[str]) -> None:
    """Add to each crossover's ``roots`` the closed form of the main branch and of every branch
    that holds at the root of one of the shipped devices ``hardware`` (behind ``caches``), in
    each of its compute data types, for each of the shipped ``models`` of ``arch`` (batch 1):
    those settings then need no SymPy."""
    from ..specs.hardware import load_hardware
    from ..specs.model import load_model
    from .crossover import crossover_value
    from .setting import Setting
    from .solved import branch_root

    for name, form in crossovers.items():  # the catalogue's branch, whatever holds where
        form["roots"].setdefault(form["main"], branch_root(arch, caches, name, form["main"]))
    for hw in map(load_hardware, hardware):
        for dtype in hw.peak_flops:
            for model in map(load_model, models):
                s = Setting(hw, model, dtype, kv_cache=arch.kv_cache, fusion=arch.fusion)
                for name, form in crossovers.items():
                    key = crossover_value(s, name, form).branch
                    form["roots"].setdefault(key, branch_root(arch, caches, name, key))
