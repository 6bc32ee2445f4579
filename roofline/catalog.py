"""Named derivations: a stable dotted name → exact expression, meaning, unit, assumptions, source.

The catalogue is built on first use from the ``entries()`` of each derivation module, one topic
at a time, never at import time. Each topic's names (with meaning and unit) and entries' JSON
forms (``record``: text, LaTeX, symbols, source) are kept in the user's cache
(:mod:`roofline.codegen.cache`) once built, so that listing the names, refusing an unknown one
or printing an entry needs no SymPy on later calls, and printing one entry builds only the
topics up to its own. Names are stable: documents cite them (``derivations/<topic>.md#<name>``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from . import codegen
from .errors import InputError, UnknownNameError

if TYPE_CHECKING:
    from .derive.entry import Entry

__all__ = ["catalogue", "get", "names", "select", "select_names", "index", "record", "TOPICS"]

# Derivation modules in the order of the data flow; each has ``entries() -> list[Entry]``.
TOPICS = ("projection", "attention", "window", "chunked", "levels", "transformer", "decode", "mla", "moe",
          "linear_attention", "sparse_attention",
          "bounds", "shapes", "overhead", "workspace", "scaling", "crossovers", "service", "hybrid",
          "comm",
          "tensor_parallel", "pipeline", "expert_parallel", "context_parallel", "parallel")


@cache
def topic(name: str) -> dict[str, Entry]:
    """The entries of one derivation module, by name, in their canonical form: the one their own
    string reads back to (``4*(2 - R*t)`` comes back distributed), so that
    ``parse_expr(sstr(expr))`` gives the same expression."""
    from sympy import parse_expr, sstr

    from .symbols import local_dict

    symbols = local_dict()
    out: dict[str, Entry] = {}
    for entry in importlib.import_module(f"roofline.derive.{name}").entries():
        expr = parse_expr(sstr(entry.expr), local_dict=symbols)
        out[entry.name] = type(entry)(**{**entry.__dict__, "expr": expr, "topic": name})
    return out


@cache
def catalogue() -> dict[str, Entry]:
    """Every registered derivation, by name (built once, on first use)."""
    out: dict[str, Entry] = {}
    for name in TOPICS:
        for key, entry in topic(name).items():
            if key in out:
                raise ValueError(f"derivation {key!r} registered twice")
            out[key] = entry
    return out


@cache
def _kept(name: str) -> dict[str, Any]:
    """One topic's names (each → its topic, meaning and unit) and entries' JSON forms, from the
    user's cache, built there on first use."""
    def make() -> str:
        entries = topic(name)
        return codegen.module_source(f"The catalogue's topic {name}: names and entries.", {
            "index": {n: {"topic": e.topic, "meaning": e.meaning, "unit": e.unit}
                      for n, e in entries.items()},
            "entries": {n: e.as_dict() for n, e in entries.items()}})
    return codegen.load(f"catalogue-{name}", make).DATA


def _holding(name: str) -> dict[str, Any] | None:
    """The kept topic that holds ``name``: the topic its first dotted part names, if any, tried
    first, then the others in order (a command that prints one entry builds only the topics
    up to its own); None where no topic holds it."""
    first = name.partition(".")[0]
    for t in sorted(TOPICS, key=lambda t: t != first):
        kept = _kept(t)
        if name in kept["index"]:
            return kept
    return None


def index() -> dict[str, dict[str, str]]:
    """Every name → its topic, meaning and unit."""
    return {n: e for t in TOPICS for n, e in _kept(t)["index"].items()}


def names() -> list[str]:
    return list(index())


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name raises with the close valid names."""
    if not isinstance(name, str):
        raise InputError("name", "a derivation is named by a string such as "
                         "'projection.flops'", name)
    kept = _holding(name)
    if kept is None:
        raise UnknownNameError("derivation", name, index(), "roofline derive")
    return topic(kept["index"][name]["topic"])[name]


def record(name: str) -> dict[str, object]:
    """The JSON form of the entry called ``name`` (``Entry.as_dict``); an unknown name raises
    as :func:`get` does."""
    kept = _holding(name)
    if kept is None:
        get(name)  # raises
    return kept["entries"][name]


def select_names(requested: Iterable[str]) -> list[str]:
    """Names by exact name, or else by a dotted prefix (``attention`` selects
    ``attention.*``), or else, without a dot, by words: the entries whose name or meaning holds
    every word (``fused``, ``"score matrix"``); one that matches nothing raises with the close
    valid names."""
    known = index()
    out: list[str] = []
    for name in requested:
        if name in known:
            out.append(name)
            continue
        matches = [n for n in known if n.startswith(name + ".")]
        if not matches and "." not in name:  # a dotted name is a name, mistyped or not
            matches = _search(name, known)
        if not matches:
            raise UnknownNameError("derivation", name, known, "roofline derive")
        out.extend(matches)
    return out


def _search(words: str, known: dict[str, dict[str, str]]) -> list[str]:
    """The names whose name or meaning holds every one of ``words``, ignoring case."""
    wanted = words.lower().split()
    return [n for n, e in known.items()
            if wanted and all(w in f"{n} {e['meaning']}".lower() for w in wanted)]


def select(requested: Iterable[str]) -> list[Entry]:
    """Entries by exact name, or else by a dotted prefix (:func:`select_names`)."""
    return [get(name) for name in select_names(requested)]
