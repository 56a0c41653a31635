"""The tosa-fp recipe's options: the TOSA specification it lowers for and the transform passes
it runs first, refused when malformed."""

from __future__ import annotations

import pytest

from hil.errors import UsageError
from hil.export import transform_passes
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


INT32_CASTS = (
    "executorch.backends.arm._passes.insert_int32_casts_after_int64_placeholders:"
    "InsertInt32CastsAfterInt64PlaceholdersPass"
)


def test_a_transform_pass_is_named_by_where_it_lives_and_made_again() -> None:
    from executorch.backends.arm._passes import InsertInt32CastsAfterInt64PlaceholdersPass

    given = InsertInt32CastsAfterInt64PlaceholdersPass()
    assert transform_passes.name_of(given) == INT32_CASTS
    assert transform_passes.name_of(InsertInt32CastsAfterInt64PlaceholdersPass) == INT32_CASTS
    (made,) = transform_passes.instances("tosa-fp", [INT32_CASTS])
    assert type(made) is InsertInt32CastsAfterInt64PlaceholdersPass and made is not given
    assert make_recipe("tosa-fp", {"transform_passes": [INT32_CASTS]}).options[
        "transform_passes"
    ] == [INT32_CASTS]


def test_a_pass_a_name_cannot_make_again_has_no_name() -> None:
    from executorch.backends.arm._passes import InsertInt32CastsAfterInt64PlaceholdersPass

    assert (
        transform_passes.name_of(InsertInt32CastsAfterInt64PlaceholdersPass(tfa_pass=True)) is None
    )
    assert transform_passes.name_of(lambda graph: graph) is None


@pytest.mark.parametrize("recipe", ["tosa-fp", "ethos-u", "vgf", "vgf-fp"])
def test_a_transform_pass_that_does_not_import_is_refused(recipe: str) -> None:
    with pytest.raises(UsageError, match="does not import"):
        make_recipe(recipe, {"transform_passes": ["executorch.nowhere:Pass"]})
    with pytest.raises(UsageError, match="list of 'module:Name' strings"):
        make_recipe(recipe, {"transform_passes": INT32_CASTS})
