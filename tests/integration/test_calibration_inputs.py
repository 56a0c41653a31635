"""Calibration comes from the case's own inputs: their dtype and their range, on every int8 recipe.

Two models a language or signal pipeline has, each failing calibration before hil drew its
samples from the inputs: token ids (int64) offset by a constant, as OPT's learned positions are,
into embeddings; and an operator defined only on positive inputs (log), whose calibration data
must stay positive. Real exports through every int8 recipe, real targets.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hil
from hil.case import case_from_module
from hil.session import Session

INT8_RECIPES = [
    ("host", "xnnpack-int8"),
    ("u85-ref", "ethos-u"),
    ("cortex-m55-ref", "cortex-m"),
    ("vgf-emu", "vgf"),
]


class OffsetEmbedding(nn.Module):
    """Token ids into embeddings, positions offset by 2 (OPT's learned positions)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.tokens = nn.Embedding(64, 16)
        self.positions = nn.Embedding(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1]).unsqueeze(0) + 2
        return self.head(self.tokens(ids) + self.positions(positions))


class LogOfPositive(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.log(x))


def _check(session: Session, case: hil.Case, target: str, recipe: str) -> hil.CheckResult:
    from hil.errors import TargetUnavailable

    try:
        session.target(target)
    except TargetUnavailable as e:
        pytest.skip(f"{target} unavailable: {e.message} (fix: {e.fix})")
    return session.check(case, target, recipe)


@pytest.mark.parametrize(("target", "recipe"), INT8_RECIPES)
def test_int64_token_ids_calibrate_and_pass(session: Session, target: str, recipe: str) -> None:
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(1))
    case = case_from_module(f"offset_embedding_{recipe}", OffsetEmbedding(), (ids,))
    built = case.build()
    for sample in built.calibration_or_default():
        assert sample[0].dtype == torch.int64
        assert int(sample[0].min()) >= 0 and int(sample[0].max()) < 64  # still valid ids
    result = _check(session, case, target, recipe)
    result.raise_for_failures()
    assert result.verdict == "PASS"


@pytest.mark.parametrize(("target", "recipe"), INT8_RECIPES)
def test_an_operator_defined_on_positive_inputs_calibrates_on_positive_values(
    session: Session, target: str, recipe: str
) -> None:
    x = torch.rand(4, 8, generator=torch.Generator().manual_seed(2)) * 4 + 0.25
    case = case_from_module(f"log_of_positive_{recipe}", LogOfPositive(), (x,))
    for sample in case.build().calibration_or_default():
        assert float(sample[0].min()) >= float(x.min())  # inside the given range
        assert float(sample[0].max()) <= float(x.max())
    result = _check(session, case, target, recipe)
    result.raise_for_failures()
    assert result.verdict == "PASS"
