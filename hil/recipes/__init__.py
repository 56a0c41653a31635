"""PyTorch -> .pte recipes, one per backend configuration, looked up by name: what a backend
does to a model. The steps they share with the reference are in hil/export/, the quantized model
they lower (and the verdict compares with) in hil/reference/, hil's run-time changes to torch and
ExecuTorch in hil/speedups/."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hil.artifacts.store import ExportProduct
from hil.errors import UsageError
from hil.recipes.base import Recipe
from hil.recipes.cortex_m import CortexMRecipe
from hil.recipes.ethos_u import EthosURecipe
from hil.recipes.portable import PortableRecipe
from hil.recipes.tosa import TosaFpRecipe
from hil.recipes.vgf import VgfFpRecipe, VgfRecipe
from hil.recipes.xnnpack import XnnpackFp32Recipe, XnnpackInt8Recipe

RECIPES: Mapping[str, type[Recipe]] = {
    cls.name: cls
    for cls in (
        PortableRecipe,
        XnnpackFp32Recipe,
        XnnpackInt8Recipe,
        EthosURecipe,
        CortexMRecipe,
        TosaFpRecipe,
        VgfRecipe,
        VgfFpRecipe,
    )
}


def make_recipe(
    name: str, options: Mapping[str, Any] | None = None, *, shared_dir: Path | None = None
) -> Recipe:
    try:
        cls = RECIPES[name]
    except KeyError:
        valid = ", ".join(sorted(RECIPES))
        raise UsageError(f"unknown recipe {name!r}; valid recipes: {valid}") from None
    return cls(options, shared_dir=shared_dir)


__all__ = ["RECIPES", "ExportProduct", "Recipe", "make_recipe"]
