"""Retrying a check after an infrastructure error, and never after a verdict on the model.

    retried     InfrastructureError (lost link, silent runner, dead board, emulator died), and
                TargetUnavailable from a target that was in service when the attempt began
                (an FVP licence refused on a restart): the lab failed, not the model
    never       CheckFailed (outputs off, over budget, partition), ExportError, DeployError,
                CaseError, TargetCrash (the runner faulted on this model: running it again
                would only hide a bug)

Where the retry runs: a target that recovered by itself (InfrastructureRecovered: a board
power-cycled, or another board of a labgrid pool taken) is used as it now is, which for a
pool is another board; any other target was taken out of service by the pool and is
provisioned afresh for the retry. Every attempt is kept (where it ran, what happened, what
was done about it), so a report shows the retries rather than hiding them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hil.devices import RecipeSpec
from hil.errors import (
    HilError,
    InfrastructureError,
    InfrastructureRecovered,
    TargetCrash,
    TargetUnavailable,
)
from hil.verdict.result import CheckResult

if TYPE_CHECKING:
    from hil.case import Case
    from hil.session.pool import TargetPool

log = logging.getLogger("hil.session.retries")
MAX_FAILURE = 300


@dataclass(frozen=True)
class Attempt:
    number: int  # 1-based
    board: str  # where it ran: the labgrid place, else the target's name
    verdict: str  # the check's verdict, or INFRA / CRASH / UNAVAILABLE / ERROR
    error_class: str = ""
    failure: str = ""  # the error's first line
    recovery: str = ""  # what was done after it (power-cycled, moved to another board)

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "attempt": self.number,
            "board": self.board,
            "verdict": self.verdict,
        }
        for key in ("error_class", "failure", "recovery"):
            if getattr(self, key):
                record[key] = getattr(self, key)
        return record


@dataclass(frozen=True)
class Attempts:
    """Every attempt of one (case, target, recipe) check, in order."""

    case: str
    target: str
    recipe: str | RecipeSpec | None
    attempts: tuple[Attempt, ...]

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1

    @property
    def boards(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.board for a in self.attempts))

    def to_record(self) -> list[dict[str, Any]]:
        return [a.to_record() for a in self.attempts]


def error_verdict(error: HilError) -> str:
    if isinstance(error, TargetCrash):
        return "CRASH"
    if isinstance(error, InfrastructureError):
        return "INFRA"
    if isinstance(error, TargetUnavailable):
        return "UNAVAILABLE"
    return "ERROR"


def _first_line(error: HilError) -> str:
    line = error.message.strip().splitlines()[0] if error.message.strip() else ""
    return line[:MAX_FAILURE]


def check_with_retries(
    pool: TargetPool,
    case: Case,
    target: str,
    recipe: str | RecipeSpec | None,
    once: Callable[[], CheckResult],
    retries: int,
) -> tuple[CheckResult | None, HilError | None, Attempts]:
    """Run `once` (one check on a target of `pool`) up to 1 + `retries` times while it fails on
    the infrastructure; returns the last result or error, and every attempt."""
    attempts: list[Attempt] = []
    while True:
        where = pool.board_of(target)  # None: provisioned by this attempt
        try:
            result = once()
        except HilError as e:
            board = where or target
            recovery = e.recovery if isinstance(e, InfrastructureRecovered) else ""
            cause = e.__cause__ if recovery and isinstance(e.__cause__, HilError) else e
            attempts.append(
                Attempt(
                    len(attempts) + 1,
                    board,
                    error_verdict(e),
                    type(cause).__name__,
                    _first_line(e),
                    recovery,
                )
            )
            lab_failed = isinstance(e, InfrastructureError) or (
                isinstance(e, TargetUnavailable) and where is not None
            )
            if not lab_failed or len(attempts) > retries:
                return None, e, Attempts(case.name, target, recipe, tuple(attempts))
            if not isinstance(e, InfrastructureRecovered):
                pool.reinstate(target)
                attempts[-1] = _with_recovery(attempts[-1], "the target is provisioned afresh")
            log.warning(
                "%s on %s: attempt %d on %s lost to %s; retrying",
                case.name,
                target,
                len(attempts),
                board,
                attempts[-1].error_class,
            )
            continue
        board = where or pool.board_of(target) or target
        attempts.append(Attempt(len(attempts) + 1, board, result.verdict))
        return result, None, Attempts(case.name, target, recipe, tuple(attempts))


def _with_recovery(attempt: Attempt, recovery: str) -> Attempt:
    return replace(attempt, recovery=attempt.recovery or recovery)
