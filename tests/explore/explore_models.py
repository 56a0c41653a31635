"""Small models for the `hil explore` tests (importable as MODULE:ATTR with --suites tests/explore).

TWO_DELEGATES splits like MobileNetV2+LRN, in a second of export instead of minutes: the LRN's
avg_pool3d stays on the CPU (and ExecuTorch 1.5.1 has no CPU kernel for it), so the NPU graph
becomes two delegates, whose tensors have different shapes on either side of the pool. That is
what lets a test tell the two delegates' TOSA graphs apart by shape.
"""

from __future__ import annotations

import torch
from torch import nn

import hil


class TwoDelegates(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Conv2d(3, 8, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(3)
        self.tail = nn.Conv2d(8, 4, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.lrn(torch.relu(self.head(x))))


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


TWO_DELEGATES = hil.Case(
    "explore_two_delegates",
    TwoDelegates,
    hil.seeded((1, 3, 16, 16)),
    recipes=frozenset({"ethos-u"}),
)
SMALL = hil.Case("explore_small", Small, hil.seeded((1, 3, 8, 8)))
