"""Modules the operator rows need that torch.nn does not give in the wanted form.

Norm layers come with non-trivial parameters and statistics, and local response normalization
comes written with a 4-d pool, so the rows exercise what they claim to.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def randomized(module: nn.Module) -> nn.Module:
    """Give a norm layer non-trivial affine parameters and running statistics (seeded by `op`).

    Freshly built norms are the identity (weight 1, bias 0, mean 0, var 1), which would let a
    wrong scale or shift pass unnoticed.
    """
    with torch.no_grad():
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if name.endswith("weight"):
                tensor.uniform_(0.5, 1.5)
            elif name.endswith(("bias", "running_mean")):
                tensor.normal_(0.0, 0.5)
            elif name.endswith("running_var"):
                tensor.uniform_(0.5, 2.0)
    return module


class ChannelLRN(nn.Module):
    """Local response normalization across channels written with avg_pool2d (a 4-d pool).

    Same formula as nn.LocalResponseNorm for odd sizes, x / (k + alpha * mean(x^2))^beta over
    `size` neighbouring channels with zero padding, but without the 5-d avg_pool3d that
    PyTorch's version decomposes into (ExecuTorch 1.5.1 has no kernel for it; see NO_AVG_POOL3D in table.py).
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        if size % 2 != 1:
            raise ValueError("ChannelLRN matches nn.LocalResponseNorm for odd sizes only")
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        squares = (x * x).reshape(n, 1, c, h * w)  # channels become the pooled axis
        mean = F.avg_pool2d(squares, (self.size, 1), stride=1, padding=(self.size // 2, 0))
        return x / (self.k + self.alpha * mean.reshape(n, c, h, w)) ** self.beta


def batch_norm(channels: int) -> nn.Module:
    return randomized(nn.BatchNorm2d(channels))


def layer_norm(features: int) -> nn.Module:
    return randomized(nn.LayerNorm(features))


def batch_norm_1d(features: int) -> nn.Module:
    return randomized(nn.BatchNorm1d(features))


class OffsetEmbedding(nn.Module):
    """An embedding looked up at ids + offset, as OPT's learned positions are (offset 2)."""

    def __init__(self, rows: int, features: int, offset: int) -> None:
        super().__init__()
        self.offset = offset
        self.table = nn.Embedding(rows + offset, features)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        looked_up: torch.Tensor = self.table(ids + self.offset)
        return looked_up
