"""Passes a program runs before partitioning, as an Arm recipe option (`transform_passes`).

ExecuTorch's Arm tests hand `to_edge_transform_and_lower` passes of their own: gather,
embedding, index_put and index_copy add InsertInt32CastsAfterInt64PlaceholdersPass, because
TOSA has no int64 and their index inputs are int64. Without it those programs are not
delegated at all. A recipe option must be plain data (it is part of the artifact's key), so a
pass is named by where it lives, `module:QualifiedName`, and made again at export: a class is
constructed with no arguments, a function is used as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from hil.errors import UsageError

OPTION = "transform_passes"


def name_of(transform: Any) -> str | None:
    """The option's name for a pass object, or None when a name cannot make it again (a pass
    built with arguments, a lambda, a class defined inside a function)."""
    if isinstance(transform, type) or _is_function(transform):
        kind = transform
    else:
        kind = type(transform)
        if not _remade_equal(transform, kind):
            return None
    qualname = getattr(kind, "__qualname__", "")
    return None if "<" in qualname else f"{kind.__module__}:{qualname}"


def _is_function(value: Any) -> bool:
    return hasattr(value, "__code__")


def _remade_equal(instance: Any, kind: type) -> bool:
    """Whether `kind()` is the same pass as `instance`: constructible with no arguments and
    holding the same settings."""
    try:
        fresh = kind()
    except Exception:
        return False
    return _settings(fresh) == _settings(instance)


def _settings(instance: Any) -> dict[str, str]:
    """A pass's plain settings by value, its machinery (an fx Interpreter, a tracer) by type."""
    return {
        key: repr(value) if _plain(value) else type(value).__qualname__
        for key, value in sorted(vars(instance).items())
    }


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list, frozenset, set)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def validate(recipe: str, names: Any) -> None:
    """A recipe's `transform_passes` option is a list of `module:Name` strings that import."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise UsageError(
            f"recipe {recipe}: option {OPTION} must be a list of 'module:Name' strings",
            fix="e.g. transform_passes: ['executorch.backends.arm._passes:"
            "InsertInt32CastsAfterInt64PlaceholdersPass']",
        )
    for name in names:
        _resolve(recipe, name)


def instances(recipe: str, names: Sequence[str]) -> list[Any]:
    """The passes to hand `to_edge_transform_and_lower`, made fresh for one export."""
    made = []
    for name in names:
        found = _resolve(recipe, name)
        made.append(found() if isinstance(found, type) else found)
    return made


def _resolve(recipe: str, name: Any) -> Any:
    module_name, _, qualname = str(name).partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise UsageError(
            f"recipe {recipe}: transform pass {name!r} does not import: {type(e).__name__}: {e}",
            fix="name each pass as 'module:ClassName' of the installed ExecuTorch",
        ) from e
    if not isinstance(name, str) or not qualname or not callable(found):
        raise UsageError(
            f"recipe {recipe}: transform pass {name!r} is not a pass class or function",
            fix="name each pass as 'module:ClassName'",
        )
    return found
