"""ExecuTorch's own `cat` operator tests (a tuple of tensors and a dim, from the installed
wheel's backends/arm/test/ops/test_cat.py) through hil.check: on the host runtime, the
virtual board's runner, and the Ethos-U85 reference target."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import hil
from hil.session import Session

test_cat = pytest.importorskip("executorch.backends.arm.test.ops.test_cat")
CASES = (
    "cat_ones_and_rand_three_tensors",
    "cat_rand_two_tensors",
    "cat_ones_and_rand_four_tensors",
)


@pytest.mark.parametrize(
    ("target", "recipe"),
    [
        ("host", "portable"),
        ("host", "xnnpack-int8"),
        ("vboard", "xnnpack-fp32"),
        ("u85-ref", "ethos-u"),
    ],
)
@pytest.mark.parametrize("name", CASES)
def test_executorch_cat_cases_pass(session: Session, name: str, target: str, recipe: str) -> None:
    torch.manual_seed(0)
    call = test_cat.Cat.test_parameters[name]()
    result = hil.check(
        test_cat.Cat(), call, target=target, recipe=recipe, name=name, session=session
    )
    assert result.verdict == "PASS", result.failure_message()
    with np.load(result.arrays_path) as arrays:  # the target's output, as judged
        assert arrays["output0"].shape == tuple(torch.cat(*call).shape)
