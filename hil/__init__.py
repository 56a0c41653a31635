"""hil: hardware-in-the-loop tests for PyTorch models on Arm targets through ExecuTorch.

The library works without pytest:

    import hil
    result = hil.check(model, (x,), target="host", recipe="xnnpack-int8")
    result.raise_for_failures()

The pytest plugin (hil.plugin) is a thin layer over the same Session; `hil.Session` also
writes the plugin's records (hil.library), so `hil report` works on a script's run. The names
below load on first use, so `import hil` (and every pytest run in an environment that has hil
installed) costs nothing until one is asked for: torch and executorch come with the first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_WHERE = {
    "check": "hil.api",
    "BuiltCase": "hil.case",
    "Case": "hil.case",
    "case_from_module": "hil.case",
    "seeded": "hil.case",
    "HilError": "hil.errors",
    "Session": "hil.library",
    "CheckResult": "hil.verdict.result",
    "Metrics": "hil.verdict.result",
    "Tolerance": "hil.verdict.tolerances",
    "ToleranceOverride": "hil.tolerance_override",
}

if TYPE_CHECKING:
    from hil.api import check
    from hil.case import BuiltCase, Case, case_from_module, seeded
    from hil.errors import HilError
    from hil.library import Session
    from hil.tolerance_override import ToleranceOverride
    from hil.verdict.result import CheckResult, Metrics
    from hil.verdict.tolerances import Tolerance


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'hil' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "BuiltCase",
    "Case",
    "CheckResult",
    "HilError",
    "Metrics",
    "Session",
    "Tolerance",
    "ToleranceOverride",
    "case_from_module",
    "check",
    "seeded",
]
assert sorted(__all__) == sorted(_WHERE)
