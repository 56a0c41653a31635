"""Verdicts: from what a run produced to a CheckResult (outputs, accuracy, budgets, partition).

Pure computation over data the session gathered; no I/O beyond reading the artifact's
quantized reference, so every rule here is testable without a target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np

from hil import compare
from hil.arrays import Array
from hil.budgets import (
    LatencyStats,
    budget_for,
    judge_counters,
    judge_latency,
    judge_limit,
    latency_stats,
)
from hil.cache import Artifact
from hil.case import BuiltCase, Case
from hil.devices import DeviceSpec
from hil.partition import PartitionReport, judge_partition
from hil.recipes import Recipe
from hil.result import Accuracy, CheckResult


@dataclass(frozen=True)
class Observation:
    """What one deploy + run on a target gave back."""

    outputs: tuple[Array, ...]
    timings_us: tuple[float, ...] = ()
    timing: str = "measured"
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    deploy_bytes: int = 0
    log: str = ""
    target_info: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    quantized_steps_limit: float | None = None  # the target's own limit, before the case's


@dataclass(frozen=True)
class Reference:
    """Eager PyTorch's outputs and latency for the case."""

    outputs: tuple[Array, ...]
    latency: LatencyStats | None


def judge(
    built: BuiltCase,
    spec: DeviceSpec,
    recipe: Recipe,
    artifact: Artifact,
    reference: Reference,
    seen: Observation,
    arrays_path: Path,
) -> CheckResult:
    """Every verdict of one check."""
    case = built.case
    outputs = seen.outputs
    problems = tuple(compare.structure_problems(reference.outputs, outputs))
    tolerance = compare.tolerance_for(
        recipe.numerics, reference.outputs, artifact.output_scales, case.tolerance
    )
    metrics = None
    breaches: tuple[compare.Breach, ...] = ()
    if not problems:
        metrics = compare.measure(reference.outputs, outputs, classifier=case.classifier)
        breaches = tuple(compare.judge(metrics, tolerance))
    qref = artifact.quantized_reference()
    qref_metrics = None
    agreement = None
    if qref is not None and not compare.structure_problems(qref, outputs):
        qref_metrics = compare.measure(qref, outputs, classifier=case.classifier)
        agreement = compare.quantized_agreement(qref, outputs, artifact.output_scales)
    latency = latency_stats(seen.timings_us, seen.timing)
    budget = budget_for(case.budget_ms, spec, recipe.name)
    budget_breaches = (
        judge_latency(latency, budget)
        + judge_limit(
            ".pte size",
            artifact.size,
            spec.memory.pte_max_bytes,
            "bytes",
            f"memory.pte_max_bytes of {spec.source.name}",
        )
        + judge_counters(seen.counters, case.counter_budgets, spec, recipe.name)
    )
    partition = artifact.details.get("partition")
    partition_problems = (
        judge_partition(
            PartitionReport.from_dict(partition),
            case.expected_fallback_for(spec.name, recipe.name),
        )
        if partition
        else []
    )
    return CheckResult(
        case=case.name,
        target=spec.name,
        recipe=recipe.name,
        numerics=recipe.numerics,
        artifact=artifact,
        arrays_path=arrays_path,
        tolerance=tolerance,
        metrics=metrics,
        structure_problems=problems,
        output_breaches=breaches,
        quantized_reference_metrics=qref_metrics,
        accuracy=None if problems else _accuracy(built, reference.outputs, outputs),
        latency=latency,
        eager_latency=reference.latency,
        budget=budget,
        budget_breaches=tuple(budget_breaches),
        counters=seen.counters,
        deploy_bytes=seen.deploy_bytes,
        log=seen.log,
        target_info=seen.target_info,
        partition=partition,
        partition_problems=tuple(partition_problems),
        quantized_agreement=agreement,
        quantized_steps_limit=_steps_limit(seen.quantized_steps_limit, case),
    )


def _accuracy(
    built: BuiltCase, reference: tuple[Array, ...], outputs: tuple[Array, ...]
) -> Accuracy | None:
    """Classifier accuracy on labelled inputs, for cases that state an allowed drop."""
    if built.labels is None or built.case.max_accuracy_drop is None:
        return None
    labels = built.labels.numpy()

    def correct(logits: Array) -> float:
        predicted = np.argmax(logits.reshape(len(labels), -1), axis=-1)
        return float(np.mean(predicted == labels))

    return Accuracy(
        eager=correct(reference[0]),
        target=correct(outputs[0]),
        max_drop=built.case.max_accuracy_drop,
    )


def _steps_limit(target_limit: float | None, case: Case) -> float | None:
    """The target's limit on steps from the quantized model, unless the case sets its own."""
    if target_limit is None:
        return None
    override = case.tolerance.quantized_steps if case.tolerance else None
    return target_limit if override is None else override
