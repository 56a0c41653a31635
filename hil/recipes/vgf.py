"""The VGF recipes: ExecuTorch's VGF lowering for the Arm ML SDK for Vulkan.

    vgf      quantized: VgfQuantizer (int8, a16w8, a8w4; per-channel or per-tensor weights;
             symmetric inputs and outputs), then VgfPartitioner
    vgf-fp   floating point: VgfPartitioner alone, the program in its inputs' float type

Both lower with `VgfCompileSpec(tosa_spec)`: each delegate becomes a TOSA graph (ExecuTorch's
Arm TOSA backend) that the ML SDK's model-converter turns into a VGF file, which is the
delegate's payload in the .pte. vgf's default specification is the integer profile,
`TOSA-1.0+INT` (quantize and dequantize at the program's edges stay on the CPU, as for an NPU),
not ExecuTorch's own VGF default `TOSA-1.0+FP+INT+int4+int16`, with which their lowering of a
quantized log refused the model (measured: "Unsupported dtype torch.int8 for GREATER_EQUAL" in
its quantize-node decomposition; the INT profile lowers and passes). ExecuTorch's VgfPipeline
tests name their own specification (hil.executorch_ops). Beside the .pte the recipe keeps, as
the other Arm recipes do:

    delegates/<name>/out.vgf     the delegate's VGF file (byte for byte the .pte's payload)
    delegates/<name>/out.tosa    the TOSA graph it was converted from, proven: the converter
                                 turns it into exactly that VGF again
    host_program.pt2             the rest of the program; delegate calls as hil::tosa_delegate
    lowering.log                 what the lowering and the converter printed
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.errors import ExportError, UsageError
from hil.export import transform_passes
from hil.export.lowering import export_program, exporter_step
from hil.recipes.arm_lowered import DELEGATES, keep_delegated
from hil.recipes.arm_partition import (
    lower_logged,
)
from hil.recipes.base import Recipe
from hil.recipes.delegate_files import TOSA_FILE, candidate_dumps, delegation_tag
from hil.reference import arm_quantized
from hil.reference.quantized import QuantizedModel
from hil.vgf import environment

VGF_FILE = "out.vgf"
BACKEND = "VGF"
DEFAULT_SPEC = "TOSA-1.0+INT"
LOG = "lowering.log"


@contextlib.contextmanager
def converter_found() -> Iterator[None]:
    """ExecuTorch looks for the model-converter on PATH or at MODEL_CONVERTER_PATH; hil's venv
    has it, which PATH need not name (a test runner started by its full path)."""
    from executorch.backends.arm.vgf.model_converter import find_model_converter_binary

    if find_model_converter_binary() is not None:
        yield
        return
    os.environ["MODEL_CONVERTER_PATH"] = str(environment.model_converter())
    try:
        yield
    finally:
        os.environ.pop("MODEL_CONVERTER_PATH", None)


class VgfLowering(Recipe):
    """What both VGF recipes share: the specification, the lowering, the kept files."""

    def validate(self) -> None:
        if not isinstance(self.options["tosa_spec"], str):
            raise UsageError(
                f"recipe {self.name}: option tosa_spec must be a string, e.g. {DEFAULT_SPEC!r}"
            )
        transform_passes.validate(self.name, self.options[transform_passes.OPTION])

    def compile_spec(self) -> Any:
        from executorch.backends.arm.vgf import VgfCompileSpec

        try:
            return VgfCompileSpec(str(self.options["tosa_spec"]))
        except Exception as e:  # the specification parser's refusal
            raise UsageError(
                f"recipe {self.name}: {self.options['tosa_spec']} is not a TOSA specification "
                f"ExecuTorch's VGF backend takes: {type(e).__name__}: {e}",
                fix=f"e.g. {DEFAULT_SPEC} or TOSA-1.0+FP",
            ) from e

    def lower(
        self, built: BuiltCase, program: Any, workdir: Path, model: QuantizedModel | None
    ) -> ExportProduct:
        from executorch.backends.arm.vgf import VgfPartitioner

        case, spec = built.case.name, self.compile_spec()
        dump = workdir / "tosa-dump"
        partitioner = VgfPartitioner(self.compile_spec().dump_intermediate_artifacts_to(str(dump)))
        with converter_found():
            edge = lower_logged(
                case,
                program,
                partitioner,
                workdir,
                f"VGF ({spec.tosa_spec})",
                LOG,
                "the lowering's log is kept beside the artifact",
                transform_passes.instances(self.name, self.options[transform_passes.OPTION]),
            )
            kept = keep_delegated(
                case, edge, partitioner, spec, dump, workdir, keep_delegate, backend=BACKEND
            )
        pte, report, names = kept.pte, kept.report, kept.names
        details = {
            "tosa_spec": str(spec.tosa_spec),
            "delegates": [_delegate(workdir, name) for name in names],
            "partition": report.to_dict(),
            **({"quantized_model": model.key[:16]} if model is not None else {}),
        }
        if model is None:
            return ExportProduct(pte=pte, details=details)
        return model.product(
            pte,
            details,
        )


class VgfRecipe(VgfLowering):
    name = "vgf"
    numerics = "int8"
    option_defaults = MappingProxyType({"tosa_spec": DEFAULT_SPEC, **arm_quantized.OPTION_DEFAULTS})
    # the VGF runs the TOSA graph's integer arithmetic (measured on the emulation layer:
    # identical to the TOSA reference model on the same graph, int8 and int16)
    step_allowances = arm_quantized.STEP_ALLOWANCES

    def __init__(
        self, options: Mapping[str, Any] | None = None, *, shared_dir: Path | None = None
    ) -> None:
        super().__init__(options, shared_dir=shared_dir)
        self.numerics = arm_quantized.numerics_of(self.options)

    def validate(self) -> None:
        super().validate()
        arm_quantized.validate(self.name, self.options)

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        import executorch.kernels.quantized  # noqa: F401  (the out-variants to_executorch needs)
        from executorch.backends.arm.quantizer import VgfQuantizer

        spec = self.compile_spec()
        model = arm_quantized.quantized_model(
            built,
            arm_quantized.identity("VgfQuantizer", self.options),
            lambda: arm_quantized.configure(VgfQuantizer(spec), self.options),
            self.shared_dir,
            workdir,
        )
        return self.lower(built, model.program, workdir, model)


class VgfFpRecipe(VgfLowering):
    name = "vgf-fp"
    numerics = "fp32"
    option_defaults = MappingProxyType({"tosa_spec": "TOSA-1.0+FP", transform_passes.OPTION: ()})

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        return self.lower(built, export_program(built), workdir, None)


def _convert(graph: bytes, spec: Any) -> bytes:
    """The ML SDK's model-converter on one TOSA graph, as ExecuTorch's VGF backend calls it."""
    from executorch.backends.arm.vgf.backend import vgf_compile

    return bytes(vgf_compile(graph, list(spec.compiler_flags)))


def keep_delegate(
    case: str, module: Any, dump: Path, folder: Path, spec: Any, used: set[Path]
) -> None:
    """Write folder/out.vgf (the delegate's payload) and folder/out.tosa, the dumped TOSA graph
    the converter turns into exactly that VGF (the delegate's own tag's dump tried first)."""
    vgf = bytes(module.processed_bytes)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / VGF_FILE).write_bytes(vgf)
    for path in candidate_dumps(dump, delegation_tag(module), used):
        graph = path.read_bytes()
        again = exporter_step(
            f"model-converter on {path.name} (proof)",
            case,
            partial(_convert, graph, spec),
        )
        if again == vgf:
            (folder / TOSA_FILE).write_bytes(graph)
            used.add(path)
            return
    raise ExportError(
        f"case {case!r}: no dumped TOSA graph converts into delegate {folder.name}'s VGF, so "
        "hil cannot tell which graph the VGF was made from",
        fix="report this: the VGF lowering or the model-converter is not deterministic here",
    )


def _delegate(workdir: Path, name: str) -> dict[str, Any]:
    folder = workdir / DELEGATES / name
    vgf = (folder / VGF_FILE).read_bytes()
    return {
        "name": name,
        "folder": f"{DELEGATES}/{name}",
        "tosa_sha256": hashlib.sha256((folder / TOSA_FILE).read_bytes()).hexdigest(),
        "vgf_sha256": hashlib.sha256(vgf).hexdigest(),
        "vgf_bytes": len(vgf),
    }
