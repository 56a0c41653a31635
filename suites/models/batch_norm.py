"""Make randomly initialised models look trained where int8 numerics care: their BatchNorms.

A fresh BatchNorm is the identity (mean 0, variance 1), so activations of a random network
drift layer after layer and int8 scales say little. `settle_batch_norms` runs a few seeded
train-mode passes so every BatchNorm holds the statistics of what it actually sees, as after
training. `fold_batch_norms` then folds each BatchNorm into the convolution or linear layer that
feeds it, which is the form a model is deployed in (and spares the int8 recipe torchao's
conv-bn QAT folding pass, about 25 s per export whenever a batch_norm node is left).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import fx, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from hil.case import Inputs

BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d)
FOLDABLE = (nn.Conv1d, nn.Conv2d, nn.Linear)


def randomize_affine(model: nn.Module, generator: torch.Generator, shift: float = 0.5) -> nn.Module:
    """Spread BatchNorm scales over [0.5, 1.5) and shifts around `shift` (std 0.25).

    Weight 1 and bias 0 are too tidy; and a positive mean shift keeps most units after the
    following ReLU in their linear range, as in trained networks. With zero shifts a random
    BatchNorm + ReLU network is chaotic: a perturbation (int8 rounding) grows by about 2.5 dB
    per MobileNetV2 block, and the logits end up at 8 dB SQNR whatever the backend does.
    """
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, BATCH_NORMS) and module.affine:
                module.weight.copy_(0.5 + torch.rand(module.weight.shape, generator=generator))
                module.bias.copy_(
                    shift + 0.25 * torch.randn(module.bias.shape, generator=generator)
                )
    return model


def settle_batch_norms(model: nn.Module, batches: Iterable[Inputs]) -> nn.Module:
    """Set every BatchNorm's running statistics to the average over `batches`, then eval()."""
    norms = [m for m in model.modules() if isinstance(m, BATCH_NORMS)]
    saved = [m.momentum for m in norms]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the passes, not an exponential one
    model.train()
    with torch.no_grad():
        for batch in batches:
            model(*batch)
    for norm, momentum in zip(norms, saved, strict=True):
        norm.momentum = momentum
    return model.eval()


def fold_batch_norms(model: nn.Module) -> nn.Module:
    """Fold each eval-mode BatchNorm into the conv/linear layer feeding it; in place.

    The folded layer replaces the producer and the BatchNorm becomes nn.Identity, so the model
    keeps its own class and forward. A BatchNorm whose input is not a foldable layer used only
    by it is left as it is.
    """
    model.eval()
    graph = fx.symbolic_trace(model)
    modules = dict(graph.named_modules())
    for node in graph.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], BATCH_NORMS):
            continue
        producer = node.args[0]
        if not (
            isinstance(producer, fx.Node)
            and producer.op == "call_module"
            and isinstance(modules[producer.target], FOLDABLE)
            and len(producer.users) == 1
        ):
            continue
        layer, norm = modules[producer.target], modules[node.target]
        folded = (
            fuse_linear_bn_eval(layer, norm)
            if isinstance(layer, nn.Linear)
            else fuse_conv_bn_eval(layer, norm)
        )
        model.set_submodule(str(producer.target), folded)
        model.set_submodule(str(node.target), nn.Identity())
    return model
