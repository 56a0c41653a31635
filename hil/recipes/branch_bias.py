"""The quantized model as ExecuTorch's lowering reads a convolution's bias in a control-flow branch.

A convolution inside a `torch.cond` branch (or a `while_loop` body) whose weight and bias live
in the enclosing module gets them as operands of the control-flow call. ExecuTorch's quantizer
then quantizes the bias twice: in the enclosing graph with the call's input activation
parameters, and inside the branch once more, as an int8 activation. Its Arm lowering
(`RewriteConvPass`) makes the int32 bias TOSA's convolution takes from the enclosing graph's
value, without the branch's second rounding.

Measured on ExecuTorch's `test_cond` rows (1.5.1, u85-ref): rebuilt from the quantized program,
the branch with the bias's in-branch requantization left out gives the device's output exactly
(0 of 32 elements off in both rows), and the converted model as it stands 1 and 6 off. So the
target question's reference (and the rounding sensitivity measured on it) runs a copy with that
one requantization left out; the program is lowered from the model as converted, unchanged.
tests/integration/test_branch_bias.py checks a row of theirs against the device bit for bit.
"""

from __future__ import annotations

import copy

import torch
from torch.fx import GraphModule, Node

CONVOLUTIONS = frozenset(
    {
        torch.ops.aten.conv1d.default,
        torch.ops.aten.conv2d.default,
        torch.ops.aten.conv3d.default,
        torch.ops.aten.convolution.default,
        torch.ops.aten.conv_transpose1d.default,
        torch.ops.aten.conv_transpose2d.input,
        torch.ops.aten.conv_transpose3d.input,
    }
)
BIAS = 2  # the bias's position in every convolution's arguments


def _requantize_call(node: object, name: str) -> Node | None:
    """`node` if it calls quantized_decomposed's per-tensor `name` ("quantize", "dequantize")."""
    if not isinstance(node, Node) or node.op != "call_function":
        return None
    return node if str(node.target).startswith(f"quantized_decomposed.{name}_per_tensor") else None


def _branch_operand(bias: object) -> Node | None:
    """The branch's operand a bias is requantized from (dequantize(quantize(operand))), if so."""
    dequantized = _requantize_call(bias, "dequantize")
    quantized = _requantize_call(dequantized.args[0], "quantize") if dequantized else None
    operand = quantized.args[0] if quantized else None
    return operand if isinstance(operand, Node) and operand.op == "placeholder" else None


def _branches(model: GraphModule) -> list[GraphModule]:
    return [m for name, m in model.named_modules() if name and isinstance(m, GraphModule)]


def _requantized_biases(model: GraphModule) -> list[tuple[GraphModule, Node, Node]]:
    return [
        (branch, node, operand)
        for branch in _branches(model)
        for node in branch.graph.nodes
        if node.target in CONVOLUTIONS
        and len(node.args) > BIAS
        and (operand := _branch_operand(node.args[BIAS])) is not None
    ]


def as_lowered(converted: GraphModule) -> GraphModule:
    """`converted`, or a copy whose branch convolutions take their bias as the lowering does."""
    if not _requantized_biases(converted):
        return converted
    model = copy.deepcopy(converted)
    touched = set()
    for branch, conv, operand in _requantized_biases(model):
        conv.update_arg(BIAS, operand)
        touched.add(branch)
    for branch in touched:
        branch.graph.eliminate_dead_code()
        branch.recompile()
    return model
