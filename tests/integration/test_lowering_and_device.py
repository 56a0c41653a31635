"""The lowering and the device, judged apart: where the lowered program has a reference of its
own (its TOSA graphs in Arm's reference model), a failure says which of the two to fix.

u85-ref runs that reference itself, so its device question holds by construction; a device
that is wrong is simulated by rewriting its outputs after the run (Session.check's
`rewrite_outputs`, the way a wrong NPU command stream or kernel would leave them). The lowering
deviation is the real one of ExecuTorch's cond lowering (tests/integration/test_cond_reference):
the model here keeps its branch convolutions bias-free, which that lowering computes exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch

from hil.arrays import Array
from hil.case import Case, case_from_module
from hil.errors import DeviceMismatch, OutputMismatch
from hil.session import Session
from hil.verdict.checks import Question

Rewrite = Callable[[tuple[Array, ...]], Sequence[Array]]


class BranchConvolutions(torch.nn.Module):
    """A convolution in each branch of a torch.cond, chosen by the input's sign."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.positive = torch.nn.Conv1d(2, 4, 3, padding=1, bias=False)
        self.negative = torch.nn.Conv1d(2, 4, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, self.positive, self.negative, [x])


@pytest.fixture(scope="module", params=[1.0, -1.0], ids=["true-branch", "false-branch"])
def cond_case(request: pytest.FixtureRequest) -> Case:
    x = torch.rand(1, 2, 8, generator=torch.Generator().manual_seed(0))
    return case_from_module(
        f"cond_{request.param:+g}",
        BranchConvolutions(),
        (request.param * x,),
        calibration=lambda: [(x,), (-x,)],
    )


def off_by(amount: float, elements: int) -> Rewrite:
    """Output 0 moved by `amount` in its first `elements` elements (a device wrong there)."""

    def rewrite(outputs: tuple[Array, ...]) -> list[Array]:
        wrong = outputs[0].copy()
        flat = wrong.reshape(-1)
        flat[:elements] += np.asarray(amount, dtype=wrong.dtype)
        return [wrong, *outputs[1:]]

    return rewrite


def test_a_right_device_passes_both_questions_on_u85_ref(session: Session, cond_case: Case) -> None:
    result = session.check(cond_case, "u85-ref", "ethos-u")
    assert result.passed, result.failure_message()
    assert result.of(Question.LOWERING) and not result.of(Question.TARGET)
    (device,) = result.of(Question.DEVICE)
    assert device.observed["max_steps"] == 0.0
    assert device.basis.startswith("by construction")
    record = result.to_record()
    assert {c["question"] for c in record["checks"]} >= {"lowering", "device"}


@pytest.mark.parametrize(("steps", "elements"), [(1.0, 3), (40.0, 8)], ids=["one-step", "gross"])
def test_a_wrong_device_inside_a_branch_is_the_devices_failure_on_u85_ref(
    session: Session, cond_case: Case, steps: float, elements: int
) -> None:
    step = session.export(cond_case, "u85-ref", "ethos-u").output_scales[0]
    assert step
    result = session.check(
        cond_case, "u85-ref", "ethos-u", rewrite_outputs=off_by(steps * step, elements)
    )
    assert result.verdict == "DEVICE MISMATCH", result.checks
    (device,) = result.of(Question.DEVICE)
    assert device.observed["max_steps"] == pytest.approx(steps, rel=1e-3)
    assert all(not c.failed for c in result.of(Question.LOWERING))  # the program is right
    with pytest.raises(DeviceMismatch, match="the device is at fault, not the lowering"):
        result.raise_for_failures()


@pytest.mark.parametrize(
    ("relative", "elements"), [(1 / 127, 3), (0.5, 8)], ids=["one-step", "gross"]
)
def test_a_wrong_device_inside_a_branch_is_caught_on_host(
    session: Session, cond_case: Case, relative: float, elements: int
) -> None:
    """On the host there is no lowered reference apart from the device: one question, whose
    float limits catch an int8 step's worth of error (1/127 of the output's peak)."""
    right = session.check(cond_case, "host", "portable")
    assert right.passed, right.failure_message()
    peak = float(np.max(np.abs(np.load(right.arrays_path)["output0"])))
    wrong = session.check(
        cond_case, "host", "portable", rewrite_outputs=off_by(relative * peak, elements)
    )
    assert wrong.verdict == "MISMATCH", wrong.checks
    assert not wrong.of(Question.DEVICE)
    with pytest.raises(OutputMismatch):
        wrong.raise_for_failures()


def test_a_device_that_ran_nothing_leaves_the_lowering_judged(session: Session) -> None:
    """Rewritten to another shape: the device question fails on the structure alone, and the
    lowering's own numbers stand."""
    torch.manual_seed(1)
    case = case_from_module("linear_for_device", torch.nn.Linear(8, 4), (torch.rand(2, 8),))
    result = session.check(
        case, "u85-ref", "ethos-u", rewrite_outputs=lambda outs: [outs[0][:1], *outs[1:]]
    )
    assert result.verdict == "DEVICE MISMATCH"
    (device,) = result.of(Question.DEVICE)
    assert "its program's reference gives" in device.cause
    assert all(c.judged and not c.failed for c in result.of(Question.LOWERING))
