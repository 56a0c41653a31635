"""The record of a check that produced no CheckResult (an export failure, a lost link), for the
plugin, the library session and `hil check` alike: the verdict its error stands for."""

from __future__ import annotations

from typing import Any

import hil.errors as errors
from hil.verdict.result import RECORD_VERSION

# The verdict shown for each kind of error, most specific first.
ERROR_VERDICTS: tuple[tuple[type[errors.HilError], str], ...] = (
    (errors.ExportError, "EXPORT FAILED"),
    (errors.MissingKernel, "MISSING KERNEL"),  # a runtime refused the program for a kernel
    (errors.PoolsTooSmall, "OVER BUDGET"),  # it does not fit the runner's memory
    (errors.RunRefused, "RUN REFUSED"),  # the runtime refused to run it, the runner alive
    (errors.TargetCrash, "CRASH"),
    (errors.InfrastructureError, "INFRA"),
    (errors.ResourceExhausted, "INFRA"),  # this machine ran out of memory or disk
    (errors.DeployError, "DEPLOY FAILED"),
    (errors.TargetUnavailable, "UNAVAILABLE"),
    (errors.CaseError, "CASE ERROR"),
    (errors.HilError, "ERROR"),
)


def verdict_for(error: errors.HilError) -> str:
    return next(v for cls, v in ERROR_VERDICTS if isinstance(error, cls))


def error_record(case: str, target: str, recipe: str, error: errors.HilError) -> dict[str, Any]:
    return {
        "version": RECORD_VERSION,
        "case": case,
        "target": target,
        "recipe": recipe,
        "verdict": verdict_for(error),
        "error_class": type(error).__name__,
        "failure": str(error),
    }
