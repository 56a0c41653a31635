"""Calls that are more than a row of tensors: bound so that torch.export sees constants and
every target receives tensors only."""

from __future__ import annotations

import pytest
import torch

import hil
from hil.artifacts.fingerprint import model_fingerprint
from hil.call import BoundCall
from hil.errors import CaseError


class Cat(torch.nn.Module):
    def forward(self, xs: tuple[torch.Tensor, ...], dim: int) -> torch.Tensor:
        return torch.cat(xs, dim=dim)


class Scaled(torch.nn.Module):
    def forward(self, parts: dict[str, torch.Tensor], scale: float) -> torch.Tensor:
        return parts["a"] * scale + parts["b"]


X, Y = torch.randn(2, 3), torch.randn(2, 5)


def test_a_tuple_and_a_dim_become_two_tensor_inputs_and_a_constant() -> None:
    built = hil.case_from_module("cat", Cat(), ((X, Y), 1)).build()
    assert isinstance(built.module, BoundCall) and len(built.inputs) == 2
    assert torch.equal(built.module(*built.inputs), torch.cat((X, Y), dim=1))
    program = torch.export.export(built.module, built.inputs)
    assert len(program.graph_signature.user_inputs) == 2  # the dim is baked in


def test_dicts_and_floats_bind_too() -> None:
    a, b = torch.randn(4), torch.randn(4)
    built = hil.case_from_module("scaled", Scaled(), ({"a": a, "b": b}, 0.5)).build()
    assert torch.allclose(built.module(*built.inputs), a * 0.5 + b)


def test_a_row_of_tensors_is_left_as_it_is() -> None:
    model = torch.nn.Linear(3, 2)
    built = hil.case_from_module("row", model, [X]).build()
    assert built.module is model and built.inputs == (X,)


def test_another_constant_is_another_model() -> None:
    one = hil.case_from_module("cat", Cat(), ((X, X), 1)).build().module
    zero = hil.case_from_module("cat", Cat(), ((X, X), 0)).build().module
    assert model_fingerprint(one) != model_fingerprint(zero)


class Divide(torch.nn.Module):
    def forward(
        self, x: torch.Tensor, y: torch.Tensor, mode: str | None, dtype: torch.dtype
    ) -> torch.Tensor:
        return torch.div(x, y, rounding_mode=mode).to(dtype)


@pytest.mark.parametrize("mode", [None, "floor", "trunc"])
def test_none_strings_and_dtypes_are_constants_the_program_is_exported_with(
    mode: str | None,
) -> None:
    """ExecuTorch's div tests pass `rounding_mode=None`: a constant, as torch.export takes it."""
    x, y = torch.randn(8) * 10, torch.randn(8).abs() + 0.5
    built = hil.case_from_module("div", Divide(), (x, y, mode, torch.float16)).build()
    assert len(built.inputs) == 2
    program = torch.export.export(built.module, built.inputs)
    assert len(program.graph_signature.user_inputs) == 2
    expected = torch.div(x, y, rounding_mode=mode).half()
    assert torch.equal(program.module()(*built.inputs), expected)


def test_a_none_constant_is_another_model_than_a_string() -> None:
    x = torch.randn(4)
    fingerprints = {
        model_fingerprint(
            hil.case_from_module("div", Divide(), (x, x, m, torch.float32)).build().module
        )
        for m in (None, "floor", "None")
    }
    assert len(fingerprints) == 3


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ((1, 2.0), "inputs hold no tensor"),
        (3.5, "inputs must be a tensor or a tuple of the model's arguments, got float"),
    ],
)
def test_what_cannot_be_a_program_input_is_refused(call: object, message: str) -> None:
    with pytest.raises(CaseError, match=message):
        hil.case_from_module("bad", Cat(), call)  # type: ignore[arg-type]


def test_calibration_samples_must_keep_the_constants() -> None:
    case = hil.Case("cat", Cat, lambda: ((X, Y), 1), calibration=lambda: [((X, Y), 0)])
    with pytest.raises(CaseError, match="calibration sample 0 differs from the inputs"):
        case.build()
