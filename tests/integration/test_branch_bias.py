"""A convolution inside a `torch.cond` branch: the device (the U85's TOSA graph in Arm's
reference model) computes the quantized model bit for bit once the reference reads the
branch's bias as ExecuTorch's lowering does (hil.recipes.branch_bias). The row is one of
ExecuTorch's own (`test_cond_conv1d_tosa_INT_branches`, its false-branch sample, their module
and their seed), which differed from the converted model in 1 of 32 elements."""

from __future__ import annotations

import torch

from hil.case import case_from_module
from hil.recipes.branch_bias import as_lowered
from hil.session import Session
from hil.verdict.checks import Question


def their_false_branch_row() -> tuple[torch.nn.Module, torch.Tensor]:
    from executorch.backends.arm.test.ops.test_cond import CondConv1d

    torch.manual_seed(0)  # their conftest's seed; the test draws both samples, then its modules
    samples = (torch.rand(1, 2, 8), -torch.rand(1, 2, 8))
    CondConv1d()
    return CondConv1d(), samples[1]


def test_a_cond_branch_convolution_is_judged_bit_for_bit(session: Session) -> None:
    module, x = their_false_branch_row()
    case = case_from_module("branch_bias", module, (x,), calibration=lambda: [(x,), (-x,)])
    result = session.check(case, "u85-ref", "ethos-u")
    target = next(c for c in result.checks if c.question is Question.TARGET)
    assert target.observed["max_steps"] == 0.0, target
    assert result.verdict == "PASS", result.failure_message()


def test_the_lowered_program_comes_from_the_model_as_converted() -> None:
    """Only the reference's copy changes: the converted model keeps its requantized bias."""
    graph = torch.fx.Graph()
    x, weight, bias = (graph.placeholder(n) for n in ("x", "weight", "bias"))
    quantize = torch.ops.quantized_decomposed.quantize_per_tensor.default
    dequantize = torch.ops.quantized_decomposed.dequantize_per_tensor.default
    q = graph.call_function(quantize, (bias, 0.01, 0, -128, 127, torch.int8))
    dq = graph.call_function(dequantize, (q, 0.01, 0, -128, 127, torch.int8))
    graph.output(graph.call_function(torch.ops.aten.conv1d.default, (x, weight, dq)))
    root = torch.nn.Module()
    root.add_module("false_graph_0", torch.fx.GraphModule(torch.nn.Module(), graph))
    top = torch.fx.Graph()
    top.output(top.get_attr("false_graph_0"))
    converted = torch.fx.GraphModule(root, top)
    judged = as_lowered(converted)
    assert judged is not converted
    conv = next(n for n in judged.false_graph_0.graph.nodes if n.op == "call_function")
    assert conv.args[2].op == "placeholder"  # the bias as the enclosing graph gave it
    kept = [n for n in converted.false_graph_0.graph.nodes if n.op == "call_function"]
    assert [n.target for n in kept] == [quantize, dequantize, torch.ops.aten.conv1d.default]
