"""The judge: from what a run produced to a CheckResult, every question asked apart.

Pure computation over data the session gathered (no I/O beyond the artifact's stored arrays),
so every rule here is testable without a target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from hil.arrays import Array
from hil.artifacts.partition import PartitionReport, judge_partition, short_name
from hil.artifacts.store import Artifact
from hil.case import BuiltCase
from hil.devices import DeviceSpec
from hil.verdict import budgets, outputs
from hil.verdict.budgets import LatencyStats
from hil.verdict.checks import Check, Question, failed, judged, not_judged
from hil.verdict.device import Lowered, device_checks
from hil.verdict.metrics import measure
from hil.verdict.result import CheckResult, Metrics
from hil.verdict.tolerances import StepAllowance


@dataclass(frozen=True)
class Observation:
    """What one deploy + run on a target gave back."""

    outputs: tuple[Array, ...]
    timings_us: tuple[float, ...] = ()
    timing: str = "measured"
    timing_windows: int = 1  # target windows timed; the timings are the best one's
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    deploy_bytes: int = 0
    log: str = ""
    target_info: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # False for stand-ins that run the program's CPU part on PyTorch's kernels: whether the
    # device's runtime has those kernels is then judged from the partition report.
    device_kernels: bool = True
    not_the_model: str = ""  # why the outputs are not the model's (an echo runner's)
    # the lowered program's own reference on the same inputs, where it has one: the target
    # question is then asked as two, the lowering's and the device's (hil.verdict.device)
    lowered: Lowered | None = None


@dataclass(frozen=True)
class Reference:
    """Eager PyTorch's outputs and latency for the case; `beside`: eager timed right before and
    after this target's run (for budgets relative to eager), when such a budget applies."""

    outputs: tuple[Array, ...]
    latency: LatencyStats | None
    beside: LatencyStats | None = None
    # The inputs the model wrote into (`x += y`), as eager left them, in input order: a
    # program returns those writes first among its outputs where its lowering keeps them.
    written: tuple[Array, ...] = ()
    # The outputs eager gave in bfloat16, which the arrays hold as float32 (numpy has no bf16):
    # each is judged in bf16's precision.
    bf16_outputs: frozenset[int] = frozenset()
    # Why eager could not run the model (no outputs, no latency): nothing is compared with it.
    unavailable: str = ""


@dataclass(frozen=True)
class RecipeFacts:
    """What the verdict needs of the recipe that made the program (no recipe object)."""

    name: str
    numerics: str  # fp32, int8, a16w8, a8w4
    quantized: bool  # the recipe quantizes (whether the program did: the artifact says)
    step_allowance: StepAllowance | None  # how far its backend may round otherwise

    @classmethod
    def of(cls, recipe: Any) -> RecipeFacts:
        """From anything with a recipe's attributes (hil.recipes.Recipe)."""
        return cls(recipe.name, recipe.numerics, recipe.quantized, recipe.step_allowance)


def program_facts(recipe: RecipeFacts, artifact: Artifact) -> outputs.ProgramFacts:
    quantized = recipe.quantized and artifact.quantized_ops != 0
    return outputs.ProgramFacts(
        numerics=recipe.numerics,
        quantized=quantized,
        steps=artifact.output_scales,
        quantized_reference=artifact.quantized_reference() if quantized else None,
        sensitivity=artifact.sensitivity,
        allowance=recipe.step_allowance,
    )


def judge(
    built: BuiltCase,
    spec: DeviceSpec,
    recipe: RecipeFacts,
    artifact: Artifact,
    reference: Reference,
    seen: Observation,
    arrays_path: Path,
) -> CheckResult:
    """Every check of one run: target, kernels, partition, quantization, budgets."""
    case = built.case
    facts = program_facts(recipe, artifact)
    rules = outputs.CaseRules(
        override=case.tolerance_for(spec.name, recipe.name),
        classifier=case.classifier,
        labels=built.labels.numpy() if built.labels is not None else None,
        max_accuracy_drop=case.max_accuracy_drop,
    )
    partition = artifact.details.get("partition")  # as recorded, for the report
    report = artifact.parts.partition
    latency = budgets.latency_stats(seen.timings_us, seen.timing)
    budget = budgets.budget_for(case, spec, recipe.name)
    target = _output_checks(reference, seen, facts, rules)
    quantization = (
        [not_judged(Question.QUANTIZATION, "outputs", reference.unavailable)]
        if reference.unavailable and facts.quantized
        else outputs.quantization_checks(reference.outputs, facts, rules)
    )
    checks: list[Check] = [
        *target,
        *_kernel_checks(report, case.missing_kernels, seen.device_kernels),
        *_partition_checks(report, case.expected_fallback_for(spec.name, recipe.name)),
        *quantization,
    ]
    latency_check = budgets.latency_check(budget, latency, reference.beside, seen.timing_windows)
    if latency_check is not None:
        checks.append(latency_check)
    checks += budgets.counter_checks(seen.counters, case, spec, recipe.name, artifact.size)
    return CheckResult(
        case=case.name,
        target=spec.name,
        recipe=recipe.name,
        numerics=recipe.numerics,
        artifact=artifact,
        arrays_path=arrays_path,
        checks=tuple(checks),
        metrics=summary_metrics(reference.outputs, seen.outputs, _top1(checks)),
        latency=latency,
        eager_latency=reference.beside or reference.latency,
        budget=budget,
        counters=seen.counters,
        deploy_bytes=seen.deploy_bytes,
        log=seen.log,
        target_info=seen.target_info,
        partition=partition,
    )


def _output_checks(
    reference: Reference, seen: Observation, facts: outputs.ProgramFacts, rules: outputs.CaseRules
) -> list[Check]:
    """Is the target right? Asked as one question, or as two where the lowered program has a
    reference of its own: the lowering against the model, the device against that reference."""
    lowered = seen.lowered
    if lowered is None or lowered.unavailable:
        unjudged = seen.not_the_model or reference.unavailable
        if unjudged:
            return [not_judged(Question.TARGET, "outputs", unjudged)]
        checks = outputs.target_checks(
            reference.outputs, seen.outputs, facts, rules, reference.bf16_outputs
        )
        if lowered is None:
            return checks
        apart = f" (the lowering and the device not judged apart: {lowered.unavailable})"
        return [replace(c, basis=c.basis + apart) for c in checks]
    lowering = (
        [not_judged(Question.LOWERING, "outputs", reference.unavailable)]
        if reference.unavailable
        else [
            replace(c, question=Question.LOWERING)
            for c in outputs.target_checks(
                reference.outputs, lowered.outputs, facts, rules, reference.bf16_outputs
            )
        ]
    )
    device = (
        [not_judged(Question.DEVICE, "outputs", seen.not_the_model)]
        if seen.not_the_model
        else device_checks(lowered, seen.outputs, facts.steps)
    )
    return [*lowering, *device]


def _top1(checks: list[Check]) -> float | None:
    for check in checks:
        if (
            check.question in (Question.TARGET, Question.LOWERING)
            and "top1_agreement" in check.observed
        ):
            value = check.observed["top1_agreement"]
            return float(value) if isinstance(value, (int, float)) else None
    return None


def summary_metrics(
    eager: tuple[Array, ...], seen: tuple[Array, ...], top1: float | None = None
) -> Metrics | None:
    """The target against eager, worst over outputs (top-1: the target check's): for tables,
    not for verdicts."""
    if outputs.structure_problems(eager, seen) or not eager:
        return None
    each = [measure(e, o) for e, o in zip(eager, seen, strict=True)]
    return Metrics(
        max_abs=max(m.max_abs for m in each),
        max_rel=max(
            m.max_abs / m.peak if m.peak else (0.0 if m.max_abs == 0 else np.inf) for m in each
        ),
        mean_abs=max(m.mean_abs for m in each),
        sqnr_db=min(m.sqnr_db for m in each),
        cosine=min(m.cosine for m in each),
        top1=top1,
    )


def _kernel_checks(
    report: PartitionReport | None, expected: Mapping[str, str], ran_device_kernels: bool
) -> list[Check]:
    """A stand-in ran the CPU part on PyTorch's kernels; the device's runtime needs its own."""
    if report is None or ran_device_kernels:
        return []
    missing = report.missing_kernels
    unexpected = [op for op in missing if short_name(op.replace("::", ".")) not in expected]
    if unexpected:
        return [
            failed(
                Question.KERNELS,
                "CPU kernels",
                f"the device's runtime has no kernel for {', '.join(unexpected)} (ExecuTorch's "
                "portable and quantized kernel libraries lack it): the .pte would not load on "
                "the device",
                basis="set Case(missing_kernels={op: reason}) if this is expected",
            )
        ]
    reasons = "; ".join(f"{op}: {expected[short_name(op.replace('::', '.'))]}" for op in missing)
    return [
        judged(
            Question.KERNELS,
            "CPU kernels",
            {"missing_unexpected": 0.0},
            [],
            basis=f"expected by the case: {reasons}"
            if missing
            else "every CPU operator has a kernel in ExecuTorch's portable and quantized libraries",
        )
    ]


def _partition_checks(
    report: PartitionReport | None, expected: frozenset[str] | None
) -> list[Check]:
    if report is None or expected is None:
        return []
    problems = judge_partition(report, expected)
    if problems:
        return [failed(Question.PARTITION, "CPU fallback", "; ".join(problems))]
    what = "fully delegated" if not expected else "fallback " + ", ".join(sorted(expected))
    return [
        judged(
            Question.PARTITION,
            "CPU fallback",
            {"fallbacks": float(report.fallback_count)},
            [],
            basis=f"the case expects {what}: {report.describe()}",
        )
    ]
