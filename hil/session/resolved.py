"""A check's names resolved once, at the session's door.

The plugin and the library name a check by its case, a target's name and a recipe choice (a
name of the device file, or a variant of one). The session turns those into this one object,
once per check, and every step below takes it: no layer looks the device file or the recipe up
again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hil.case import Case
from hil.devices import DeviceSpec
from hil.recipes import Recipe


@dataclass(frozen=True)
class Resolved:
    case: Case
    spec: DeviceSpec  # the target's device file
    recipe: Recipe  # made from the device file's entry (a variant's options over it)

    @property
    def target(self) -> str:
        return self.spec.name

    @property
    def file_stem(self) -> str:
        """The check's name where it names files (its arrays, its explanation)."""
        name = f"{self.case.name}--{self.spec.name}--{self.recipe.name}"
        return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)
