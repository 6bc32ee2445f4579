"""The crossovers, solved once and kept as text, so that evaluating them needs no solving.

Solving every crossover of an architecture symbolically takes a second or more; the
architectures of the shipped models are solved ahead of time into ``roofline/crossovers.json``
(by ``python -m roofline.compiled``; a test fails when it is stale), and any other architecture
is solved on first use in the process. The text is ``sympy.sstr`` of the exact expressions, read
back for numbers by :mod:`roofline.arith` (never ``eval``).
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .derive.transformer import Architecture

__all__ = ["arch_key", "compile_arch", "compiled", "generate", "SHIPPED"]

SHIPPED = "crossovers.json"


def arch_key(arch: Architecture) -> str:
    """A stable text key of an architecture's flags."""
    return json.dumps(dataclasses.asdict(arch), sort_keys=True)


def compile_arch(arch: Architecture) -> dict[str, dict[str, Any]]:
    """Every crossover of ``arch`` with every branch solved, as text."""
    from sympy import sstr

    from .derive.crossovers import crossovers
    from .symbols import latex

    out = {}
    for name, c in crossovers(arch).items():
        approx = c.simplified()
        out[name] = {
            "meaning": c.meaning, "unit": c.unit, "unknown": c.unknown.name, "kind": c.kind,
            "grows": sstr(c.grows), "other": sstr(c.other),
            "simplified": None if approx is None else {"expr": sstr(approx),
                                                       "latex": latex(approx)},
            "branches": [{"coefficients": [sstr(a) for a in b.coefficients],
                          "choices": [[sstr(atom), sstr(arg)] for atom, arg in b.choices],
                          "root": sstr(b.root), "latex": latex(b.root)}
                         for b in c.branches],
        }
    return out


@cache
def _shipped() -> dict[str, Any]:
    try:
        text = (resources.files("roofline") / SHIPPED).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return json.loads(text)


@cache
def compiled(arch: Architecture) -> dict[str, dict[str, Any]]:
    """The solved crossovers of ``arch``: shipped ones if present, else solved now."""
    return _shipped().get(arch_key(arch)) or compile_arch(arch)


def generate() -> str:
    """The text of ``crossovers.json`` for the architectures of every shipped model."""
    from .specs.model import list_models

    archs = {arch_key(m.architecture): m.architecture for m in list_models()}
    table = {key: compile_arch(archs[key]) for key in sorted(archs)}
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    path = Path(__file__).with_name(SHIPPED)
    path.write_text(generate(), encoding="utf-8")
    print(f"wrote {path}")
