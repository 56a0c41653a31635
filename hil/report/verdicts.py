"""Which verdicts are the model's fault and which are the lab's: one table for every report.

A release engineer reads a failed case differently from a broken serial link. Allure categories,
the HTML report and the regression view all sort verdicts through `category_of`, so they agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

PASS = "pass"
FAILURE = "failure"  # the model or the runtime does not meet the bar: a test failure
INFRASTRUCTURE = "infrastructure"  # the lab failed (link, emulator, missing target)
ERROR = "error"  # the suite or hil itself is broken
SKIPPED = "skipped"
EXPECTED = "expected"  # a failure the case declares as expected (xfail)
QUARANTINED = "quarantined"  # a known failure a lab's quarantine file names: still no pass
NOT_JUDGED = "not-judged"  # it ran and nothing failed, but a check that applies could not be made

CATEGORIES: tuple[str, ...] = (
    PASS,
    FAILURE,
    NOT_JUDGED,
    INFRASTRUCTURE,
    ERROR,
    QUARANTINED,
    EXPECTED,
    SKIPPED,
)

CATEGORY_TITLES: Mapping[str, str] = MappingProxyType(
    {
        PASS: "passed",
        FAILURE: "test failures",
        NOT_JUDGED: "not judged (ran, but a check that applies could not be made)",
        INFRASTRUCTURE: "infrastructure errors",
        ERROR: "suite or framework errors",
        QUARANTINED: "quarantined failures (known, named in a quarantine file)",
        EXPECTED: "expected failures (xfail)",
        SKIPPED: "skipped",
    }
)

VERDICT_CATEGORIES: Mapping[str, str] = MappingProxyType(
    {
        "PASS": PASS,
        "MISMATCH": FAILURE,  # the target's outputs are wrong
        "LOWERING MISMATCH": FAILURE,  # the lowered program's own reference is wrong
        "DEVICE MISMATCH": FAILURE,  # the device left its program's reference
        "MISSING KERNEL": FAILURE,  # the device's runtime cannot run an operator of the program
        "POOR QUANTIZATION": FAILURE,  # the quantized model itself is too far from eager
        "RUN REFUSED": FAILURE,  # the runtime refused to run the program (a kernel's check)
        "PARTITION": FAILURE,  # operators fell back to the CPU against the case's expectation
        "OVER BUDGET": FAILURE,
        "EXPORT FAILED": FAILURE,
        "DEPLOY FAILED": FAILURE,
        "XPASS": FAILURE,  # passed although a strict xfail said it must not
        "NOT JUDGED": NOT_JUDGED,
        "INFRA": INFRASTRUCTURE,
        "CRASH": INFRASTRUCTURE,
        "UNAVAILABLE": INFRASTRUCTURE,
        "CASE ERROR": ERROR,
        "ERROR": ERROR,
        "SKIPPED": SKIPPED,
    }
)

VERDICTS: tuple[str, ...] = tuple(VERDICT_CATEGORIES)

# The hil exception classes behind each category, as allure sees them in a failure message
# ("hil.errors.OutputMismatch: ..."). pytest.fail() under --hil-require says "required but
# unavailable".
ERROR_CLASSES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        FAILURE: (
            "OutputMismatch",
            "LoweringMismatch",
            "DeviceMismatch",
            "MissingKernel",
            "QuantizationLoss",
            "RunRefused",
            "PoolsTooSmall",
            "PartitionMismatch",
            "BudgetExceeded",
            "ExportError",
            "DeployError",
        ),
        INFRASTRUCTURE: (
            "InfrastructureError",
            "TransportError",
            "ProtocolError",
            "LinkTimeout",
            "TargetCrash",
            "TargetUnavailable",
            "ResourceExhausted",
        ),
        NOT_JUDGED: ("NotJudged",),
        ERROR: ("CaseError", "CacheError", "UsageError", "DeviceSpecError", "TargetStateError"),
    }
)


def category_of(
    verdict: str, outcome: str | None = None, from_error: bool = False, quarantined: bool = False
) -> str:
    """The category of a verdict; a failure pytest expected (xfailed) counts as expected, unless
    a quarantine entry made it so (quarantined: a lab's known failure, not the case's design).

    A verdict this table does not know yet is a test failure when a check produced it (checks
    only fail on their judgement) and a suite or framework error when an exception did.
    """
    if quarantined and verdict != "PASS":
        return QUARANTINED
    if outcome == "xfailed":
        return EXPECTED
    if verdict == "NOT JUDGED" and outcome == "failed":
        return FAILURE  # --hil-require made it one
    return VERDICT_CATEGORIES.get(verdict, ERROR if from_error else FAILURE)


def is_failing(category: str) -> bool:
    """Categories that keep a release from being signed (NOT JUDGED is listed apart: it is no
    pass, and --hil-require turns it into a failure)."""
    return category in (FAILURE, INFRASTRUCTURE, ERROR)
