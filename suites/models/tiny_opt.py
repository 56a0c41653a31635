"""OPT-style decoders built from transformers.OPTConfig with seeded random weights (no hub).

`tiny_opt` is the default case: two decoder layers, hidden size 64, a 512-token vocabulary,
small enough to export in seconds yet with every part of the architecture (learned positions,
attention through scaled_dot_product_attention, ReLU feed-forward, final layer norm, tied
output projection). `opt_125m` has OPTConfig()'s defaults, the shape of facebook/opt-125m;
it is tagged "large" (run with --hil-large): about 3 GB of RAM and 1-3 minutes per export.

Only the logits are exported: the wrapper asks for no cache and returns a plain tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

try:
    from transformers import OPTConfig, OPTForCausalLM
except ImportError as e:  # an extra of hil's: the OPT suite is the only user
    raise ImportError(
        f"the OPT suite needs transformers ({e}): pip install 'hil[suites]' (make setup does)"
    ) from e

import hil
from hil.devices import TimingPolicy
from suites.factories import ints, seeded_inputs, seeded_module
from suites.models.budgets import Ratios, host_budgets

SEED = 0
SEQUENCE = 32

TINY: dict[str, Any] = dict(
    vocab_size=512,
    hidden_size=64,
    num_hidden_layers=2,
    ffn_dim=256,
    num_attention_heads=4,
    max_position_embeddings=128,
    word_embed_proj_dim=64,
)


class CausalLMLogits(nn.Module):
    """token ids (batch, sequence) -> next-token logits (batch, sequence, vocabulary)."""

    def __init__(self, config: OPTConfig) -> None:
        super().__init__()
        self.lm = OPTForCausalLM(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        # Positions 0..n-1 given explicitly (OPT adds its offset of 2 to them, int64 arithmetic
        # hil's xnnpack-int8 recipe leaves unquantized); OPT would derive them from a float
        # attention mask (cumsum(mask) * mask - 1) otherwise.
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        output = self.lm(
            input_ids=input_ids, position_ids=positions, use_cache=False, return_dict=True
        )
        logits: torch.Tensor = output.logits
        return logits


def opt_case(name: str, config: dict[str, Any], **options: Any) -> hil.Case:
    """A case for an OPT decoder of the given config on seeded token ids."""
    vocabulary = config.get("vocab_size", OPTConfig().vocab_size)
    return hil.Case(
        name,
        seeded_module(lambda: CausalLMLogits(OPTConfig(**config, use_cache=False)), SEED),
        seeded_inputs(ints(1, SEQUENCE, low=0, high=vocabulary, dtype=torch.int64), seed=SEED + 1),
        calibration=lambda: [
            seeded_inputs(
                ints(1, SEQUENCE, low=0, high=vocabulary, dtype=torch.int64), seed=SEED + 10 + i
            )()
            for i in range(4)
        ],
        classifier=True,  # top-1 agreement of the predicted next token, per position
        **options,
    )


CASES = (
    opt_case(
        "tiny_opt",
        TINY,
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=30.0, xnnpack_fp32=2.0, xnnpack_int8=1.7),
            avx2=Ratios(portable=10.0, xnnpack_fp32=0.84, xnnpack_int8=0.83),
        ),
        # Its Ethos-U export takes about 150 s (TOSA lowering of the attention): NPU targets
        # run it with --hil-full.
        tags=frozenset({"full@ethos-u"}),
    ),
    opt_case(
        "opt_125m",
        {},
        tags=frozenset({"large"}),
        # One inference takes about 57 s on the portable kernels (0.34 s on XNNPACK): one warm-up
        # and one timed run there, more where runs are fast.
        timing=TimingPolicy(warmup=1, min_runs=1, min_time_s=1.0, max_runs=50, max_time_s=3.0),
        tolerance=hil.ToleranceOverride(
            reason="12 random-weight decoder layers, 1.6 M logits: the quantized PyTorch model "
            "itself reaches 23.8 dB SQNR against eager (measured on host, 2026-11)",
            min_sqnr_db=22.0,
        ),
        budget_vs_eager=host_budgets(
            avx512_vnni=Ratios(portable=400.0, xnnpack_fp32=3.0, xnnpack_int8=1.5),
            avx2=None,  # not yet timed on an AVX2 machine (a "large" case: about an hour there)
        ),
    ),
)
