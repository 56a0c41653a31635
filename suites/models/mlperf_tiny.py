"""MLPerf Tiny models as shipped in the ExecuTorch wheel, with seeded trained-like weights.

The four benchmark networks (image classification ResNet-8, keyword spotting DS-CNN, visual
wake words MobileNetV1-0.25, anomaly detection deep autoencoder) come from
`executorch.examples.models.mlperf_tiny`; no trained weights ship, so weights are seeded and
BatchNorm statistics settled and folded as for MobileNetV2 (see batch_norm.py). Inputs are
uniform in [-1, 1), the range of the upstream examples.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from executorch.examples.models.mlperf_tiny import (
    DSCNNKWS,
    DeepAutoEncoder,
    MobileNetV1025,
    ResNet8,
)
from torch import nn

import hil
from suites.factories import seeded_inputs, seeded_module, uniform
from suites.models.batch_norm import fold_batch_norms, randomize_affine, settle_batch_norms
from suites.models.budgets import Ratios, host_budgets

SEED = 0

UNTRAINED_DEPTH = hil.ToleranceOverride(
    reason="seeded, untrained weights through 14 convolutions without a shortcut: int8 rounding "
    "accumulates with depth onto 2 logits, so the quantized PyTorch model itself reaches only "
    "21.0 dB SQNR against eager with XNNPACK's quantizer and 23.1-23.2 dB with the Arm and "
    "Cortex-M ones (measured 2026-12, AVX-512 host); trained weights would do better",
    min_sqnr_db=19.0,
)


def trained_like(make: Callable[[], nn.Module], shape: tuple[int, ...]) -> Callable[[], nn.Module]:
    """A factory of the model with seeded weights and settled, folded BatchNorms."""

    def build() -> nn.Module:
        model = randomize_affine(make(), torch.Generator().manual_seed(SEED + 1))
        batch = seeded_inputs(uniform(16, *shape[1:], low=-1.0, high=1.0), seed=SEED + 100)
        settle_batch_norms(model, [batch()])
        return fold_batch_norms(model)

    return seeded_module(build, SEED)


def case(
    name: str, make: Callable[[], nn.Module], shape: tuple[int, ...], **options: Any
) -> hil.Case:
    """A case on uniform [-1, 1) inputs of `shape`; `options` are hil.Case fields."""
    return hil.Case(
        name,
        trained_like(make, shape),
        seeded_inputs(uniform(*shape, low=-1.0, high=1.0), seed=SEED + 1),
        **options,
    )


PER_TENSOR_WEIGHTS = hil.ToleranceOverride(
    reason="CortexMQuantizer quantizes the 10 fully connected layers' weights per tensor: the "
    "quantized model reaches 25.2 dB SQNR against eager there (27.5 dB with per-channel "
    "weights), too close to hil's 25 dB default to hold on every machine (measured 2026-12)",
    min_sqnr_db=23.0,
)

CASES = (
    case(
        "resnet8",
        ResNet8,
        (1, 3, 32, 32),
        classifier=True,
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=240.0, xnnpack_fp32=0.8, xnnpack_int8=0.35),
            avx2=Ratios(portable=125.0, xnnpack_fp32=1.7, xnnpack_int8=0.75),
        ),
    ),
    case(
        "ds_cnn_kws",
        DSCNNKWS,
        (1, 1, 49, 10),
        classifier=True,
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=85.0, xnnpack_fp32=0.35, xnnpack_int8=0.3),
            avx2=Ratios(portable=40.0, xnnpack_fp32=0.26, xnnpack_int8=0.41),
        ),
    ),
    case(
        "mobilenet_v1_025",
        MobileNetV1025,
        (1, 3, 96, 96),
        classifier=True,
        tolerance=UNTRAINED_DEPTH,
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=70.0, xnnpack_fp32=0.35, xnnpack_int8=0.3),
            avx2=Ratios(portable=55.0, xnnpack_fp32=0.24, xnnpack_int8=0.32),
        ),
    ),
    case(
        "deep_autoencoder",
        DeepAutoEncoder,
        (1, 640),
        tolerance=PER_TENSOR_WEIGHTS,
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=40.0, xnnpack_fp32=1.0, xnnpack_int8=0.5),
            avx2=Ratios(portable=36.0, xnnpack_fp32=0.56, xnnpack_int8=0.34),
        ),
    ),
)
