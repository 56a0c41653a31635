"""A change to torch or ExecuTorch, made once per process and only where it fits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
