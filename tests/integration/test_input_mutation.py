"""A model that writes into the inputs it is handed (`x += y`, as residual blocks do) is judged
on the values the case gave: every reference, timing run and target gets its own copies."""

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


@pytest.mark.parametrize(("target", "recipe"), [("host", "portable"), ("vboard", "portable"), ("host", "xnnpack-int8"),
                                                ("cortex-m55-ref", "cortex-m")])  # fmt: skip
def test_a_model_that_writes_its_inputs_is_judged_on_the_inputs_given(
    session: Session, target: str, recipe: str
) -> None:
    result = session.check(CASE, target, recipe)
    assert result.passed, result.failure_message()
    built = session.built(CASE)
    assert torch.equal(built.inputs[0], inputs()[0])  # the case's own inputs are untouched
