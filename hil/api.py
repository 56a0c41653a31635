"""`hil.check`: one model, one target, one verdict, without pytest."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from hil import library
from hil.case import case_from_module
from hil.session import Session
from hil.verdict.result import CheckResult

_unnamed = itertools.count(1)


def check(
    model: torch.nn.Module,
    inputs: Sequence[Any] | torch.Tensor,
    *,
    target: str = "host",
    recipe: str | None = None,
    name: str | None = None,
    session: Session | None = None,
    results_dir: str | Path | None = None,
    **case_options: Any,
) -> CheckResult:
    """Export `model`, run it on `target` with `recipe` (the device's first by default), judge it.

    `case_options` are Case fields: budget_ms, tolerance, classifier, timing, ...
    Pass a Session to reuse provisioned targets and the cache across many calls. Without
    `name`, the case is named after the model's class and a number unique in this process,
    so two `Sequential` models never overwrite each other's arrays. With `results_dir` (and
    no session) the check is a run of its own there, recorded for `hil report` (a
    `hil.Session(results_dir=...)` records many checks as one run).
    """
    case_name = name or f"{type(model).__name__}-{next(_unnamed)}"
    case = case_from_module(case_name, model, inputs, **case_options)
    if session is not None:
        return session.check(case, target, recipe)
    if results_dir is not None:
        with library.Session(results_dir=results_dir) as recorded:
            return recorded.check(case, target, recipe)
    with Session() as own:
        return own.check(case, target, recipe)
