"""Python source as code: what counts of a file, a class or a snippet in a key. Comments,
docstrings and layout do not count (a docstring edit is not a new model or a new recipe)."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import textwrap
from pathlib import Path


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def source_digest(source: str) -> str:
    """sha256 of Python source as code: comments, docstrings and layout do not count."""
    tree = _strip_docstrings(ast.parse(textwrap.dedent(source)))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def module_source_digest(module_name: str) -> str:
    """source_digest of an imported module's file (recipe code in cache keys)."""
    module = sys.modules[module_name]
    file = Path(inspect.getfile(module))
    stat = file.stat()
    return _file_source_digest(str(file), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _file_source_digest(path: str, mtime_ns: int, size: int) -> str:
    """Keyed by the file's stat too: an edited file is read again. A compiled module (an
    extension's .so) counts by its bytes."""
    if not path.endswith(".py"):
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return source_digest(Path(path).read_text(encoding="utf-8"))


@functools.cache
def class_source_digest(cls: type) -> str:
    """A class's source as code (project classes in a model's fingerprint)."""
    try:
        return source_digest(inspect.getsource(cls))
    except (OSError, TypeError, SyntaxError):
        return "no source"  # defined where no source is kept; its methods' code still counts
