"""What the case part of a cache key covers: input shapes always; with values, the input
values and the calibration set, the default one named by the code that draws it."""

from __future__ import annotations

import pytest
import torch

from hil import Case, seeded
from hil.artifacts.keys import case_material
from hil.case import BuiltCase


def _built(seed: int = 0, calibration: list[tuple[torch.Tensor, ...]] | None = None) -> BuiltCase:
    case = Case(
        "c",
        torch.nn.ReLU,
        seeded((2, 5), seed=seed),
        calibration=(lambda: calibration) if calibration is not None else None,
    )
    return case.build()


def test_a_default_calibration_is_keyed_without_drawing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def drawn(self: BuiltCase) -> list[object]:
        raise AssertionError("the key drew the default calibration set")

    before = case_material(_built(), values=True)
    monkeypatch.setattr(BuiltCase, "calibration_or_default", drawn)
    assert case_material(_built(), values=True) == before
    # the default set is drawn from the inputs: their values are in the key
    assert case_material(_built(seed=1), values=True) != before


def test_a_given_calibration_set_is_keyed_by_its_values() -> None:
    sample = (torch.ones(2, 5),)
    given = case_material(_built(calibration=[sample]), values=True)
    assert given != case_material(_built(), values=True)
    assert given == case_material(_built(calibration=[(torch.ones(2, 5),)]), values=True)
    assert given != case_material(_built(calibration=[(torch.ones(2, 5) * 2,)]), values=True)


def test_without_values_only_shapes_count() -> None:
    assert case_material(_built(), values=False) == case_material(_built(seed=1), values=False)


def test_a_channels_last_input_is_another_key_than_the_same_values_contiguous() -> None:
    """ExecuTorch's avg_pool2d and mean_dim tests both draw randn(1, 1280, 7, 7) first, one
    of them channels-last: they shared a quantized model, and the contiguous case ran the
    program lowered for channels-last inputs (24 steps off)."""
    x = torch.randn(1, 8, 3, 3)
    contiguous = Case("c", torch.nn.ReLU, lambda: (x.clone(),)).build()
    last = Case("c", torch.nn.ReLU, lambda: (x.to(memory_format=torch.channels_last),)).build()
    for values in (False, True):
        assert case_material(contiguous, values=values) != case_material(last, values=values)
