"""The two questions about a run's outputs, each output judged on its own.

    target right?        float program: the target against eager PyTorch (tight)
                         quantized program: the target against the quantized PyTorch model, in
                         the output's quantization steps (the backend's allowance plus the
                         model's rounding sensitivity)
    quantization good?   quantized program: the quantized PyTorch model against eager (SQNR,
                         cosine; top-1 and labelled accuracy for classifiers)

Pure functions of arrays and facts; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hil.arrays import Array
from hil.artifacts.parts import OutputSensitivity
from hil.tolerance_override import ToleranceOverride
from hil.verdict import tolerances
from hil.verdict.checks import Check, Limit, Question, failed, judged, not_judged
from hil.verdict.metrics import OutputMetrics, measure, range_step, top1_agreement
from hil.verdict.tolerances import StepAllowance, Tolerance

EAGER = "eager PyTorch"
QUANTIZED = "the quantized PyTorch model"


@dataclass(frozen=True)
class ProgramFacts:
    """What the artifact says about the program's outputs."""

    numerics: str  # the recipe's: fp32, int8, a16w8, a8w4
    quantized: bool  # the program quantizes something at run time
    steps: tuple[float | None, ...] = ()  # each output's quantization step (None: float)
    quantized_reference: tuple[Array, ...] | None = None
    sensitivity: tuple[OutputSensitivity | None, ...] = ()
    allowance: StepAllowance | None = None

    def step(self, index: int) -> float | None:
        return self.steps[index] if index < len(self.steps) else None

    def sensitivity_of(self, index: int) -> OutputSensitivity | None:
        return self.sensitivity[index] if index < len(self.sensitivity) else None


@dataclass(frozen=True)
class CaseRules:
    """What the case adds to the defaults."""

    override: ToleranceOverride | None = None
    classifier: bool = False
    labels: Array | None = None
    max_accuracy_drop: float | None = None


def structure_problems(reference: Sequence[Array], outputs: Sequence[Array]) -> list[str]:
    """Differences in count, shape or dtype that make any metric meaningless."""
    if len(reference) != len(outputs):
        return [f"the target returned {len(outputs)} outputs, {EAGER} {len(reference)}"]
    problems = []
    for i, (r, o) in enumerate(zip(reference, outputs, strict=True)):
        if r.shape != o.shape:
            problems.append(f"output {i} has shape {tuple(o.shape)}, {EAGER} {tuple(r.shape)}")
        elif r.dtype != o.dtype:
            problems.append(f"output {i} has dtype {o.dtype}, {EAGER} {r.dtype}{_values(r, o)}")
    return problems


def _values(reference: Array, output: Array) -> str:
    """Whether the values agree all the same: a backend that narrows int64 to int32 (the Arm
    backends do) gives the right numbers in a type its caller does not expect."""
    if not (np.issubdtype(reference.dtype, np.integer) and np.issubdtype(output.dtype, np.integer)):
        return ""
    same = np.array_equal(reference.astype(np.int64), output.astype(np.int64))
    return " (the values agree; the type is the program's)" if same else " (the values differ too)"


def _observed(metrics: OutputMetrics) -> dict[str, float | None]:
    """The metrics as a check records them; those the signal leaves undefined are left out."""
    left_out = {"undefined", *metrics.undefined}
    return {k: v for k, v in metrics.__dict__.items() if v is not None and k not in left_out}


def _output_check(
    question: Question,
    index: int,
    metrics: OutputMetrics,
    tolerance: Tolerance,
    rules: CaseRules,
    reference: str,
    top1: tuple[Array, Array, float | Array] | None,
) -> Check:
    """One output judged within `tolerance`. `top1` (reference, output, margin: one, or one
    per row): a classifier's first output, whose argmax must agree as well (a near-tie within
    the margin is no disagreement)."""
    observed = _observed(metrics)
    limits = list(tolerance.limits)
    if top1 is not None:
        observed["top1_agreement"] = top1_agreement(*top1)
        limits.append(Limit("top1_agreement", ">=", tolerances.min_top1(rules.override)))
    return _judge_output(
        question,
        f"output {index}",
        metrics,
        observed,
        limits,
        reference=reference,
        basis=tolerance.basis,
    )


def _judge_output(
    question: Question,
    subject: str,
    metrics: OutputMetrics,
    observed: dict[str, float | None],
    limits: list[Limit],
    *,
    reference: str,
    basis: str,
) -> Check:
    """`judged`, without the limits on metrics this signal leaves undefined (said in the basis);
    with none left, NOT JUDGED saying why."""
    kept = [lim for lim in limits if lim.metric not in metrics.undefined]
    dropped = " and ".join(sorted({lim.metric for lim in limits} - {lim.metric for lim in kept}))
    if not dropped:
        return judged(question, subject, observed, limits, reference=reference, basis=basis)
    zero = "reference" if "sqnr_db" in metrics.undefined else "output"
    why = f"{dropped} undefined (0/0) where the {zero} is all zero"
    if not kept:
        return not_judged(
            question, subject, f"no limit applies: {why}", reference=reference, observed=observed
        )
    return judged(question, subject, observed, kept, reference=reference, basis=f"{basis}; {why}")


def _is_float(array: Array) -> bool:
    return bool(np.issubdtype(array.dtype, np.floating))


def target_checks(
    eager: Sequence[Array],
    outputs: Sequence[Array],
    facts: ProgramFacts,
    rules: CaseRules,
    bf16_outputs: frozenset[int] = frozenset(),
) -> list[Check]:
    """Is the target right? One check per output (plus labelled accuracy for float programs).
    `bf16_outputs`: the outputs eager gave in bfloat16 (held as float32: numpy has no bf16)."""
    problems = structure_problems(eager, outputs)
    if problems and facts.quantized and _shaped_as_quantized(eager, facts, outputs):
        # quantization changed how many values an output holds (nonzero of values rounded to
        # zero): the target is judged against the quantized model it was compiled from, the
        # change itself by the quantization question
        return _against_quantized(outputs, facts, rules)
    if problems:
        return [failed(Question.TARGET, "outputs", "; ".join(problems))]
    if not facts.quantized:
        checks = [
            _float_check(i, e, o, rules, EAGER, "bf16" if i in bf16_outputs else None)
            for i, (e, o) in enumerate(zip(eager, outputs, strict=True))
        ]
        if rules.labels is not None and rules.max_accuracy_drop is not None:
            checks.append(_accuracy(Question.TARGET, eager[0], outputs[0], rules, "the target"))
        return checks
    reference = facts.quantized_reference
    if reference is None or structure_problems(eager, reference):
        cause = (
            "the artifact holds no outputs of the quantized PyTorch model to compare with"
            if reference is None
            else "the stored quantized-model outputs do not match eager's in count or shape"
        )
        return [
            not_judged(Question.TARGET, f"output {i}", cause, reference=QUANTIZED)
            for i in range(len(outputs))
        ]
    return _against_quantized(outputs, facts, rules)


def _recounted(eager: Sequence[Array], quantized: Sequence[Array] | None) -> list[str]:
    """The outputs where the quantized model holds another number of values than eager (same
    count of outputs and dtypes): a data-dependent size quantization changed. The same values
    in another shape (a 0-d result as (1,)) are not the quantization's: the target question
    reports those against eager's shape."""
    if quantized is None or len(quantized) != len(eager):
        return []
    pairs = list(zip(eager, quantized, strict=True))
    if any(e.dtype != q.dtype for e, q in pairs) or all(e.size == q.size for e, q in pairs):
        return []
    return structure_problems(eager, quantized)


def _shaped_as_quantized(
    eager: Sequence[Array], facts: ProgramFacts, outputs: Sequence[Array]
) -> bool:
    """Whether quantization changed an output's size and the target has the quantized sizes."""
    reference = facts.quantized_reference
    return (
        reference is not None
        and bool(_recounted(eager, reference))
        and not structure_problems(reference, outputs)
    )


def _against_quantized(
    outputs: Sequence[Array], facts: ProgramFacts, rules: CaseRules
) -> list[Check]:
    assert facts.quantized_reference is not None
    return [
        _quantized_check(i, q, o, facts, rules)
        for i, (q, o) in enumerate(zip(facts.quantized_reference, outputs, strict=True))
    ]


def _float_check(
    index: int, ref: Array, out: Array, rules: CaseRules, against: str, precision: str | None = None
) -> Check:
    metrics = measure(ref, out)
    precision = precision or ("fp16" if ref.dtype == np.float16 else "fp32")
    tolerance = tolerances.float_target(metrics.peak, precision, rules.override)
    classify = rules.classifier and index == 0 and _is_float(ref)
    top1 = (ref, out, 2.0 * (tolerance.max_abs or 0.0)) if classify else None
    return _output_check(Question.TARGET, index, metrics, tolerance, rules, against, top1)


def _quantized_check(
    index: int, ref: Array, out: Array, facts: ProgramFacts, rules: CaseRules
) -> Check:
    """Steps of the output's own scale from the quantized model; an output the quantizer left
    in float (or an integer output) is held to the float rule against the quantized model."""
    step = facts.step(index)
    if not _is_float(ref):
        return _float_check(index, ref, out, rules, QUANTIZED)
    origin = f"the quantizer's output step {step:.4g}" if step else ""
    if not step:
        step = range_step(ref)
        origin = f"the range-derived step {step:.4g} (the quantizer left this output in float)"
    if not step:  # a constant output: any difference is a whole range off
        return _float_check(index, ref, out, rules, QUANTIZED)
    metrics = measure(ref, out, step)
    sensitivity = facts.sensitivity_of(index) if facts.step(index) else None
    allowance = facts.allowance or tolerances.DEFAULT_ALLOWANCE
    tolerance = tolerances.quantized_target(allowance, sensitivity, origin, rules.override)
    margin = 2.0 * (tolerance.get("max_steps") or 0.0) * step
    top1 = (ref, out, margin) if rules.classifier and index == 0 else None
    return _output_check(Question.TARGET, index, metrics, tolerance, rules, QUANTIZED, top1)


def quantization_checks(
    eager: Sequence[Array], facts: ProgramFacts, rules: CaseRules
) -> list[Check]:
    """Is the quantization good enough? The quantized PyTorch model against eager, per output."""
    if not facts.quantized:
        return []
    reference = facts.quantized_reference
    recounted = _recounted(eager, reference)
    if recounted:  # the quantized model answers another question (a nonzero count, a length)
        return [failed(Question.QUANTIZATION, "outputs", "; ".join(recounted), reference=EAGER)]
    if reference is None or structure_problems(eager, reference):
        return [
            not_judged(
                Question.QUANTIZATION,
                "outputs",
                "the artifact holds no usable outputs of the quantized PyTorch model",
                reference=EAGER,
            )
        ]
    tolerance = tolerances.quantization(facts.numerics, rules.override)
    checks = []
    if not tolerance.limits and not rules.classifier:  # every output limit waived by the case
        checks.append(
            not_judged(
                Question.QUANTIZATION,
                "outputs",
                f"the case waives this question ({tolerance.basis})",
                reference=EAGER,
            )
        )
    else:
        for index, (e, q) in enumerate(zip(eager, reference, strict=True)):
            if not _is_float(e):
                continue  # an integer output is not quantized: the target check holds it
            checks.append(_quantization_check(index, e, q, facts, rules, tolerance))
    if rules.labels is not None and rules.max_accuracy_drop is not None:
        checks.append(_accuracy(Question.QUANTIZATION, eager[0], reference[0], rules, QUANTIZED))
    return checks


def _quantization_check(
    index: int, e: Array, q: Array, facts: ProgramFacts, rules: CaseRules, tolerance: Tolerance
) -> Check:
    whole = (e, q)  # a classifier's rows, for top-1
    e, q, unheld = _finite_in_eager(e, q)
    if unheld and not e.size:
        return not_judged(
            Question.QUANTIZATION,
            f"output {index}",
            f"eager's output is non-finite everywhere ({unheld} elements): a quantized output "
            "cannot hold infinity or NaN, so there is nothing to judge its quantization by",
            reference=EAGER,
        )
    if e.size and not np.any(e):
        # a constant non-zero output is still judged: SQNR and cosine are defined on it, and
        # the observers' range (which always holds zero) gives its step a real resolution
        return not_judged(
            Question.QUANTIZATION,
            f"output {index}",
            "eager's output is all zero: SQNR and cosine are 0/0 on it, and the step calibrated "
            "on zeros is the quantizer's floor, not a resolution (the target question still "
            "compares the target with the quantized model)",
            reference=EAGER,
        )
    metrics = measure(e, q)
    if unheld:
        tolerance = replace(
            tolerance,
            basis=f"{tolerance.basis}; eager's {unheld} non-finite element(s) (as atanh(1) "
            "= inf) left out: a quantized output cannot hold them (the target question still "
            "compares every element with the quantized model)",
        )
    step = facts.step(index)
    if step and metrics.peak <= step and not (rules.override and rules.override.max_abs):
        # eager's whole output lies within one output step of zero (acos(1), a product of tiny
        # values): below the quantizer's resolution, SQNR and cosine measure rounding noise
        # against nothing. Quantized, it can only be right to within that one step.
        return judged(
            Question.QUANTIZATION,
            f"output {index}",
            _observed(metrics),
            [Limit("max_abs", "<=", step)],
            reference=EAGER,
            basis=f"eager's peak {metrics.peak:.3g} is within one output step "
            f"({step:.3g}): the quantized model must be within that step",
        )
    top1 = None
    if rules.classifier and index == 0:
        top1 = (whole[0], whole[1], quantization_margin(*whole, facts.step(0)))
    return _output_check(Question.QUANTIZATION, index, metrics, tolerance, rules, EAGER, top1)


def _finite_in_eager(e: Array, q: Array) -> tuple[Array, Array, int]:
    """The elements where eager is finite, and how many it is not at (where the quantized
    model is finite: an integer type has no infinity or NaN to give back)."""
    unheld = ~np.isfinite(e) & np.isfinite(q)
    count = int(np.count_nonzero(unheld))
    if not count:
        return e, q, 0
    keep = ~unheld
    return e[keep], q[keep], count


def quantization_margin(eager: Array, quantized: Array, step: float | None) -> Array:
    """Per row, how close eager's top classes may be for the quantized model to pick either:
    one output step, or six times the row's typical quantization error when that is larger
    (its median |error|, which a few wrong logits do not raise; six medians are about four
    standard deviations of Gaussian noise). A flip inside that margin is the quantization's
    ordinary noise deciding a near tie; one outside it is a class the quantization got wrong."""
    rows = eager.reshape(-1, eager.shape[-1]).astype(np.float64)
    error = np.abs(quantized.reshape(rows.shape).astype(np.float64) - rows)
    margin: Array = np.maximum(step or range_step(eager), 6.0 * np.median(error, axis=-1))
    return margin


def _accuracy(
    question: Question, eager: Array, judged_logits: Array, rules: CaseRules, who: str
) -> Check:
    """Labelled accuracy of `judged_logits` may drop at most max_accuracy_drop below eager's."""
    assert rules.labels is not None and rules.max_accuracy_drop is not None
    labels = rules.labels.reshape(-1)

    def correct(logits: Array) -> float:
        predicted = np.argmax(logits.reshape(len(labels), -1), axis=-1)
        return float(np.mean(predicted == labels))

    eager_accuracy, accuracy = correct(eager), correct(judged_logits)
    return judged(
        question,
        "accuracy",
        {
            "accuracy": accuracy,
            "eager_accuracy": eager_accuracy,
            "accuracy_drop": eager_accuracy - accuracy,
        },
        [Limit("accuracy_drop", "<=", rules.max_accuracy_drop)],
        reference=f"{EAGER} on {len(labels)} labelled inputs",
        basis=f"the case's max_accuracy_drop {rules.max_accuracy_drop:g} for {who}",
    )
