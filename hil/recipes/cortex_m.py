"""The Cortex-M recipe: CortexMQuantizer, to_edge with the Cortex-M config, the cortex_m passes.

Following ExecuTorch's own compile script (backends/arm/scripts/aot_arm_compiler.py): the model
and its 4-D inputs go channels-last, the quantized program is lowered to edge with the
backend's edge config (hil.compat.cortex_m), and `CortexMPassManager` rewrites quantized
patterns into `cortex_m::` operators (CMSIS-NN kernels on the device). Nothing is delegated:
the partition report lists which operators became CMSIS-NN kernels and which stay on portable
kernels.

Options: cpu ("cortex-m55", "cortex-m85", ...; selects the CMSIS-NN backend: MVE, DSP, scalar)
and int16_activations (per-tensor ops with 16-bit activations where the kernels support it).

Besides the .pte the recipe writes host_program.pt2, the transformed edge program before
serialization (see hil.recipes.host_program); the cortex-m reference target runs it through the
cortex_m operators' Python reference implementations.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch

from hil.artifacts.partition import Fallback, PartitionReport
from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.compat.cortex_m import edge_compile_config, quantizer, require_cmsis_nn_bindings
from hil.errors import UsageError
from hil.ethos_u.macs import graph_macs, op_name
from hil.export.lowering import exporter_step
from hil.recipes.arm_partition import compute_nodes, missing_cpu_kernels
from hil.recipes.base import Recipe
from hil.recipes.host_program import host_program as make_host_program
from hil.recipes.host_program import save_host_program
from hil.reference.quantized import QuantizedModel, QuantizedStore
from hil.verdict.tolerances import StepAllowance

CPUS = (
    "cortex-m0",
    "cortex-m0plus",
    "cortex-m3",
    "cortex-m4",
    "cortex-m7",
    "cortex-m23",
    "cortex-m33",
    "cortex-m35p",
    "cortex-m55",
    "cortex-m85",
)
CMSIS_NAMESPACE = "cortex_m."
# Operators that move no arithmetic: quantize/dequantize at the edges, layout and view copies.
GLUE = (
    "cortex_m.quantize_per_tensor",
    "cortex_m.dequantize_per_tensor",
    "quantized_decomposed.",
    "aten.view_copy",
    "aten.squeeze_copy",
    "aten.unsqueeze_copy",
    "aten.permute_copy",
    "dim_order_ops.",
)


def channels_last(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(memory_format=torch.channels_last) if tensor.dim() == 4 else tensor


CMSIS_NN_INT8 = StepAllowance(
    1.0,
    0.02,
    "CMSIS-NN requantizes with 32-bit fixed-point multipliers and rounding shifts, where the "
    "quantized PyTorch model rounds float32 values; measured on the operator rows (the "
    "cortex_m operators' reference implementations): at most 1 step, in at most 1.2 % of "
    "elements (elementwise mul)",
)


class CortexMRecipe(Recipe):
    name = "cortex-m"
    numerics = "int8"
    option_defaults = MappingProxyType({"cpu": "cortex-m55", "int16_activations": False})

    step_allowances = MappingProxyType({"int8": CMSIS_NN_INT8})

    def validate(self) -> None:
        if self.options["cpu"] not in CPUS:
            raise UsageError(
                f"recipe {self.name}: cpu {self.options['cpu']!r} is not a Cortex-M",
                fix="use one of " + ", ".join(CPUS),
            )
        if not isinstance(self.options["int16_activations"], bool):
            raise UsageError(f"recipe {self.name}: int16_activations must be true or false")

    def quantizer(self) -> Any:
        return quantizer(self.options["int16_activations"])

    def quantized_model(self, built: BuiltCase, workdir: Path) -> QuantizedModel:
        root = self.shared_dir / "quantized" if self.shared_dir else workdir / ".quantized"
        identity: Mapping[str, Any] = {
            "quantizer": "CortexMQuantizer",
            "int16_activations": self.options["int16_activations"],
            "layout": "channels_last" if goes_channels_last(built) else "contiguous",
        }
        return QuantizedStore(root).get(built, identity, self.quantizer)

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        import executorch.backends.cortex_m.passes  # registers the cortex_m:: operators
        import executorch.kernels.quantized  # noqa: F401  (quantize/dequantize out-variants)
        from executorch.backends.cortex_m.passes.cortex_m_pass_manager import (
            CortexMPassManager,
        )
        from executorch.backends.cortex_m.target_config import CortexMTargetConfig
        from executorch.exir import to_edge_transform_and_lower

        require_cmsis_nn_bindings()
        case = built.case.name
        layout_case = _channels_last_case(built) if goes_channels_last(built) else built
        model = self.quantized_model(layout_case, workdir)
        target = CortexMTargetConfig.from_target_string(self.options["cpu"])

        def lower() -> tuple[Any, Any]:
            edge = to_edge_transform_and_lower(model.program, compile_config=edge_compile_config())
            before = edge.exported_program()
            macs = graph_macs(before.graph.nodes)
            # As ExecuTorch's aot_arm_compiler does: the transformed program replaces forward.
            edge._edge_programs["forward"] = CortexMPassManager(
                before, target_config=target
            ).transform()
            return edge, macs

        edge, macs = exporter_step("Cortex-M lowering (cortex_m passes)", case, lower)
        program = edge.exported_program()
        report = cortex_m_report(program, macs)
        save_host_program(make_host_program(program, lambda i, _: f"delegate_{i}"), workdir)
        pte = exporter_step(
            "serializing the program", case, lambda: bytes(edge.to_executorch().buffer)
        )
        report = dataclasses.replace(
            report, pte_bytes=len(pte), missing_kernels=missing_cpu_kernels(pte)
        )
        return model.product(
            pte,
            {
                "cortex_m": {
                    "cpu": self.options["cpu"],
                    "cmsis_nn_backend": target.backend.name,
                    "input_layout": "channels_last" if goes_channels_last(built) else "contiguous",
                },
                "partition": report.to_dict(),
                "quantized_model": model.key[:16],
            },
        )


def goes_channels_last(built: BuiltCase) -> bool:
    """Whether the case's program takes channels-last inputs, as the cortex_m kernels want
    (CMSIS-NN convolutions and pools are NHWC): when every tensor input is 4-D. Inputs of
    mixed rank stay contiguous: a 1-D tensor is never channels-last, and ExecuTorch's portable
    kernels refuse operands of different dim orders (measured: ExecuTorch's broadcast add test,
    `torch.ones(1) + torch.ones(2, 2, 2, 2)`, refused on the M55 with channels-last forced)."""
    tensors = [t for t in built.inputs if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.dim() == 4 for t in tensors)


def _channels_last_case(built: BuiltCase) -> BuiltCase:
    """The case as the Cortex-M flow wants it: module and 4-D tensors channels-last (on copies;
    5-D weights, a Conv3d's, stay as they are)."""
    module = copy.deepcopy(built.module)
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            if tensor.dim() == 4:
                tensor.data = tensor.data.to(memory_format=torch.channels_last)
    samples = [tuple(channels_last(t) for t in s) for s in built.calibration_or_default()]
    inputs = tuple(channels_last(t) for t in built.inputs)
    return dataclasses.replace(built, module=module, inputs=inputs, calibration=samples)


def cortex_m_report(program: Any, macs: int | None) -> PartitionReport:
    """Which operators became CMSIS-NN kernels (cortex_m::) and which stay on portable kernels."""
    kernels: Counter[str] = Counter()
    glue: Counter[str] = Counter()
    portable: Counter[str] = Counter()
    for node in compute_nodes(program.graph.nodes):
        name = op_name(node.target)
        if name == "alloc":
            continue  # a scratch buffer for a CMSIS-NN kernel, not an operator
        if name.startswith(GLUE):
            glue[name] += 1
        elif name.startswith(CMSIS_NAMESPACE):
            kernels[name] += 1
        else:
            portable[name] += 1
    return PartitionReport(
        backend="CMSIS-NN",
        delegates=0,
        accelerated=dict(sorted(kernels.items())),
        fallbacks=tuple(
            Fallback(op, count, "no cortex_m kernel: runs on portable kernels")
            for op, count in sorted(portable.items())
        ),
        boundary=dict(sorted(glue.items())),
        macs=macs,
    )
