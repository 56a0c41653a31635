"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018).

Written from the paper, since torchvision does not import beside this torch. The network is the
paper's Table 2: a 3x3 stride-2 stem, seven stages of inverted-residual bottlenecks
(expansion t, output channels c, repeats n, first stride s), a 1x1 conv to 1280 channels,
global average pooling and a classifier. Each bottleneck expands with a 1x1 conv, filters with a
3x3 depthwise conv (both BatchNorm + ReLU6), and projects back with a *linear* 1x1 conv
(BatchNorm, no activation); it adds its input when stride is 1 and the width is unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

# (expansion t, output channels c, repeats n, first stride s), Table 2 of the paper.
STAGES: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280


def scaled_channels(channels: int, width: float, multiple: int = 8) -> int:
    """Channels times the width multiplier, rounded to a multiple of 8 (never down by >10%)."""
    rounded = max(multiple, int(channels * width + multiple / 2) // multiple * multiple)
    return rounded + multiple if rounded < 0.9 * channels * width else rounded


def conv_bn(
    c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, relu6: bool = True
) -> nn.Sequential:
    """Conv (no bias: the BatchNorm has one) + BatchNorm, then ReLU6 unless the layer is linear."""
    layers: list[nn.Module] = [
        nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
    ]
    if relu6:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    """Expand (1x1) -> depthwise (3x3, stride) -> linear projection (1x1), plus the shortcut."""

    def __init__(self, c_in: int, c_out: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = c_in * expansion
        layers: list[nn.Module] = []
        if expansion != 1:
            layers.append(conv_bn(c_in, hidden, 1))
        layers.append(conv_bn(hidden, hidden, 3, stride, groups=hidden))
        layers.append(conv_bn(hidden, c_out, 1, relu6=False))
        self.body = nn.Sequential(*layers)
        self.shortcut = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.body(x)
        return x + out if self.shortcut else out


class MobileNetV2(nn.Module):
    """MobileNetV2 with width multiplier `width` (the head keeps 1280 channels for width <= 1)."""

    def __init__(self, classes: int = 1000, width: float = 1.0) -> None:
        super().__init__()
        c_in = scaled_channels(STEM_CHANNELS, width)
        blocks: list[nn.Module] = [conv_bn(3, c_in, 3, stride=2)]
        for expansion, channels, repeats, stride in STAGES:
            c_out = scaled_channels(channels, width)
            for index in range(repeats):
                blocks.append(InvertedResidual(c_in, c_out, stride if index == 0 else 1, expansion))
                c_in = c_out
        head = scaled_channels(HEAD_CHANNELS, max(1.0, width))
        blocks.append(conv_bn(c_in, head, 1))
        self.features = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(head, classes)
        self._initialize()

    def _initialize(self) -> None:
        """He-normal convs (fan-out), small normal classifier, as usual for this network."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        logits: torch.Tensor = self.classifier(torch.flatten(x, 1))
        return logits


def scale_residual_branches(model: nn.Module, scale: float) -> nn.Module:
    """Shrink the last BatchNorm of every block with a shortcut (trained networks' small
    residual branches; cf. zero-initialised residual gammas), so the shortcut carries the signal."""
    with torch.no_grad():
        for block in model.modules():
            if isinstance(block, InvertedResidual) and block.shortcut:
                projection = block.body[-1]
                assert isinstance(projection, nn.Sequential)
                norm = projection[1]
                assert isinstance(norm, nn.BatchNorm2d)
                norm.weight.mul_(scale)
                norm.bias.mul_(scale)
    return model
