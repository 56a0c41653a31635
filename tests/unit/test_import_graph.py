"""The shape of hil/ as a graph, read from every `import` (lazy ones inside functions count:
they dodge a cycle rather than remove it; only `if TYPE_CHECKING:` blocks do not):

- packages import only their own layer or a lower one (LAYERS, the one place the order is
  written); `from hil.pkg.mod import x` runs hil/pkg/__init__.py, so it counts as importing pkg;
- no import cycle between packages, nor between modules;
- targets read artifacts only through their typed parts, never the recipe's `details`.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

HIL = Path(__file__).resolve().parents[2] / "hil"
TARGET_PACKAGES = ("hil.targets", "hil.resources", "hil.runner", "hil.lab")

# hil's packages (and top-level modules) from the bottom up. A package may import its own
# layer and the layers below; where a dependency would point up, the design is wrong: move
# the shared type down or pass the fact in. (Kept as a table, one layer per line: fmt off.)
# fmt: off
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("kinds", "arrays", "locks", "processes", "progress", "threads", "paths", "bundled",
     "capture", "call", "tolerance_override", "simd", "environment", "quiet",
     "signing", "hashing", "trust"),  # foundations (signing: a boundary, like a transport, for what hil vouches for)

    ("compat",),  # where the supported ExecuTorch versions differ, asked as capabilities
    ("settings",),  # a device file's typed keys
    ("devices", "device_search"),  # the registry of device files; where a run finds them
    ("timing", "case"),  # latency budgets; what one check runs
    ("transports", "artifacts"),  # bytes that move; what the store keeps
    ("verdict",),  # judges facts: outputs, budgets, divergence records
    ("ethos_u", "vgf"),  # the Arm backends' own tools (Vela, TOSA reference, ML SDK)
    ("speedups",),  # hil's run-time changes to torch and ExecuTorch: declared, switchable
    ("export",),  # torch.export, PT2E, serialization: steps the reference and recipes share
    ("reference",),  # what the verdict compares with: the quantized model, its rounding
    ("recipes",),  # PyTorch -> .pte
    ("runner",),  # the wire protocol to the on-device runner
    ("sdk",),  # building the runner and ExecuTorch for a board
    ("fvp",),  # the Corstone FVP process
    ("resources",),  # boards, flashers, ports, SSH hosts
    ("targets",),  # a resource + the runner driver, one class per kind
    ("lab",),  # targets leased through labgrid
    ("explain",),  # which operator a wrong output came from
    ("session",),  # pool, references, the check
    ("results",),  # what a run leaves: run.json and records.jsonl, one writer
    ("report", "explore", "doctor"),  # what a run wrote, the program browser, the checks
    ("plugin",),  # pytest's front door
    ("executorch_ops", "api", "library", "check_command", "sdk_command"),  # on the plugin/session
    ("cli", "usage", "hil"),  # the command line and its docs; `import hil` (loaded on first use)
)
# fmt: on


def _modules(root: Path = HIL) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The hil module an imported name lives in (its longest known prefix)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path, modules: dict[str, Path] = MODULES) -> set[str]:
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
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in child.names
                ]
            for name in names:
                owner = _owner(name, modules) if name.split(".")[0] == "hil" else None
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


def _graph(root: Path = HIL) -> dict[str, set[str]]:
    modules = MODULES if root == HIL else _modules(root)
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def _package(module: str) -> str:
    """hil.recipes.vgf -> recipes; hil.errors -> errors; hil -> hil."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


LEVEL = {package: level for level, names in enumerate(LAYERS) for package in names}


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, imported in graph.items():
        edges = packages.setdefault(_package(module), set())
        edges.update(_package(other) for other in imported if _package(other) != _package(module))
    return packages


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that reaches a higher layer, as `importer -> imported (layer a < b)`."""
    return sorted(
        f"{module} -> {other} ({_package(module)} is below {_package(other)})"
        for module, imported in graph.items()
        for other in imported
        if LEVEL[_package(other)] > LEVEL[_package(module)]
    )


def test_every_package_has_a_layer() -> None:
    assert set(_package_graph(_graph())) == set(LEVEL)


def test_packages_import_only_their_layer_or_below() -> None:
    graph = _graph()
    assert sum(map(len, graph.values())) > 300  # the graph was really read
    assert _upward(graph) == []


def test_no_two_packages_import_each_other_even_in_one_layer() -> None:
    assert _cycles(_package_graph(_graph())) == []


def test_hil_has_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_an_upward_import_added_in_a_scratch_copy_is_caught(tmp_path: Path) -> None:
    """A lazy import of the plugin from inside the artifact store: the layer test must name it."""
    copy = tmp_path / "hil"
    shutil.copytree(HIL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    store = copy / "artifacts" / "store.py"
    store.write_text(store.read_text() + "\n\ndef _peek():\n    from hil.plugin import state\n")
    assert _upward(_graph(copy)) == [
        "hil.artifacts.store -> hil.plugin.state (artifacts is below plugin)"
    ]


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
