"""Named derivations: a stable dotted name → exact expression, meaning, unit, assumptions, source.

The catalogue is built on first use from the ``entries()`` of each derivation module, one topic
at a time, never at import time. Which topic holds which name (with its meaning and unit) is
shipped in ``roofline/derived.jsonl`` beside the derived forms, so that listing the names, or
refusing an unknown one, needs no SymPy, and ``get`` builds only its own topic; so is every
entry's JSON form (``record``: text, LaTeX, symbols, source), so that printing one needs none
either. Names are stable: documents cite them (``derivations/<topic>.md#<name>``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache

from .errors import UnknownNameError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing, which slows every start
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


def index() -> dict[str, dict[str, str]]:
    """Every name → its topic, meaning and unit: shipped (no SymPy), or built when the shipped
    file is stale."""
    from .evaluate.forms import catalogue_topics

    shipped = catalogue_topics()
    if shipped is not None:
        return shipped
    return {n: {"topic": e.topic, "meaning": e.meaning, "unit": e.unit}
            for n, e in catalogue().items()}


def names() -> list[str]:
    return list(index())


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name raises with the close valid names."""
    known = index()
    if name not in known:
        raise UnknownNameError("derivation", name, known, "roofline derive")
    return topic(known[name]["topic"])[name]


def record(name: str) -> dict[str, object]:
    """The JSON form of the entry called ``name`` (``Entry.as_dict``): shipped, or built from
    the entry where the shipped file is stale; an unknown name raises as :func:`get` does."""
    from .evaluate.forms import catalogue_entries

    shipped = catalogue_entries()
    if shipped is not None and name in shipped:
        return shipped[name]
    return get(name).as_dict()


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
