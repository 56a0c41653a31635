"""The shape of hil/ as a graph: no import cycle anywhere (a lazy import inside a function
counts: it dodges a cycle rather than removing it), and targets read artifacts only through
their typed parts, never the recipe's string-keyed `details`."""

from __future__ import annotations

import ast
from pathlib import Path

HIL = Path(__file__).resolve().parents[2] / "hil"
TARGET_PACKAGES = ("hil.targets", "hil.resources", "hil.runner", "hil.lab")


def _modules() -> dict[str, Path]:
    found = {}
    for path in HIL.rglob("*.py"):
        parts = list(path.relative_to(HIL.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The hil module an imported name lives in (its longest known prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path) -> set[str]:
    """hil modules `module` imports, at any depth, except under `if TYPE_CHECKING:`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package
                    for _ in range(child.level - 1):
                        anchor = anchor.rpartition(".")[0]
                    base = f"{anchor}.{base}" if base else anchor
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                         for a in child.names]  # fmt: skip
            for name in names:
                owner = _owner(name) if name.split(".")[0] == "hil" else None
                if owner is not None and owner != module:
                    found.add(owner)
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_hil_has_no_import_cycle() -> None:
    graph = {module: _imported(module, path) for module, path in MODULES.items()}
    assert sum(map(len, graph.values())) > 300  # the graph was really read
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_lazy_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_target_module_reads_artifact_details() -> None:
    readers = []
    for module, path in MODULES.items():
        if not module.startswith(TARGET_PACKAGES):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "details"
                and not isinstance(node.ctx, ast.Store)
                and "artifact" in ast.unparse(node.value).lower()
            ):
                readers.append(f"{module}:{node.lineno}")
    assert readers == []
