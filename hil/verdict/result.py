"""CheckResult: everything one (case, target, recipe) check found, and its verdict.

The verdict is read off the checks, the first failing question winning:

    MISMATCH           the target's outputs are wrong (against eager, or the quantized model)
    LOWERING MISMATCH  where the lowered program has a reference of its own (its TOSA graphs in
                       Arm's reference model): that reference is wrong, the lowering is at fault
    DEVICE MISMATCH    the device's outputs left its program's reference: the device is at fault
    MISSING KERNEL     the device's runtime has no kernel for an operator of the program
    PARTITION          the accelerator did not take what the case expects
    POOR QUANTIZATION  the quantized model itself is too far from eager: the model's problem
    OVER BUDGET        latency, a counter or memory over its budget
    NOT JUDGED         nothing failed, but something that applies could not be judged
    PASS               every check that applies was judged and held
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.artifacts.store import Artifact
from hil.errors import (
    BudgetExceeded,
    CheckFailed,
    DeviceMismatch,
    LoweringMismatch,
    MissingKernel,
    NotJudged,
    OutputMismatch,
    PartitionMismatch,
    QuantizationLoss,
)
from hil.verdict.budgets import Budget, LatencyStats
from hil.verdict.checks import Check, Question, Status, json_number
from hil.verdict.divergence import Divergence
from hil.verdict.profile import Profile

RECORD_VERSION = 2

# the questions about the outputs: asked as one (the target), or as two where the lowered
# program has a reference of its own (hil.verdict.device)
OUTPUT_QUESTIONS = (Question.DEVICE, Question.LOWERING, Question.TARGET)

# question -> (verdict, error class, headline), in the order verdicts are decided
_FAILURES: tuple[tuple[Question, str, type[CheckFailed], str], ...] = (
    (
        Question.DEVICE,
        "DEVICE MISMATCH",
        DeviceMismatch,
        "the device's outputs differ from its program's reference: the device is at fault, "
        "not the lowering",
    ),
    (
        Question.LOWERING,
        "LOWERING MISMATCH",
        LoweringMismatch,
        "the lowered program computes otherwise than the model: the lowering is at fault, not "
        "the device",
    ),
    (Question.TARGET, "MISMATCH", OutputMismatch, "the target's outputs are wrong"),
    (Question.KERNELS, "MISSING KERNEL", MissingKernel, "the device cannot run the program"),
    (Question.PARTITION, "PARTITION", PartitionMismatch, "the partition differs from the case's"),
    (
        Question.QUANTIZATION,
        "POOR QUANTIZATION",
        QuantizationLoss,
        "the quantized model is too far from eager PyTorch (the model's quantization, not the "
        "target)",
    ),
    (Question.BUDGET, "OVER BUDGET", BudgetExceeded, "over budget"),
)


@dataclass(frozen=True)
class Metrics:
    """The target against eager PyTorch, worst over outputs: what the summary tables show."""

    max_abs: float
    max_rel: float
    mean_abs: float
    sqnr_db: float
    cosine: float
    top1: float | None = None


@dataclass(frozen=True)
class CheckResult:
    case: str
    target: str
    recipe: str
    numerics: str
    artifact: Artifact
    arrays_path: Path
    checks: tuple[Check, ...]
    metrics: Metrics | None = None  # None when the outputs' structure did not match eager's
    latency: LatencyStats | None = None
    eager_latency: LatencyStats | None = None
    budget: Budget | None = None
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    deploy_bytes: int = 0  # bytes that crossed the link to the target for this check
    log: str = ""
    target_info: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    partition: Mapping[str, Any] | None = None
    # where the outputs first left the reference (hil.explain), on a failed target check or
    # on request; `explained` says why there is none when one was asked for
    divergence: Divergence | None = None
    explained: str = ""
    # each instruction's time from the device's own ETDump (runner targets); `profiled` says
    # why there is none where the target has a runner
    profile: Profile | None = None
    profiled: str = ""
    # why the run's numbers are not a release device's own work (hil.verdict.altered): marked
    # whether the check passed or failed, and never certified
    altered: tuple[str, ...] = ()
    # sha256 of the .npz at arrays_path as this check wrote it ("" if it wrote none): a later
    # check of the same name replaces the file, and a reader must not take its arrays for these
    arrays_sha256: str = ""

    # -- reading the checks ------------------------------------------------------------------

    def of(self, *questions: Question) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.question in questions)

    @property
    def failed_checks(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status is Status.FAIL)

    @property
    def unjudged(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status is Status.NOT_JUDGED)

    @property
    def verdict(self) -> str:
        for question, verdict, _, _ in _FAILURES:
            if any(c.failed for c in self.of(question)):
                return verdict
        return "NOT JUDGED" if self.unjudged else "PASS"

    @property
    def passed(self) -> bool:
        """Every check that applies was judged and held (NOT JUDGED is not a pass)."""
        return self.verdict == "PASS"

    @property
    def outputs_ok(self) -> bool:
        return not any(c.failed for c in self.of(*OUTPUT_QUESTIONS))

    # -- messages ------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"{self.case} on {self.target} [{self.recipe}]"

    def failure_message(self) -> str | None:
        """Which question failed, each failing check's numbers and limits, and the array file."""
        for question, _, _, headline in _FAILURES:
            failing = [c for c in self.of(question) if c.failed]
            if not failing:
                continue
            lines = [f"{self._where()}: {headline} ({question.title})"]
            for check in failing:
                lines.append(f"  {check.describe()}")
                if check.basis:
                    lines.append(f"    limits: {check.basis}")
            if question in OUTPUT_QUESTIONS and (self.divergence or self.explained):
                unplaced = self.divergence is not None and self.divergence.first is None
                lines.append(
                    f"  {self.first_divergent()}"
                    + (
                        ": the outputs' difference is the sum of small ones, or lies outside the "
                        "compared operators"
                        if unplaced
                        else ""
                    )
                )
            if question in (*OUTPUT_QUESTIONS, Question.QUANTIZATION):
                lowered = "lowered reference, " if self.of(Question.LOWERING) else ""
                lines.append(
                    f"  full arrays (inputs, eager, quantized model, {lowered}target): "
                    f"{self.arrays_path}"
                )
                lines.append(f"  see it: {self.explore_command()}")
            return "\n".join(lines)
        return None

    def first_divergent(self) -> str:
        """Where the outputs first left the reference, or why that is not known ("" when it
        was not asked)."""
        return self.divergence.message() if self.divergence else self.explained

    def explore_command(self) -> str:
        """The `hil explore` line that opens this result's artifact in Model Explorer."""
        return f"hil explore {self.case} --target {self.target} --recipe {self.recipe}"

    def not_judged_message(self) -> str | None:
        if not self.unjudged:
            return None
        return f"{self._where()}: NOT JUDGED: " + "; ".join(
            f"{c.subject}: {c.cause}" for c in self.unjudged
        )

    def raise_for_failures(self, *, allow_not_judged: bool = False) -> None:
        """Raise the first failing question's CheckFailed, then NotJudged when something that
        applies could not be judged: as in the plugin, NOT JUDGED is never a pass. Opt out with
        `allow_not_judged=True` (the caller then reads `unjudged` itself)."""
        for question, _, error, _ in _FAILURES:
            if any(c.failed for c in self.of(question)):
                message = self.failure_message()
                assert message is not None
                raise error(message)
        if not allow_not_judged and self.unjudged:
            raise NotJudged(
                self.not_judged_message() or "",
                fix="make the target report what the budget needs, or drop the budget for it",
            )

    # -- the record ----------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """A JSON-able summary (what the terminal table, reports and xdist workers exchange)."""
        record: dict[str, Any] = plain(
            {
                "version": RECORD_VERSION,
                "case": self.case,
                "target": self.target,
                "recipe": self.recipe,
                "numerics": self.numerics,
                "verdict": self.verdict,
                "checks": [c.to_record() for c in self.checks],
                "not_judged": [c.describe() for c in self.unjudged],
                "failure": self.failure_message() or self.not_judged_message(),
                "metrics": _finite(self.metrics.__dict__) if self.metrics else None,
                "quantized_agreement": self._agreement(),
                "latency": dict(self.latency.__dict__) if self.latency else None,
                "eager_latency": dict(self.eager_latency.__dict__) if self.eager_latency else None,
                "budget": self._budget_record(),
                "budget_breaches": [c.describe() for c in self.of(Question.BUDGET) if c.failed],
                "counters": dict(self.counters),
                "artifact": {
                    "sha256": self.artifact.sha256,
                    "size": self.artifact.size,
                    "path": str(self.artifact.pte_path),
                    "exported_now": self.artifact.exported_now,
                    "export_seconds": self.artifact.export_seconds,
                    "rebuilt_because": self.artifact.rebuilt_because,
                    "details": dict(self.artifact.details),
                },
                "arrays": str(self.arrays_path),
                "deploy_bytes": self.deploy_bytes,
                "target_info": dict(self.target_info),
                "partition": dict(self.partition) if self.partition else None,
                "partition_problems": [
                    c.cause for c in self.of(Question.PARTITION) if c.failed and c.cause
                ],
                "margin": json_number(self.margin()),
                "first_divergent": self.first_divergent(),
                "profile": self.profile.to_dict() if self.profile else None,
                "profile_line": self.profile.describe() if self.profile else self.profiled,
                "explore": self.explore_command(),
                "altered": list(self.altered),
            }
        )
        if self.arrays_sha256:
            record["arrays_sha256"] = self.arrays_sha256
        return record

    def _budget_record(self) -> dict[str, Any] | None:
        if self.budget is None:
            return None
        return {
            "limit_ms": self.budget.limit_ms,
            "limit": self.budget.limit,
            "kind": self.budget.kind.value,
            "statistic": self.budget.statistic,
            "source": self.budget.source,
        }

    def _agreement(self) -> dict[str, Any] | None:
        """The target against the quantized model, worst over outputs (for the NPU tables)."""
        judged = [
            c
            for c in self.of(Question.TARGET, Question.LOWERING)
            if c.reference.startswith("the quantized")
        ]
        steps = [c.observed.get("max_steps") for c in judged if c.judged]
        if not judged or any(s is None for s in steps):
            return None
        worst = max(float(s) for s in steps if s is not None)
        limit = min(
            (lim.value for c in judged for lim in c.limits if lim.metric == "max_steps"),
            default=None,
        )
        statement = (
            "bit-exact"
            if worst == 0
            else ("within 1 step" if worst <= 1.0 else f"{worst:.1f} steps")
        )
        return {"statement": statement, "steps": worst, "limit_steps": limit}

    def margin(self) -> float | None:
        """How much of its error tolerance the target used, worst over outputs (1.0: at the
        limit): max |error| over its limit, or steps over the step limit."""
        shares = []
        for check in self.of(Question.TARGET, Question.LOWERING):
            for limit in check.limits:
                value = check.observed.get(limit.metric)
                if limit.metric in ("max_abs", "max_steps") and isinstance(value, (int, float)):
                    shares.append(value / limit.value if limit.value else math.inf)
        return max(shares, default=None)


def _finite(values: Mapping[str, Any]) -> dict[str, Any]:
    """JSON has no infinity: an exact match's SQNR is written as the string 'inf'."""
    return {
        k: ("inf" if isinstance(v, float) and math.isinf(v) and v > 0 else v)
        for k, v in values.items()
    }


def plain(value: Any) -> Any:
    """`value` with enums as their values, all the way down: xdist's channel (execnet)
    carries only built-in types, and a StrEnum is not one."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
