"""Models at the edges of what hil's references and stand-ins see, found running ExecuTorch's
own operator tests: a model that writes into the inputs it is handed (`x += y`, as residual
blocks do) is judged on the values the case gave (every reference, timing run and target gets
its own copies), and a program the stand-in's Python operators cannot run is not judged there."""

from __future__ import annotations

import pytest
import torch

from hil import Case
from hil.session import Session


class InplaceAddRelu(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x += y
        return torch.relu_(x)


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.linspace(-5, 5, 8).reshape(2, 4), torch.linspace(-3, 3, 8).reshape(2, 4))


CASE = Case("inplace_add_relu", InplaceAddRelu, inputs)


@pytest.mark.parametrize(
    ("target", "recipe"),
    [
        ("host", "portable"),
        ("vboard", "portable"),
        ("host", "xnnpack-int8"),
        ("cortex-m55-ref", "cortex-m"),
    ],
)
def test_a_model_that_writes_its_inputs_is_judged_on_the_inputs_given(
    session: Session, target: str, recipe: str
) -> None:
    result = session.check(CASE, target, recipe)
    assert result.passed, result.failure_message()
    built = session.built(CASE)
    assert torch.equal(built.inputs[0], inputs()[0])  # the case's own inputs are untouched


class DilatedConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, dilation=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def test_a_program_the_reference_operators_cannot_run_is_not_judged(session: Session) -> None:
    """torch has no int8 dilated convolution: the stand-in cannot say what the device does (a
    real M55 runs it), so the target question is NOT JUDGED, naming what can judge it."""
    case = Case("dilated_conv_int8", DilatedConv, lambda: (torch.rand(1, 3, 12, 12),))
    result = session.check(case, "cortex-m55-ref", "cortex-m")
    assert result.verdict == "NOT JUDGED", result.failure_message()
    assert "qemu-m55" in (result.not_judged_message() or "")


class TopK(torch.nn.Module):
    """Returns torch.return_types.topk, a named tuple no program serializer can name."""

    def forward(self, x: torch.Tensor) -> torch.return_types.topk:
        return torch.topk(x, 3)


@pytest.mark.parametrize(
    ("target", "recipe"),
    [("host", "portable"), ("host", "xnnpack-int8"), ("tosa-fp-ref", "tosa-fp")],
)
def test_a_model_returning_a_named_tuple_is_judged_on_its_values(
    session: Session, target: str, recipe: str
) -> None:
    """ExecuTorch's `topk` and `sort` model rows raised a raw NotImplementedError ("No
    registered serialization name for torch.return_types.topk") when the program was saved."""
    case = Case("topk_values_indices", TopK, lambda: (torch.linspace(-4, 4, 16).reshape(2, 8),))
    result = session.check(case, target, recipe)
    assert result.passed, result.failure_message()
    import numpy as np

    with np.load(result.arrays_path) as arrays:  # values and indices, in the tuple's order
        assert {"output0", "output1", "reference0", "reference1"} <= set(arrays.files)
