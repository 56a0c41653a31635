"""What one verdict is made of: checks, each answering one question about one thing.

A check is PASS only when its numbers were compared with its limits; a check whose number the
target could not give (no timings, no counter, no step to count in) is NOT JUDGED with the
cause, never PASS. A CheckResult's verdict is read off its checks (hil.verdict.result).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class Status(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    NOT_JUDGED = "not judged"


class Question(enum.Enum):
    """The questions a check answers; the target's and the quantization's are "The verdict" of
    ARCHITECTURE.md."""

    TARGET = "target"  # is the target right? (against the model it was compiled from)
    # Where the lowered program has a reference of its own (its TOSA graphs in Arm's reference
    # model), the target question is asked as two, so a failure names what to fix:
    LOWERING = "lowering"  # is the lowering faithful? (its reference against the model)
    DEVICE = "device"  # is the device faithful to its program? (against that reference)
    QUANTIZATION = "quantization"  # is the quantization good enough? (quantized model vs eager)
    KERNELS = "kernels"  # can the device's runtime run every CPU operator of the program?
    PARTITION = "partition"  # did the accelerator take what the case expects?
    BUDGET = "budget"  # latency, counters and memory within their budgets?

    @property
    def title(self) -> str:
        return QUESTION_TITLES[self]


QUESTION_TITLES: Mapping[Question, str] = MappingProxyType(
    {
        Question.TARGET: "is the target right?",
        Question.LOWERING: "is the lowering faithful?",
        Question.DEVICE: "is the device faithful to its program?",
        Question.QUANTIZATION: "is the quantization good enough?",
        Question.KERNELS: "can the device run every operator?",
        Question.PARTITION: "is the model partitioned as expected?",
        Question.BUDGET: "is it within budget?",
    }
)


@dataclass(frozen=True)
class Limit:
    """One bound: `metric` `relation` `value` must hold ("max_steps <= 1")."""

    metric: str
    relation: str  # "<=" or ">="
    value: float

    def holds(self, observed: float) -> bool:
        if math.isnan(observed):
            return False
        return observed <= self.value if self.relation == "<=" else observed >= self.value

    def __str__(self) -> str:
        return f"{self.metric} {self.relation} {self.value:.6g}"


@dataclass(frozen=True)
class Breach:
    """One metric outside its limit."""

    metric: str
    observed: float
    limit: float
    relation: str

    def __str__(self) -> str:
        return f"{self.metric} = {self.observed:.6g}, limit {self.relation} {self.limit:.6g}"


def _nothing() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Check:
    """One question about one subject ("output 0", "latency", "npu_cycles"), judged."""

    question: Question
    subject: str
    status: Status
    reference: str = ""  # what the subject was compared with
    observed: Mapping[str, Any] = field(default_factory=_nothing)
    limits: tuple[Limit, ...] = ()
    breaches: tuple[Breach, ...] = ()
    basis: str = ""  # where the limits come from, with any override's reason
    cause: str = ""  # NOT JUDGED: why not; FAIL without numbers: what failed

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    @property
    def judged(self) -> bool:
        return self.status is not Status.NOT_JUDGED

    def describe(self) -> str:
        """One line for messages: what, against what, the breached numbers or the cause."""
        head = f"{self.subject}"
        if self.reference:
            head += f" vs {self.reference}"
        if self.status is Status.NOT_JUDGED:
            return f"{head}: NOT JUDGED: {self.cause}"
        details = "; ".join(str(b) for b in self.breaches) or self.cause
        return f"{head}: {details}" if details else f"{head}: {self.status.value}"

    def to_record(self) -> dict[str, Any]:
        return {
            "question": self.question.value,
            "subject": self.subject,
            "status": self.status.value,
            "reference": self.reference,
            "observed": {k: json_number(v) for k, v in self.observed.items()},
            "limits": [
                {"metric": lim.metric, "relation": lim.relation, "value": lim.value}
                for lim in self.limits
            ],
            "breaches": [str(b) for b in self.breaches],
            "basis": self.basis,
            "cause": self.cause,
        }


def json_number(value: Any) -> Any:
    """JSON has no infinity or NaN: those are written as the strings 'inf', '-inf', 'nan'."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def judged(
    question: Question,
    subject: str,
    observed: Mapping[str, Any],
    limits: Sequence[Limit],
    *,
    reference: str = "",
    basis: str = "",
) -> Check:
    """A check of `observed` against `limits`: FAIL naming each breach, else PASS. A limit whose
    metric was not observed makes the check NOT JUDGED (nothing unjudged is a PASS)."""
    missing = [lim.metric for lim in limits if observed.get(lim.metric) is None]
    if missing:
        return not_judged(
            question,
            subject,
            f"no {', '.join(missing)} to compare",
            reference=reference,
            observed=observed,
            limits=limits,
            basis=basis,
        )
    breaches = tuple(
        Breach(lim.metric, float(observed[lim.metric]), lim.value, lim.relation)
        for lim in limits
        if not lim.holds(float(observed[lim.metric]))
    )
    return Check(
        question,
        subject,
        Status.FAIL if breaches else Status.PASS,
        reference,
        MappingProxyType(dict(observed)),
        tuple(limits),
        breaches,
        basis,
    )


def not_judged(
    question: Question,
    subject: str,
    cause: str,
    *,
    reference: str = "",
    observed: Mapping[str, Any] | None = None,
    limits: Sequence[Limit] = (),
    basis: str = "",
) -> Check:
    return Check(
        question,
        subject,
        Status.NOT_JUDGED,
        reference,
        MappingProxyType(dict(observed or {})),
        tuple(limits),
        (),
        basis,
        cause,
    )


def failed(
    question: Question, subject: str, cause: str, *, basis: str = "", reference: str = ""
) -> Check:
    """A failure that is a fact rather than a number out of bounds (a missing kernel)."""
    return Check(question, subject, Status.FAIL, reference, basis=basis, cause=cause)
