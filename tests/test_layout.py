"""The layout's rules: no module of the package over 400 lines, no import cycle between its
modules (counting the imports inside functions: a cycle made at call time is a cycle), and no
``lambdify`` outside one module (the numbers come from the code that ``roofline.codegen``
writes, which needs none)."""

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
    """The package's modules that ``name`` imports, when it is imported or when one of its
    functions runs (those under ``if TYPE_CHECKING`` run only for a type checker), each with
    the packages above it, which Python imports first."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.AST]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                    if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                found.update(f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module
                             for a in node.names)
            else:
                visit(list(ast.iter_child_nodes(node)))

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
    assert "roofline.evaluate.solved" in graph["roofline.evaluate.crossover"]
    assert "roofline.derive.crossovers" in graph["roofline.evaluate.solved"]  # in a function
    assert not _cycle(graph), " → ".join(_cycle(graph))


def test_an_import_inside_a_function_is_seen(tmp_path: Path) -> None:
    """A negative control: a cycle closed by an import inside a function is found; one under
    ``if TYPE_CHECKING`` is not a cycle."""
    late, plain, typed = tmp_path / "late.py", tmp_path / "plain.py", tmp_path / "typed.py"
    late.write_text("def f():\n    from roofline import symbols\n", encoding="utf-8")
    plain.write_text("from roofline import errors\n", encoding="utf-8")
    typed.write_text("if TYPE_CHECKING:\n    from roofline import errors\n", encoding="utf-8")
    assert _imports("roofline.errors", late) == {"roofline.symbols"}
    assert _cycle({"roofline.errors": _imports("roofline.errors", late),
                   "roofline.symbols": _imports("roofline.symbols", plain)})
    assert not _cycle({"roofline.errors": _imports("roofline.errors", late),
                       "roofline.symbols": _imports("roofline.symbols", typed)})
