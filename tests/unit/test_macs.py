"""MACs counted from exported graphs, checked against the textbook formulas."""

from __future__ import annotations

import torch
from torch import nn

from hil.ethos_u.macs import graph_macs, op_name


def macs_of(module: nn.Module, *inputs: torch.Tensor) -> int | None:
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


class AfterNonzero(nn.Module):
    """A matrix product on rows a mask picks: its shape is known only at run time."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x[x.sum(dim=1) > 0])


class NonzeroBesideLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.linear(x), torch.nonzero(x)


def test_data_dependent_shapes_give_no_count_rather_than_a_raw_error() -> None:
    """ExecuTorch's `nonzero` model test raised torch's GuardOnDataDependentSymNode here."""
    assert macs_of(AfterNonzero(), torch.randn(6, 8)) is None
    # a data-dependent operator that is not MAC work leaves the count exact
    assert macs_of(NonzeroBesideLinear(), torch.randn(6, 8)) == 6 * 4 * 8
