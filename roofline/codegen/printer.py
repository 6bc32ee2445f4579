"""Python code written by SymPy: the derived forms as plain functions.

:func:`module_source` turns data whose leaves are SymPy expressions (nested dicts and lists of
names, numbers and expressions) into the text of a Python module: one function per distinct
expression, its arguments the expression's symbols by name (sorted), its body what
``sympy.cse`` and SymPy's Python code printer write, and ``DATA``, the same structure with each
expression replaced by its function. The functions call :mod:`.runtime` for ``Max``, ``Min``,
``ceiling``, ``floor``, ``sqrt`` and ``Abs``, so that one function serves numbers (exact where
its arguments are integers) and numpy arrays. :func:`call` evaluates one for a mapping of
numbers by symbol name.

>>> from sympy import Max, symbols
>>> T, a = symbols("T a", positive=True)
>>> namespace = {}
>>> exec(module_source("example", {"f": 2 * T * a + Max(T, 3)}), namespace)
>>> call(namespace["DATA"]["f"], {"T": 4, "a": 5})
44
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["module_source", "addition_source", "function", "call", "names"]

_HELPERS = ("Abs", "Max", "Min", "ceiling", "floor", "sqrt")


def _printer() -> Any:
    from sympy.printing.pycode import PythonCodePrinter

    class Printer(PythonCodePrinter):
        """SymPy's Python printer, with the functions of :mod:`.runtime` under their names."""

        def _call(self, name: str, expr: Any) -> str:
            return f"{name}({', '.join(self._print(a) for a in expr.args)})"

        def _print_ceiling(self, expr: Any) -> str:
            return self._call("ceiling", expr)

        def _print_floor(self, expr: Any) -> str:
            return self._call("floor", expr)

        def _print_Abs(self, expr: Any) -> str:
            return self._call("Abs", expr)

        def _print_Pow(self, expr: Any, rational: bool = False) -> str:
            return self._hprint_Pow(expr, rational=rational, sqrt="sqrt")

        def _print_Function(self, expr: Any) -> str:  # the inert Max and Min (:func:`_inert`)
            name = type(expr).__name__
            if name in ("Max", "Min"):
                return self._call(name, expr)
            return super()._print_Function(expr)

    return Printer({"fully_qualified_modules": False, "standard": "python3"})


def _inert(expr: Any) -> Any:
    """``expr`` with every Max and Min an inert function of the same name: ``cse`` rebuilds the
    expressions it shares, and SymPy's own Max and Min compare their arguments pairwise on every
    rebuild (most of the time a crossover's code took); the printer writes both alike."""
    from sympy import Function, Max, Min

    if not expr.args:
        return expr
    args = [_inert(a) for a in expr.args]
    if isinstance(expr, Max | Min):
        return Function(type(expr).__name__)(*args)
    return expr.func(*args) if args != list(expr.args) else expr


def _function(name: str, expr: Any, printer: Any) -> str:
    """The text of ``def name(symbols...)`` returning ``expr``, common subexpressions shared."""
    from sympy import cse, numbered_symbols

    args = sorted(s.name for s in expr.free_symbols)
    taken = set(args)
    temps = (s for s in numbered_symbols("x") if s.name not in taken)
    steps, (reduced,) = cse(_inert(expr), symbols=temps, order="none")
    body = [f"    {s} = {printer.doprint(v)}" for s, v in steps]
    return "\n".join([f"def {name}({', '.join(args)}):", *body,
                      f"    return {printer.doprint(reduced)}"])


class _Writer:
    """Functions and literals of one piece of generated text; function names start with
    ``prefix`` (text appended to a module gets its own). :meth:`literal` names each distinct
    expression; :meth:`functions` writes them, half of them in a forked process where the
    machine has two cores (:func:`roofline.forked.map_halves`): SymPy's printing of a large
    architecture's crossovers takes seconds."""

    def __init__(self, prefix: str = "f"):
        self.prefix = prefix
        self.defs: dict[Any, str] = {}  # expression → its function's name

    def functions(self) -> list[str]:
        from ..forked import map_halves

        printer = _printer()
        return map_halves(lambda item: _function(item[1], item[0], printer),
                          list(self.defs.items()), least=8)

    def literal(self, value: Any) -> str:
        from sympy import Basic

        if isinstance(value, Basic):
            if value not in self.defs:
                self.defs[value] = f"{self.prefix}{len(self.defs)}"
            return self.defs[value]
        if isinstance(value, Mapping):
            return "{" + ", ".join(f"{k!r}: {self.literal(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list | tuple):
            return "[" + ", ".join(self.literal(v) for v in value) + "]"
        if value is None or isinstance(value, bool | int | float | str):
            return repr(value)
        raise TypeError(f"no literal for {type(value).__name__}: {value!r}")


def module_source(title: str, data: Any) -> str:
    """The text of a module holding ``data`` with every SymPy expression in it as a function
    (one per distinct expression), under the name ``DATA``; ``title`` heads its docstring."""
    writer = _Writer()
    data_text = writer.literal(data)
    header = (f'"""{title}\n\nWritten by roofline.codegen from the SymPy derivations '
              'named in DATA; written\nagain, not edited, when a derivation changes."""\n\n'
              f"from roofline.codegen.runtime import {', '.join(_HELPERS)}  # noqa: F401")
    return "\n\n\n".join([header, *writer.functions(), f"DATA = {data_text}\n"])


def addition_source(prefix: str, path: Sequence[str], value: Any) -> str:
    """Text to append to a module of :func:`module_source`: ``DATA[path[0]]...[path[-1]] =
    value`` (the dicts on the way made where missing), each expression in ``value`` a function
    whose name starts with ``prefix``."""
    writer = _Writer(prefix)
    value_text = writer.literal(value)
    target = "DATA" + "".join(f".setdefault({k!r}, {{}})" for k in path[:-1])
    return "\n\n\n".join([*writer.functions(), f"{target}[{path[-1]!r}] = {value_text}\n"])


def function(expr: Any) -> Callable[..., Any]:
    """``expr`` as a generated function of its symbols by name, made in memory (for an
    expression that is not among an architecture's kept forms)."""
    namespace: dict[str, Any] = {}
    exec(compile(module_source("", expr), "<roofline.codegen>", "exec"), namespace)
    return namespace["DATA"]


def names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The symbol names a generated function takes, in order."""
    code = fn.__code__
    return code.co_varnames[:code.co_argcount]


def call(fn: Callable[..., Any] | int | float, env: Mapping[str, Any]) -> Any:
    """A generated function at the numbers of ``env`` (a symbol name → its value); a number
    stands for itself. A symbol without a value is a KeyError."""
    if not callable(fn):
        return fn
    return fn(*[env[n] for n in names(fn)])
