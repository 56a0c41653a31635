"""Cases build lazily, validate inputs, and explain failures."""

from __future__ import annotations

import pytest
import torch

from hil import Case, seeded
from hil.errors import CaseError


def test_seeded_inputs_are_reproducible() -> None:
    a, b = seeded((2, 3), (4,), seed=7)(), seeded((2, 3), (4,), seed=7)()
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_model_factory_failure_names_the_case() -> None:
    def broken() -> torch.nn.Module:
        raise RuntimeError("weights file missing")

    with pytest.raises(
        CaseError, match="case 'bad' could not be built: RuntimeError: weights file missing"
    ):
        Case("bad", broken, seeded((1,))).build()


@pytest.mark.parametrize(
    "inputs", [lambda: None, lambda: [1, 2], lambda: "text"]
)  # () is a model of no inputs
def test_malformed_inputs_are_case_errors(inputs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CaseError):
        Case("bad", torch.nn.ReLU, inputs).build()


def test_default_calibration_is_seeded_and_shaped_like_inputs() -> None:
    built = Case("c", torch.nn.ReLU, seeded((2, 5))).build()
    first, second = built.calibration_or_default(), built.calibration_or_default()
    assert len(first) == 8 and first[0] is built.inputs
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first, second, strict=True))
    assert all(s[0].shape == (2, 5) for s in first)


def test_restrictions_and_xfail_lookup() -> None:
    case = Case(
        "c",
        torch.nn.ReLU,
        seeded((1,)),
        recipes=frozenset({"portable"}),
        xfail={"u55-ref": "no NPU op"},
    )
    assert case.applies_to("host", "portable") and not case.applies_to("host", "xnnpack-fp32")
    assert case.xfail_reason("u55-ref", "portable") == "no NPU op"
    assert case.xfail_reason("host", "portable") is None
