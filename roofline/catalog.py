"""Named derivations: a stable dotted name → exact expression, meaning, unit, assumptions, source.

The catalogue is built on first use from the ``entries()`` of each derivation module, never at
import time. Names are stable: documents cite them (``derivations/<topic>.md#<name>``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache

from sympy import parse_expr, sstr

from .derive.entry import Entry
from .errors import UnknownNameError
from .symbols import local_dict

__all__ = ["Entry", "catalogue", "get", "names", "select", "TOPICS"]

# Derivation modules in the order of the data flow; each has ``entries() -> list[Entry]``.
TOPICS = ("projection", "attention", "transformer", "decode", "bounds", "scaling", "crossovers",
          "service")


@cache
def catalogue() -> dict[str, Entry]:
    """Every registered derivation, by name (built once, on first use)."""
    out: dict[str, Entry] = {}
    symbols = local_dict()
    for topic in TOPICS:
        module = importlib.import_module(f"roofline.derive.{topic}")
        for entry in module.entries():
            if entry.name in out:
                raise ValueError(f"derivation {entry.name!r} registered twice")
            # the canonical form is the one its own string reads back to (``4*(2 - R*t)``
            # comes back distributed), so ``parse_expr(sstr(expr))`` gives the same expression
            expr = parse_expr(sstr(entry.expr), local_dict=symbols)
            out[entry.name] = Entry(**{**entry.__dict__, "expr": expr, "topic": topic})
    return out


def names() -> list[str]:
    return list(catalogue())


def get(name: str) -> Entry:
    """The entry called ``name``; an unknown name raises with the close valid names."""
    try:
        return catalogue()[name]
    except KeyError:
        raise UnknownNameError("derivation", name, catalogue(), "roofline derive") from None


def select(requested: Iterable[str]) -> list[Entry]:
    """Entries by exact name, or else by a dotted prefix (``attention`` selects
    ``attention.*``)."""
    out: list[Entry] = []
    for name in requested:
        if name in catalogue():
            out.append(catalogue()[name])
            continue
        matches = [e for n, e in catalogue().items() if n.startswith(name + ".")]
        out.extend(matches or [get(name)])
    return out
