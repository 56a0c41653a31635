"""MACs counted from exported graphs, checked against the textbook formulas."""

from __future__ import annotations

import torch
from torch import nn

from hil.ethos_u.macs import graph_macs, op_name


def macs_of(module: nn.Module, *inputs: torch.Tensor) -> int:
    program = torch.export.export(module.eval(), inputs)
    return graph_macs(program.graph.nodes)


def test_conv2d() -> None:
    # output 1 x 16 x 16 x 16, each output element sums 8 channels x 3 x 3
    assert macs_of(nn.Conv2d(8, 16, 3, padding=1), torch.randn(1, 8, 16, 16)) == 16 * 256 * 8 * 9


def test_depthwise_conv2d() -> None:
    assert (
        macs_of(nn.Conv2d(8, 8, 3, padding=1, groups=8), torch.randn(1, 8, 16, 16)) == 8 * 256 * 9
    )


def test_transposed_conv2d() -> None:
    # each of the 8 x 16 x 16 inputs meets 4 output channels x 2 x 2 weights
    macs = macs_of(nn.ConvTranspose2d(8, 4, 2, stride=2), torch.randn(1, 8, 16, 16))
    assert macs == 8 * 256 * 4 * 4


def test_linear_and_matmul() -> None:
    assert macs_of(nn.Linear(64, 32), torch.randn(4, 64)) == 4 * 32 * 64

    class MatMul(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a @ b

    assert macs_of(MatMul(), torch.randn(16, 32), torch.randn(32, 8)) == 16 * 8 * 32


def test_elementwise_and_pooling_are_not_macs() -> None:
    class Rest(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.avg_pool2d(torch.relu(x) + x, 2)

    assert macs_of(Rest(), torch.randn(1, 8, 16, 16)) == 0


def test_op_names() -> None:
    assert op_name(torch.ops.aten.convolution.default) == "aten.convolution.default"
    assert op_name(torch.ops.aten.add.Tensor) == "aten.add.Tensor"
