"""The layout's rules (issue 10): no module of the package over 400 lines, no import cycle
between its modules at import time, and no ``lambdify`` outside one module (the numbers come from
``roofline.evaluate.compiler``, which needs none)."""

import ast
from pathlib import Path

import roofline

ROOT = Path(roofline.__file__).parent
MODULES = {".".join(f.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__"): f
           for f in ROOT.rglob("*.py")}


def test_no_module_over_400_lines() -> None:
    long = {name: n for name, f in MODULES.items()
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long


def test_at_most_one_module_calls_lambdify() -> None:
    calling = [name for name, f in MODULES.items() if "lambdify(" in f.read_text(encoding="utf-8")]
    assert len(calling) <= 1, calling


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports when it is imported: its statements at
    module level (those under ``if TYPE_CHECKING`` run only for a type checker; those inside a
    function, when it is called), each with the packages above it, which Python imports
    first."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + node.orelse + node.finalbody
                      + [s for h in node.handlers for s in h.body])
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                    if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                found.update(f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
                             for a in node.names)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    above = {".".join(m.split(".")[:i]) for m in found for i in range(1, m.count(".") + 2)}
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
    return {m for m in above if m in MODULES} - own  # its own packages are being imported


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (a module, the modules on the way, the module again), or []."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    assert graph["roofline.evaluate.crossover"] >= {"roofline.evaluate.arith",
                                                    "roofline.evaluate.compiler"}
    assert not _cycle(graph), " → ".join(_cycle(graph))


def _typed_named_tuples() -> list[tuple[str, ast.ClassDef]]:
    """Every ``class X(NamedTuple)`` that a module of the package writes for the type checker
    only (under ``if TYPE_CHECKING``), with its module."""
    found = []
    for name, f in MODULES.items():
        for node in ast.parse(f.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                found += [(name, c) for c in node.body if isinstance(c, ast.ClassDef)
                          and any(ast.unparse(b) == "NamedTuple" for b in c.bases)]
    return found


def test_a_named_tuple_typed_for_the_checker_has_the_fields_it_has_at_run_time() -> None:
    # at run time the records are collections.namedtuple (typing is not imported): the typed
    # spelling the checker reads must name the same fields, in order, with the same defaults
    import importlib

    typed = _typed_named_tuples()
    assert {c.name for _, c in typed} >= {"OpResult", "PrefillPoint", "Link"}
    for module, cls in typed:
        fields = [s for s in cls.body if isinstance(s, ast.AnnAssign)]
        runtime = getattr(importlib.import_module(module), cls.name)
        assert runtime._fields == tuple(s.target.id for s in fields), cls.name
        assert runtime._field_defaults == {s.target.id: ast.literal_eval(s.value)
                                           for s in fields if s.value is not None}, cls.name
        assert runtime.__doc__ and runtime.__module__ == module, cls.name
