"""Named derivations: a stable dotted name → exact expression, meaning, unit, assumptions, source.

The catalogue is built on first use from the ``entries()`` of each derivation module, one topic
at a time, never at import time. Which topic holds which name (with its meaning and unit), and
every entry's JSON form (``record``: text, LaTeX, symbols, source), are kept in the user's cache
(:mod:`roofline.codegen.cache`) once built, so that listing the names, refusing an unknown one
or printing an entry needs no SymPy on later calls. Names are stable: documents cite them (``derivations/<topic>.md#<name>``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from . import codegen
from .errors import UnknownNameError

if TYPE_CHECKING:
    from .derive.entry import Entry

__all__ = ["catalogue", "get", "names", "select", "select_names", "index", "record", "TOPICS"]

# Derivation modules in the order of the data flow; each has ``entries() -> list[Entry]``.
TOPICS = ("projection", "attention", "window", "levels", "transformer", "decode", "mla", "moe",
          "bounds", "scaling", "crossovers", "service", "comm",
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
def _kept() -> dict[str, Any]:
    """``index`` (every name → its topic, meaning and unit) and ``entries`` (every entry's JSON
    form), from the user's cache, built there on first use."""
    def make() -> str:
        entries = catalogue()
        return codegen.module_source("The catalogue's names and entries.", {
            "index": {n: {"topic": e.topic, "meaning": e.meaning, "unit": e.unit}
                      for n, e in entries.items()},
            "entries": {n: e.as_dict() for n, e in entries.items()}})
    return codegen.load("catalogue", make).DATA


def index() -> dict[str, dict[str, str]]:
    """Every name → its topic, meaning and unit."""
    return _kept()["index"]


def names() -> list[str]:
    return list(index())


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name raises with the close valid names."""
    known = index()
    if name not in known:
        raise UnknownNameError("derivation", name, known, "roofline derive")
    return topic(known[name]["topic"])[name]


def record(name: str) -> dict[str, object]:
    """The JSON form of the entry called ``name`` (``Entry.as_dict``); an unknown name raises
    as :func:`get` does."""
    entries = _kept()["entries"]
    if name not in entries:
        get(name)  # raises
    return entries[name]


def select_names(requested: Iterable[str]) -> list[str]:
    """Names by exact name, or else by a dotted prefix (``attention`` selects
    ``attention.*``); an unknown one raises with the close valid names."""
    known = index()
    out: list[str] = []
    for name in requested:
        if name in known:
            out.append(name)
            continue
        matches = [n for n in known if n.startswith(name + ".")]
        if not matches:
            raise UnknownNameError("derivation", name, known, "roofline derive")
        out.extend(matches)
    return out


def select(requested: Iterable[str]) -> list[Entry]:
    """Entries by exact name, or else by a dotted prefix (:func:`select_names`)."""
    return [get(name) for name in select_names(requested)]
