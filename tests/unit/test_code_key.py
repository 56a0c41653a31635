"""The code part of an artifact's key is computed from the recipe's imports, not listed: edits
in a scratch copy of the package show what moves it and what does not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hil.artifacts.code_key import closure, code_key, package_root

RECIPE = "hil.recipes.portable"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    shutil.copytree(
        package_root() / "hil", tmp_path / "hil", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def edit(root: Path, module: str, old: str, new: str) -> None:
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_the_closure_follows_imports_a_recipe_only_reaches_through_others(scratch: Path) -> None:
    found = closure(RECIPE, scratch)
    assert "hil.export.lowering" in found  # imported by the recipe
    assert "hil.verdict.tolerances" in found  # recipe -> hil.recipes.base -> tolerances
    assert "hil.settings.serial" in found  # ... -> hil.case -> hil.devices -> hil.settings
    assert "hil.plugin.options" not in found and "hil.api" not in found  # not an export's


def test_a_docstring_or_comment_edit_keeps_the_key(scratch: Path) -> None:
    before = code_key(RECIPE, scratch)
    edit(scratch, "hil.export.lowering", '"""', '"""An edited docstring. ')
    edit(
        scratch,
        "hil.verdict.tolerances",
        "FP32_ATOL = 1e-5",
        "FP32_ATOL = 1e-5  # an edited comment",
    )
    assert code_key(RECIPE, scratch) == before


def test_a_constant_three_imports_away_changes_the_key(scratch: Path) -> None:
    before = code_key(RECIPE, scratch)
    edit(scratch, "hil.verdict.tolerances", "FP32_ATOL = 1e-5", "FP32_ATOL = 2e-5")
    assert code_key(RECIPE, scratch) != before


def test_a_module_outside_the_closure_changes_nothing(scratch: Path) -> None:
    before = code_key(RECIPE, scratch)
    edit(scratch, "hil.plugin.options", "OPT_IN_TAGS = {", "OPT_IN_TAGS = {'x': '--x', ")
    assert code_key(RECIPE, scratch) == before
