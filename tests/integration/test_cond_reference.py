"""The reference of a convolution inside a `torch.cond` branch is the quantized model as
converted, never a reading of what ExecuTorch's lowering computes. Their own row
(`test_cond_conv1d_tosa_INT_branches`, its false-branch sample, their module and their seed):
the Arm lowering makes TOSA's bias from the enclosing graph's value without the branch's own
int8 requantization, so u85-ref's program differs from the quantized model by one step in 1 of
32 elements. That is the lowering's deviation, and the check must say it, not absorb it."""

from __future__ import annotations

import torch

from hil.case import case_from_module
from hil.session import Session
from hil.verdict.checks import Question


def their_false_branch_row() -> tuple[torch.nn.Module, torch.Tensor]:
    from executorch.backends.arm.test.ops.test_cond import CondConv1d

    torch.manual_seed(0)  # their conftest's seed; the test draws both samples, then its modules
    samples = (torch.rand(1, 2, 8), -torch.rand(1, 2, 8))
    CondConv1d()
    return CondConv1d(), samples[1]


def test_a_cond_branch_convolution_is_judged_against_the_converted_model(
    session: Session,
) -> None:
    module, x = their_false_branch_row()
    case = case_from_module("cond_branch", module, (x,), calibration=lambda: [(x,), (-x,)])
    result = session.check(case, "u85-ref", "ethos-u")
    lowering = next(c for c in result.checks if c.question is Question.LOWERING)
    assert lowering.failed, lowering
    assert lowering.observed["max_steps"] == 1.0, lowering
    assert not result.of(Question.TARGET)  # asked as two: the lowering and the device
    assert all(not c.failed for c in result.of(Question.DEVICE))
    assert result.verdict == "LOWERING MISMATCH"
    message = result.failure_message() or ""
    assert "the lowering is at fault, not the device" in message
    assert "is the lowering faithful?" in message and "lowered reference" in message
