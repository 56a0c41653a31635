"""XNNPACK recipes: fp32 delegation, and int8 through PT2E with XNNPACK's quantizer."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch

from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.errors import UsageError
from hil.export.lowering import export_program, lower_to_pte
from hil.recipes.base import Recipe
from hil.reference.quantized import QuantizedStore
from hil.verdict.tolerances import StepAllowance


def _partitioner() -> Any:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return XnnpackPartitioner()


def delegation_details(pte: bytes) -> dict[str, Any]:
    """Count delegate calls and operators left on the CPU in a serialized program."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte).program
    plan = program.execution_plan[0]
    operators = [
        plan.operators[i.instr_args.op_index].name
        for i in plan.chains[0].instructions
        if type(i.instr_args).__name__ == "KernelCall"
    ]
    delegates = [d.id for d in plan.delegates]
    return {
        "delegates": len(delegates),
        "backends": sorted(set(delegates)),
        "cpu_operators": dict(Counter(operators)),
    }


def _post_training_quantizer() -> Any:
    """XNNPACK's quantizer without its QAT-only conv+batch-norm patterns.

    prepare_pt2e folds batch norms into their convolutions before annotating, so in
    post-training quantization those patterns can never match; yet the stock quantizer exports
    all twelve of them on every prepare (about 1.6 s of a tiny model's export). Dropping them
    leaves the .pte byte for byte the same (measured on conv+bn+relu models).
    """
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import XNNPACKQuantizer

    class PostTrainingXnnpackQuantizer(XNNPACKQuantizer):  # type: ignore[misc]
        SUPPORTED_PATTERNS = [p for p in XNNPACKQuantizer.SUPPORTED_PATTERNS if not p.is_qat]

        def transform_for_annotation(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
            return float_scalars_to_attrs(model)

    return PostTrainingXnnpackQuantizer()


def float_scalars_to_attrs(model: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The scalar operand of a float add or mul as a float buffer, so the quantizer can give
    it a quantization spec; integer arithmetic is left as it is.

    XNNPACK's own transform (`_convert_scalars_to_attrs`) makes every scalar of every add and
    mul a float buffer, integer ones included: a model that offsets int64 token ids
    (`positions + 2`, as OPT does) then feeds float ids to its embedding and calibration fails
    ("Expected tensor for argument #1 'indices' to have one of the following scalar types:
    Long, Int"). Float nodes are rewritten as theirs rewrites them (the same buffer names), so
    a float model's .pte is unchanged.
    """
    from torchao.quantization.pt2e.utils import get_new_attr_name_with_prefix

    arithmetic = (torch.ops.aten.add.Tensor, torch.ops.aten.mul.Tensor)
    for node in model.graph.nodes:
        value = node.meta.get("val")
        if (
            node.op != "call_function"
            or node.target not in arithmetic
            or not (isinstance(value, torch.Tensor) and value.dtype.is_floating_point)
        ):
            continue
        args = []
        for arg in node.args:
            if isinstance(arg, torch.fx.Node):
                args.append(arg)
                continue
            name = get_new_attr_name_with_prefix("_tensor_constant_")(model)
            constant = torch.tensor(float(arg))
            model.register_buffer(name, constant)
            with model.graph.inserting_before(node):
                attr = model.graph.create_node("get_attr", name, (), {})
                attr.meta["val"] = value.fake_mode.from_tensor(  # type: ignore[attr-defined]
                    constant, static_shapes=True
                )
            args.append(attr)
        node.args = tuple(args)
    model.recompile()
    return model


class XnnpackFp32Recipe(Recipe):
    name = "xnnpack-fp32"
    numerics = "fp32"

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        pte = lower_to_pte(built.case.name, export_program(built), [_partitioner()])
        return ExportProduct(pte=pte, details=delegation_details(pte))


XNNPACK_INT8 = StepAllowance(
    1.0,
    0.02,
    "XNNPACK requantizes the exact int32 accumulator with a float32 scale and rounds to "
    "nearest even, where the quantized PyTorch model rounds float32 arithmetic on dequantized"
    " values; measured on the operator rows with the x86-64 and the aarch64 kernels: at most "
    "1 step, in at most 0.13 % of elements",
)


class XnnpackInt8Recipe(Recipe):
    name = "xnnpack-int8"
    numerics = "int8"
    option_defaults = MappingProxyType({"per_channel": True})
    step_allowances = MappingProxyType({"int8": XNNPACK_INT8})

    def validate(self) -> None:
        if not isinstance(self.options["per_channel"], bool):
            raise UsageError(f"recipe {self.name}: option per_channel must be true or false")

    def quantizer(self) -> Any:
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            get_symmetric_quantization_config,
        )

        quantizer = _post_training_quantizer()
        quantizer.set_global(
            get_symmetric_quantization_config(is_per_channel=bool(self.options["per_channel"]))
        )
        return quantizer

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        root = self.shared_dir / "quantized" if self.shared_dir else workdir / ".quantized"
        identity = {
            "quantizer": "XNNPACKQuantizer (post-training patterns)",
            "per_channel": self.options["per_channel"],
        }
        model = QuantizedStore(root).get(built, identity, self.quantizer)
        if self.shared_dir is None:
            shutil.rmtree(root, ignore_errors=True)
        pte = lower_to_pte(built.case.name, model.program, [_partitioner()])
        return model.product(
            pte,
            {**delegation_details(pte), "quantized_model": model.key[:16]},
        )
