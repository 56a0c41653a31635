"""The portable recipe: ExecuTorch's reference CPU kernels, no delegate."""

from __future__ import annotations

from pathlib import Path

from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.export.lowering import export_program, lower_to_pte
from hil.recipes.base import Recipe


class PortableRecipe(Recipe):
    name = "portable"
    numerics = "fp32"

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        program = export_program(built)
        return ExportProduct(pte=lower_to_pte(built.case.name, program))
