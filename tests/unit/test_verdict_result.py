"""A CheckResult's verdict is read off its checks: the first failing question wins, and
nothing unjudged is a PASS."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from hil.artifacts.store import Artifact
from hil.errors import BudgetExceeded, NotJudged, OutputMismatch, QuantizationLoss
from hil.verdict.checks import Limit, Question, failed, judged, not_judged
from hil.verdict.result import CheckResult

ARTIFACT = Artifact(
    "k" * 64, Path("/tmp/a"), "s" * 64, 10, "ethos-u", "int8", (0.1,), MappingProxyType({}), 1.0
)


def result(*checks) -> CheckResult:  # type: ignore[no-untyped-def]
    return CheckResult(
        "conv", "u85-ref", "ethos-u", "int8", ARTIFACT, Path("/tmp/conv.npz"), tuple(checks)
    )


def target(steps: float) -> object:
    return judged(
        Question.TARGET,
        "output 0",
        {"max_steps": steps, "step": 0.1},
        [Limit("max_steps", "<=", 1.0)],
        reference="the quantized PyTorch model",
        basis="steps of the quantizer's output step 0.1: backend allowance 1 step(s)",
    )


def quantization(sqnr: float) -> object:
    return judged(
        Question.QUANTIZATION,
        "output 0",
        {"sqnr_db": sqnr},
        [Limit("sqnr_db", ">=", 25.0)],
        reference="eager PyTorch",
    )


LATENCY_UNKNOWN = not_judged(Question.BUDGET, "latency (median)", "the target reported no timings")


def test_a_pass_has_every_check_judged() -> None:
    r = result(target(0.0), quantization(30.0))
    assert r.verdict == "PASS" and r.passed
    assert r.to_record()["quantized_agreement"] == {
        "statement": "bit-exact",
        "steps": 0.0,
        "limit_steps": 1.0,
    }


def test_something_unjudged_is_not_a_pass() -> None:
    r = result(target(0.0), quantization(30.0), LATENCY_UNKNOWN)
    assert r.verdict == "NOT JUDGED" and not r.passed
    with pytest.raises(NotJudged, match="no timings"):
        r.raise_for_failures()  # the library's gate, as the plugin: never a pass ...
    r.raise_for_failures(allow_not_judged=True)  # ... unless the caller opts out
    assert r.to_record()["not_judged"] == [
        "latency (median): NOT JUDGED: the target reported no timings"
    ]


def test_the_target_question_comes_first_and_names_its_numbers() -> None:
    r = result(quantization(10.0), target(3.0), LATENCY_UNKNOWN)
    assert r.verdict == "MISMATCH"
    message = r.failure_message()
    assert message is not None
    assert message.splitlines()[0] == (
        "conv on u85-ref [ethos-u]: the target's outputs are wrong (is the target right?)"
    )
    assert "output 0 vs the quantized PyTorch model: max_steps = 3, limit <= 1" in message
    assert "limits: steps of the quantizer's output step 0.1" in message
    assert "/tmp/conv.npz" in message
    with pytest.raises(OutputMismatch):
        r.raise_for_failures()


def test_poor_quantization_is_the_models_problem_named_as_such() -> None:
    r = result(target(0.0), quantization(12.0))
    assert r.verdict == "POOR QUANTIZATION" and r.outputs_ok
    assert "the model's quantization, not the target" in (r.failure_message() or "")
    with pytest.raises(QuantizationLoss):
        r.raise_for_failures()


def test_budgets_fail_after_the_model_questions() -> None:
    over = judged(
        Question.BUDGET, "npu_cycles", {"npu_cycles": 9.0}, [Limit("npu_cycles", "<=", 1.0)]
    )
    r = result(target(0.0), quantization(30.0), over, LATENCY_UNKNOWN)
    assert r.verdict == "OVER BUDGET"
    with pytest.raises(BudgetExceeded):
        r.raise_for_failures()
    missing = failed(Question.KERNELS, "CPU kernels", "no kernel for aten::avg_pool3d.out")
    assert result(target(0.0), missing, over).verdict == "MISSING KERNEL"
