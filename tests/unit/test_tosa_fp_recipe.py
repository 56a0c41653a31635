"""The tosa-fp recipe's options: the TOSA specification it lowers for, refused when malformed."""

from __future__ import annotations

import pytest

from hil.errors import UsageError
from hil.recipes import make_recipe
from hil.recipes.tosa import TosaFpRecipe


def test_the_specification_is_their_pipelines_own() -> None:
    recipe = make_recipe("tosa-fp", {"extensions": ["bf16", "fp8e4m3"]})
    assert isinstance(recipe, TosaFpRecipe)
    assert recipe.tosa_spec == "TOSA-1.0+FP+bf16+fp8e4m3"
    assert str(recipe.compile_spec().tosa_spec).startswith("TOSA-1.0+FP")
    assert not recipe.quantized


def test_malformed_options_are_refused_with_what_to_write() -> None:
    with pytest.raises(UsageError, match="extensions must be a list"):
        make_recipe("tosa-fp", {"extensions": "bf16"})
    with pytest.raises(UsageError, match="version must be a string"):
        make_recipe("tosa-fp", {"version": 1.0})
    with pytest.raises(UsageError, match=r"TOSA-1.0\+FP\+nonsense is not a TOSA specification"):
        make_recipe("tosa-fp", {"extensions": ["nonsense"]}).compile_spec()
