"""hil: hardware-in-the-loop tests for PyTorch models on Arm targets through ExecuTorch.

The library works without pytest:

    import hil
    result = hil.check(model, (x,), target="host", recipe="xnnpack-int8")
    result.raise_for_failures()

The pytest plugin (hil.plugin) is a thin layer over the same Session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from hil.case import BuiltCase, Case, case_from_module, seeded
from hil.errors import HilError
from hil.session import Session
from hil.verdict.result import CheckResult, Metrics
from hil.verdict.tolerances import Tolerance, ToleranceOverride

__version__ = "0.1.0"


def check(
    model: torch.nn.Module,
    inputs: Sequence[torch.Tensor] | torch.Tensor,
    *,
    target: str = "host",
    recipe: str | None = None,
    name: str | None = None,
    session: Session | None = None,
    **case_options: Any,
) -> CheckResult:
    """Export `model`, run it on `target` with `recipe` (the device's first by default), judge it.

    `case_options` are Case fields: budget_ms, tolerance, classifier, timing, ...
    Pass a Session to reuse provisioned targets and the cache across many calls.
    """
    case = case_from_module(name or type(model).__name__, model, inputs, **case_options)
    if session is not None:
        return session.check(case, target, recipe)
    with Session() as own:
        return own.check(case, target, recipe)


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
