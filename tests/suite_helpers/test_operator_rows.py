"""The operator table's helpers: rows are reproducible, distinct in the cache, and well formed."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hil.artifacts.fingerprint import model_fingerprint
from suites.factories import ints, mask, seeded_inputs, uniform
from suites.operators.modules import ChannelLRN
from suites.operators.rows import by_name, fn, op
from suites.operators.table import OPERATORS, TABLE


def test_a_row_builds_the_same_weights_and_inputs_every_time() -> None:
    row = op("conv", lambda: nn.Conv2d(3, 4, 3), (1, 3, 8, 8))
    first, second = row.build(), row.build()
    assert model_fingerprint(first.module) == model_fingerprint(second.module)
    assert torch.equal(first.inputs[0], second.inputs[0])


def test_building_a_row_leaves_the_global_random_state_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    op("conv", lambda: nn.Conv2d(3, 4, 3), (1, 3, 8, 8)).build()
    assert torch.equal(torch.rand(3), expected)


def test_wrapped_builtins_do_not_share_a_fingerprint() -> None:
    add, mul = fn(torch.add)(), fn(torch.mul)()
    assert model_fingerprint(add) != model_fingerprint(mul)


def test_row_options_pass_through_to_the_case() -> None:
    row = op("x", nn.ReLU, (4,), full=True, xfail={"u55-ref": "why"}, tags=frozenset({"slow"}))
    assert row.tags == {"full", "slow"}
    assert row.xfail_reason("u55-ref", "ethos-u") == "why"


def test_input_specs_give_the_asked_dtypes_and_ranges() -> None:
    flags, whole, positive = seeded_inputs(
        mask(64), ints(64, low=0, high=5), uniform(64, low=0.5, high=2.0)
    )()
    assert flags.dtype == torch.bool
    assert whole.dtype == torch.int32 and int(whole.min()) >= 0 and int(whole.max()) < 5
    assert float(positive.min()) >= 0.5 and float(positive.max()) < 2.0


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="relu"):
        by_name([op("relu", nn.ReLU, (4,)), op("relu", nn.ReLU, (8,))])


def test_the_default_sweep_covers_at_least_30_operators() -> None:
    default = [c for c in OPERATORS if "full" not in c.tags]
    assert len(default) >= 30
    assert len(TABLE) == len(OPERATORS)


@pytest.mark.parametrize("size", [3, 5])
def test_channel_lrn_matches_pytorch(size: int) -> None:
    x = 3 * torch.randn(2, 16, 5, 7)
    expected = nn.LocalResponseNorm(size, alpha=0.1)(x)
    assert torch.allclose(ChannelLRN(size, alpha=0.1)(x), expected, atol=1e-6)
