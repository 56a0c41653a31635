"""Rounding sensitivity: how far a quantized model's outputs move when ties break otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from hil.case import Case
from hil.export.lowering import output_scales, run_reference
from hil.reference import rounding
from hil.reference.quantized import prepare


def quantized(model: nn.Module, *inputs: torch.Tensor) -> torch.fx.GraphModule:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    built = Case("q", lambda: model, lambda: inputs).build()
    prepared = prepare(built, quantizer)
    with torch.no_grad():
        prepared(*inputs)
    converted: torch.fx.GraphModule = convert_pt2e(prepared)
    return converted


@pytest.fixture(scope="module")
def deep() -> tuple[torch.fx.GraphModule, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(6):
        conv = nn.Conv2d(8, 8, 3, padding=1)
        with torch.no_grad():
            conv.weight *= 3.0  # a gain above one per layer, as trained networks have
        layers += [conv, nn.ReLU()]
    model = nn.Sequential(*layers).eval()
    x = (torch.randn(1, 8, 12, 12),)
    return quantized(model, *x), x


def test_a_single_layer_moves_by_one_tie_at_most() -> None:
    torch.manual_seed(0)
    x = (torch.randn(1, 4, 8, 8),)
    module = quantized(nn.Conv2d(4, 4, 3).eval(), *x)
    reference = run_reference(module, x)
    (moved,) = rounding.sensitivity(module, x, reference, output_scales(module))
    assert moved is not None and moved.runs == rounding.RUNS
    assert moved.max_steps <= 1.0 and moved.off_fraction < 0.1


def test_ties_compound_through_depth(
    deep: tuple[torch.fx.GraphModule, tuple[torch.Tensor, ...]],
) -> None:
    module, x = deep
    reference = run_reference(module, x)
    (moved,) = rounding.sensitivity(module, x, reference, output_scales(module))
    assert moved is not None and moved.max_steps >= 2.0  # one flip early grows with depth


def test_the_runs_are_seeded(deep: tuple[torch.fx.GraphModule, tuple[torch.Tensor, ...]]) -> None:
    module, x = deep
    reference = run_reference(module, x)
    scales = output_scales(module)
    assert rounding.sensitivity(module, x, reference, scales) == rounding.sensitivity(
        module, x, reference, scales
    )


def test_weights_are_never_nudged_and_activations_are_counted() -> None:
    torch.manual_seed(0)
    x = (torch.randn(1, 4, 8, 8),)
    module = quantized(nn.Conv2d(4, 4, 3).eval(), *x)
    assert rounding.runtime_quantizers(module) == 2  # the input and the output, not the weight
    float_graph = torch.export.export(nn.ReLU(), x).module()
    assert rounding.runtime_quantizers(float_graph) == 0


def test_outputs_without_a_step_have_no_sensitivity() -> None:
    torch.manual_seed(0)
    x = (torch.randn(1, 4, 8, 8),)
    module = quantized(nn.Conv2d(4, 4, 3).eval(), *x)
    reference = run_reference(module, x)
    assert rounding.sensitivity(module, x, reference, (None,)) == (None,)
    assert np.isfinite(reference[0]).all()


def _quantized(x: torch.Tensor) -> torch.Tensor:
    """x through an int8 quantizer of step 0.1: near-ties for x = 0.05, 0.15, 0.25, ..."""
    import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401  (registers the ops)

    ops = torch.ops.quantized_decomposed
    q = ops.quantize_per_tensor(x, 0.1, 0, -128, 127, torch.int8)
    return ops.dequantize_per_tensor(q, 0.1, 0, -128, 127, torch.int8)


def _requantized(x: torch.Tensor) -> torch.Tensor:
    """x / 2 through the quantizer: near-ties for x = 0.1, 0.3, 0.5, ..."""
    return _quantized(x * 0.5)


class _QuantizedInABranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda x: _requantized(x), lambda x: x - 1.0, (x,))


class _QuantizedInALoop(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch._higher_order_ops.while_loop import while_loop

        def condition(i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return i < 1

        def body(i: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, _requantized(x * 3.0)

        _, out = while_loop(condition, body, (torch.zeros((), dtype=torch.int64), x))
        return out


@pytest.mark.parametrize("model", [_QuantizedInABranch(), _QuantizedInALoop()], ids=type)
def test_quantizers_inside_control_flow_are_nudged_too(model: nn.Module) -> None:
    """A cond branch or loop body is a submodule the graph calls whole: its quantizers round
    on the device like the others, so their ties count in the sensitivity."""
    x = (
        torch.arange(1, 40, 2, dtype=torch.float32)
        / (10.0 if isinstance(model, _QuantizedInABranch) else 30.0),
    )
    module = torch.export.export(model, x).module()
    assert rounding.runtime_quantizers(module) == 1
    reference = run_reference(module, x)
    (moved,) = rounding.sensitivity(module, x, reference, (0.1,))
    assert moved is not None and moved.runs == rounding.RUNS
    assert moved.max_steps == 1.0 and moved.off_fraction > 0.2  # the near-ties flipped


class _WeightInABranch(nn.Module):
    """A branch reading a parameter: torch.export passes it in as an operand."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.arange(1, 40, 2, dtype=torch.float32) / 20.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(
            x.sum() > 0, lambda x: x + _quantized(self.weight), lambda x: x - 1.0, (x,)
        )


def test_a_constant_a_branch_receives_is_not_nudged() -> None:
    x = (torch.zeros(20) + 1.0,)
    module = torch.export.export(_WeightInABranch(), x).module()
    reference = run_reference(module, x)
    (moved,) = rounding.sensitivity(module, x, reference, (0.1,))
    assert moved is not None and moved.max_steps == 0.0  # the same integers on every device
