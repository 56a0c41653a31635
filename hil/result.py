"""CheckResult: everything one (case, target, recipe) check found, and its verdicts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.budgets import Budget, BudgetBreach, LatencyStats
from hil.cache import Artifact
from hil.compare import STEP_SLACK, Breach, Metrics, QuantizedAgreement, Tolerance
from hil.errors import BudgetExceeded, OutputMismatch, PartitionMismatch

RECORD_VERSION = 1


@dataclass(frozen=True)
class Accuracy:
    """Classifier accuracy on labelled inputs, eager vs target."""

    eager: float
    target: float
    max_drop: float

    @property
    def drop(self) -> float:
        return self.eager - self.target


@dataclass(frozen=True)
class CheckResult:
    case: str
    target: str
    recipe: str
    numerics: str
    artifact: Artifact
    arrays_path: Path
    tolerance: Tolerance
    metrics: Metrics | None  # None when the outputs' structure did not match
    structure_problems: tuple[str, ...] = ()
    output_breaches: tuple[Breach, ...] = ()
    quantized_reference_metrics: Metrics | None = None
    accuracy: Accuracy | None = None
    latency: LatencyStats | None = None
    eager_latency: LatencyStats | None = None
    budget: Budget | None = None
    budget_breaches: tuple[BudgetBreach, ...] = ()
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    deploy_bytes: int = 0
    log: str = ""
    target_info: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Partitioning targets (Ethos-U, Cortex-M): the recipe's partition report, and where the
    # CPU fallback set differs from the case's expectation.
    partition: Mapping[str, Any] | None = None
    partition_problems: tuple[str, ...] = ()
    # Agreement with the quantized PyTorch model, and the most steps the target may be off.
    quantized_agreement: QuantizedAgreement | None = None
    quantized_steps_limit: float | None = None

    @property
    def quantized_problem(self) -> str | None:
        agreement, limit = self.quantized_agreement, self.quantized_steps_limit
        if agreement is None or limit is None or agreement.steps is None:
            return None
        if agreement.steps <= limit + STEP_SLACK:
            return None
        return (
            f"differs from the quantized PyTorch model by {agreement.steps:.2f} output steps "
            f"(max abs {agreement.max_abs:.4g}); this target runs the same integer graph, so "
            f"at most {limit:g} step(s) are expected (set ToleranceOverride.quantized_steps "
            "with the reason where rounding compounds over many layers)"
        )

    @property
    def outputs_ok(self) -> bool:
        accuracy_ok = self.accuracy is None or self.accuracy.drop <= self.accuracy.max_drop
        return (
            not self.structure_problems
            and not self.output_breaches
            and accuracy_ok
            and self.quantized_problem is None
        )

    @property
    def partition_ok(self) -> bool:
        return not self.partition_problems

    @property
    def budgets_ok(self) -> bool:
        return not self.budget_breaches

    @property
    def passed(self) -> bool:
        return self.outputs_ok and self.partition_ok and self.budgets_ok

    @property
    def verdict(self) -> str:
        if not self.outputs_ok:
            return "MISMATCH"
        if not self.partition_ok:
            return "PARTITION"
        if not self.budgets_ok:
            return "OVER BUDGET"
        return "PASS"

    def output_failure(self) -> str | None:
        """The message for an output failure, naming metric, value, tolerance and array file."""
        lines = [*self.structure_problems, *(str(b) for b in self.output_breaches)]
        if self.accuracy and self.accuracy.drop > self.accuracy.max_drop:
            a = self.accuracy
            lines.append(
                f"accuracy {a.target:.4f} vs eager {a.eager:.4f}: dropped {a.drop:.4f}, "
                f"allowed {a.max_drop:.4f}"
            )
        if self.quantized_problem:
            lines.append(self.quantized_problem)
        if not lines:
            return None
        where = f"{self.case} on {self.target} [{self.recipe}]"
        return (
            f"{where}: outputs disagree with eager PyTorch\n  "
            + "\n  ".join(lines)
            + f"\n  tolerance basis: {self.tolerance.basis}"
            + f"\n  full arrays (inputs, reference, outputs): {self.arrays_path}"
        )

    def raise_for_failures(self) -> None:
        """Raise OutputMismatch or BudgetExceeded (outputs first: a wrong answer fast is no win)."""
        message = self.output_failure()
        if message:
            raise OutputMismatch(message)
        if self.partition_problems:
            where = f"{self.case} on {self.target} [{self.recipe}]"
            raise PartitionMismatch(
                f"{where}: partition differs from the case's expectation\n  "
                + "\n  ".join(self.partition_problems)
            )
        if self.budget_breaches:
            where = f"{self.case} on {self.target} [{self.recipe}]"
            raise BudgetExceeded(
                f"{where}: over budget\n  " + "\n  ".join(str(b) for b in self.budget_breaches)
            )

    def to_record(self) -> dict[str, Any]:
        """A JSON-able summary (what the terminal table, reports and xdist workers exchange)."""
        return {
            "version": RECORD_VERSION,
            "case": self.case,
            "target": self.target,
            "recipe": self.recipe,
            "numerics": self.numerics,
            "verdict": self.verdict,
            "metrics": _clean(asdict(self.metrics)) if self.metrics else None,
            "tolerance": _clean(asdict(self.tolerance)),
            "failure": self.output_failure(),
            "quantized_reference_metrics": (
                _clean(asdict(self.quantized_reference_metrics))
                if self.quantized_reference_metrics
                else None
            ),
            "accuracy": asdict(self.accuracy) if self.accuracy else None,
            "latency": asdict(self.latency) if self.latency else None,
            "eager_latency": asdict(self.eager_latency) if self.eager_latency else None,
            "budget": asdict(self.budget) if self.budget else None,
            "budget_breaches": [str(b) for b in self.budget_breaches],
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
            "partition_problems": list(self.partition_problems),
            "quantized_agreement": (
                {
                    "statement": self.quantized_agreement.statement,
                    "max_abs": self.quantized_agreement.max_abs,
                    "steps": self.quantized_agreement.steps,
                    "limit_steps": self.quantized_steps_limit,
                }
                if self.quantized_agreement
                else None
            ),
        }


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    """JSON has no infinity: an exact match's SQNR is written as the string 'inf'."""
    return {
        k: ("inf" if isinstance(v, float) and math.isinf(v) and v > 0 else v)
        for k, v in values.items()
    }
