"""The tosa-fp recipe: ExecuTorch's Arm TOSA backend for a floating-point TOSA profile.

This is the lowering ExecuTorch's `TosaPipelineFP` tests: TOSAPartitioner with a
`TOSA-<version>+FP[+extension...]` compile spec, no quantizer. No device runs a TOSA delegate
from a .pte; what the tosa_ref target runs is the delegate's own TOSA graph in Arm's TOSA
reference model, with the rest of the program on the host's CPU, so the recipe keeps beside
the .pte:

    delegates/<name>/out.tosa   the delegate's TOSA graph (the TOSA backend's very output)
    host_program.pt2            the rest of the program; delegate calls as hil::tosa_delegate

Options: version ("1.0") and extensions (TOSA's: bf16, fp8e4m3, fp8e5m2, ...), each of which
lets the lowering keep that type in the graph. A float program is in its inputs' own type
either way; the extension only admits it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.errors import UsageError
from hil.export import transform_passes
from hil.export.lowering import export_program, exporter_step
from hil.recipes.arm_lowered import DELEGATES
from hil.recipes.arm_partition import lowered_modules, partition_report, serialize_lowered
from hil.recipes.base import Recipe
from hil.recipes.delegate_files import TOSA_FILE
from hil.recipes.host_program import host_program, save_host_program

BACKEND = "TOSA"


class TosaFpRecipe(Recipe):
    name = "tosa-fp"
    numerics = "fp32"
    option_defaults = MappingProxyType(
        {"version": "1.0", "extensions": (), transform_passes.OPTION: ()}
    )

    def validate(self) -> None:
        if not isinstance(self.options["version"], str):
            raise UsageError(f"recipe {self.name}: option version must be a string, e.g. '1.0'")
        extensions = self.options["extensions"]
        if isinstance(extensions, str) or not all(isinstance(e, str) for e in extensions):
            raise UsageError(
                f"recipe {self.name}: option extensions must be a list of strings",
                fix="e.g. extensions: [bf16]",
            )
        transform_passes.validate(self.name, self.options[transform_passes.OPTION])

    @property
    def tosa_spec(self) -> str:
        """The TOSA specification string, as ExecuTorch's TosaPipelineFP writes it."""
        extensions = "".join(f"+{e}" for e in self.options["extensions"])
        return f"TOSA-{self.options['version']}+FP{extensions}"

    def compile_spec(self) -> Any:
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

        try:
            return TosaCompileSpec(self.tosa_spec)
        except Exception as e:  # the specification parser's refusal
            raise UsageError(
                f"recipe {self.name}: {self.tosa_spec} is not a TOSA specification this "
                f"ExecuTorch knows: {type(e).__name__}: {e}",
                fix="set version and extensions to ones ExecuTorch's Arm backend accepts",
            ) from e

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
        from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

        case = built.case.name
        partitioner = TOSAPartitioner(self.compile_spec())
        passes = transform_passes.instances(self.name, self.options[transform_passes.OPTION])
        program = export_program(built)
        # the edge config of ExecuTorch's Arm flow (no IR validity check), as in the ethos-u recipe
        edge = exporter_step(
            f"lowering for {self.tosa_spec}",
            case,
            lambda: to_edge_transform_and_lower(
                program,
                transform_passes=passes or None,
                partitioner=[partitioner],
                compile_config=EdgeCompileConfig(_check_ir_validity=False),
            ),
        )
        lowered_program = edge.exported_program()
        lowered = lowered_modules(lowered_program)
        names = [f"delegate_{i}" for i in range(len(lowered))]
        for name, module in zip(names, lowered, strict=True):
            folder = workdir / DELEGATES / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / TOSA_FILE).write_bytes(bytes(module.processed_bytes))
        report = partition_report(lowered_program, partitioner, 0, backend=BACKEND)
        save_host_program(host_program(lowered_program, lambda i, _: names[i]), workdir)
        pte, report = serialize_lowered(case, edge, report)
        return ExportProduct(pte=pte, details=self._details(names, lowered, report, workdir))

    def _details(
        self, names: Sequence[str], lowered: Sequence[Any], report: Any, workdir: Path
    ) -> Mapping[str, Any]:
        return {
            "tosa_spec": self.tosa_spec,
            "delegates": [
                {
                    "name": name,
                    "folder": f"{DELEGATES}/{name}",
                    "tosa_sha256": hashlib.sha256(bytes(module.processed_bytes)).hexdigest(),
                    "tosa_bytes": len(module.processed_bytes),
                }
                for name, module in zip(names, lowered, strict=True)
            ],
            "partition": report.to_dict(),
        }
