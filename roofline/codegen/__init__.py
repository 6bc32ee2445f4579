"""Python code that SymPy writes: the derived forms as plain functions (:mod:`.printer`), the
functions they call for numbers and numpy arrays (:mod:`.runtime`), and the user's cache that
keeps the generated modules between calls (:mod:`.cache`)."""

from .cache import load, module_name
from .printer import addition_source, call, function, module_source, names

__all__ = ["module_source", "addition_source", "function", "call", "names", "load",
           "module_name"]
