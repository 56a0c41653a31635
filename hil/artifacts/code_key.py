"""The code part of an artifact's key: every hil module an export can run, found from its imports.

A recipe's module imports helpers, which import others; an edit anywhere along the way can
change the .pte. So the key covers the closure of hil modules reachable from the recipe's
module through import statements (at module level and inside functions alike), each hashed
by its syntax tree without docstrings or comments (hil.artifacts.source_digest):
a docstring edit keeps every key, a changed constant three imports away changes it.

Only what is named is followed: `from hil.reference import arm_quantized` reaches
`hil.reference.arm_quantized`, and `hil.reference` itself only for a name defined in its
`__init__`; a package's `__init__` that merely runs on the way (hil/__init__.py, which lists
the library's API) is not part of an export's code.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

from hil.artifacts.source_digest import source_digest

PACKAGE = "hil"


def package_root() -> Path:
    """The folder holding the `hil` package (the checkout, or site-packages)."""
    return Path(__file__).resolve().parents[2]


def module_file(name: str, root: Path) -> Path | None:
    """The source file of module `name` under `root`, or None when it is not a module."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported(name: str, path: Path, root: Path) -> frozenset[str]:
    """The hil modules `name`'s source names in its import statements (parsed once per
    version of the file)."""
    stat = path.stat()
    return _imported(name, str(path), str(root), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _imported(name: str, file: str, root_dir: str, mtime_ns: int, size: int) -> frozenset[str]:
    path, root = Path(file), Path(root_dir)
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if module_file(submodule, root) else base)
    return frozenset(n for n in found if n == PACKAGE or n.startswith(PACKAGE + "."))


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def closure(name: str, root: Path | None = None) -> tuple[str, ...]:
    """`name` and every hil module reachable from it through imports, sorted."""
    root = root or package_root()
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        path = module_file(current, root)
        if current in seen or path is None:
            continue
        seen.add(current)
        todo.extend(n for n in imported(current, path, root) if n not in seen)
    return tuple(sorted(seen))


def code_key(name: str, root: Path | None = None) -> str:
    """sha256 over the closure of `name`: each module's name and its code's digest."""
    root = root or package_root()
    digest = hashlib.sha256()
    for module in closure(name, root):
        path = module_file(module, root)
        assert path is not None
        stat = path.stat()
        digest.update(
            f"{module}:{_file_digest(str(path), stat.st_mtime_ns, stat.st_size)}\n".encode()
        )
    return digest.hexdigest()


@functools.lru_cache(maxsize=1024)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """Keyed by the file's stat too: an edited file is read again."""
    return source_digest(Path(path).read_text(encoding="utf-8"))
