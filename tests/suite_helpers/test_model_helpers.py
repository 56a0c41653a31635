"""Model-suite helpers keep the numbers of the models they transform."""

from __future__ import annotations

import torch
from torch import nn
from transformers import OPTConfig, OPTForCausalLM

from suites.models.batch_norm import fold_batch_norms, randomize_affine, settle_batch_norms
from suites.models.mobilenet_v2 import MobileNetV2, scaled_channels
from suites.models.tiny_opt import TINY, CausalLMLogits


class ConvLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn2d = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 6 * 6, 4)
        self.bn1d = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.flatten(torch.relu(self.bn2d(self.conv(x))), 1)
        out: torch.Tensor = self.bn1d(self.fc(features))
        return out


def test_settled_and_folded_batch_norms_keep_the_outputs() -> None:
    torch.manual_seed(0)
    model = ConvLinear()
    randomize_affine(model, torch.Generator().manual_seed(1))
    settle_batch_norms(model, [(torch.randn(16, 3, 8, 8),)])
    assert model.bn2d.running_var is not None
    assert float(model.bn2d.running_var.mean()) != 1.0  # statistics were really set
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
        folded = fold_batch_norms(model)
        assert not any(isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d) for m in folded.modules())
        assert torch.allclose(folded(x), expected, atol=1e-5)


def test_mobilenet_v2_has_the_papers_size() -> None:
    model = MobileNetV2()
    parameters = sum(p.numel() for p in model.parameters())
    assert 3.4e6 < parameters < 3.6e6  # the paper: 3.4 M
    assert model(torch.randn(1, 3, 96, 96)).shape == (1, 1000)
    assert scaled_channels(32, 0.35) == 16 and scaled_channels(24, 1.0) == 24


def test_pre_shifted_positions_match_stock_opt() -> None:
    config = OPTConfig(**TINY, use_cache=False)
    torch.manual_seed(0)
    ours = CausalLMLogits(config)
    ours.train(False)
    torch.manual_seed(0)
    stock = OPTForCausalLM(config)
    stock.train(False)
    ids = torch.randint(0, TINY["vocab_size"], (1, 16))
    with torch.no_grad():
        assert torch.equal(ours(ids), stock(input_ids=ids).logits)
