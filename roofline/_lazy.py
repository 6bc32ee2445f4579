"""Lazy package faces (PEP 562): a package lists which of its modules defines each public name,
and the module is imported only when the name is first used, so importing the package loads
nothing heavy."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(package: str, where: Mapping[str, str]) -> tuple[Callable[[str], Any],
                                                          Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose public name ``n`` is defined in its
    module ``where[n]``; a name once imported is kept in the package's namespace."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
