"""Tiny models the tests share, each built from a fixed seed without touching the global RNG."""

from __future__ import annotations

import torch
from torch import nn


class TinyCnn(nn.Module):
    """A 3x3 convolution, ReLU and a linear head on 3x8x8 inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def seeded(cls: type[nn.Module]) -> nn.Module:
    """`cls()` built under seed 0, leaving the caller's random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return cls()
