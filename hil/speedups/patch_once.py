"""A change to torch or ExecuTorch, made once per process and only where it fits, and the
shipped code it was written against (hil.speedups.switch lists them all)."""

from __future__ import annotations

import hashlib
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Patch:
    """`applies` says whether the shipped code is the one the change was written against;
    `apply` makes the change. `install()` does both once and says whether it is in place."""

    applies: Callable[[], bool]
    apply: Callable[[], None]
    installed: bool = False

    def install(self) -> bool:
        if not self.installed and self.applies():
            self.apply()
            self.installed = True
        return self.installed


def code_digest(functions: Sequence[Any]) -> str:
    """sha256 over the code of `functions`: bytecode, the names it uses and its constants
    (nested code included), without file names or line numbers. A function without Python
    code (a builtin) counts by its qualified name."""
    digest = hashlib.sha256()

    def put(code: types.CodeType) -> None:
        digest.update(code.co_code)
        digest.update(repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                put(const)
            elif isinstance(const, frozenset):  # `x in {...}`: its repr's order is the hash's
                digest.update(repr(sorted(map(repr, const))).encode())
            else:
                digest.update(repr(const).encode())

    for function in functions:
        code = getattr(inspect_unwrapped(function), "__code__", None)
        if isinstance(code, types.CodeType):
            put(code)
        else:
            digest.update(getattr(function, "__qualname__", repr(function)).encode())
    return digest.hexdigest()


def inspect_unwrapped(function: Any) -> Any:
    """The shipped function behind a part's wrapper (`__wrapped__`), once a part is in place."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    return function


@dataclass(frozen=True)
class Part:
    """One change: its name, the shipped functions it replaces (looked up when asked), the
    digest of their code it was written against, and the patch that makes it."""

    name: str
    replaced: Callable[[], Sequence[Any]]
    digest: str
    patch: Patch

    def fits(self) -> bool:
        """The shipped code is the one written against, and the part's own check agrees."""
        try:
            found = code_digest(self.replaced())
        except (AttributeError, ImportError):
            return False
        return found == self.digest and self.patch.applies()
