"""What the Arm recipes that quantize share: their options, their quantizer's configuration,
the quantized model from the shared store, and how far TOSA's integer arithmetic may be from
the quantized PyTorch model.

ExecuTorch's Arm quantizers (EthosUQuantizer, VgfQuantizer) are one TOSAQuantizer for different
compile specs, configured the same way: a global config (8-bit or 16-bit activations, int8 or
4-bit weights, per channel or per tensor), and the same config on the program's inputs and
outputs when `symmetric_io` asks for it (ExecuTorch's `symmetric_io_quantization`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hil.case import BuiltCase
from hil.errors import UsageError
from hil.export import transform_passes
from hil.reference.quantized import QuantizedModel, QuantizedStore
from hil.verdict.tolerances import StepAllowance

OPTION_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "per_channel": True,
        "a16w8": False,
        "weights": "int8",
        "symmetric_io": False,
        transform_passes.OPTION: (),
    }
)

TOSA_INT8 = StepAllowance(
    1.0,
    0.02,
    "TOSA requantizes with integer multipliers and shifts and rounds exact ties half up, "
    "where the quantized PyTorch model rounds float32 values half to even; measured on the "
    "operator rows (TOSA reference model, the numerics Vela compiles): bit-exact except at "
    "exact ties (average pooling: 1 step in 13 % of elements, which the model's rounding "
    "sensitivity covers)",
)
TOSA_A16W8 = StepAllowance(
    16.0,
    0.5,
    "TOSA's int16 arithmetic (32-bit rescales, interpolated tables for sigmoid, tanh, GELU "
    "and the reciprocal) against PyTorch's float32 in 16-bit steps; measured on the operator "
    "rows: at most 14 steps (div), one step in up to 38 % of elements; 16 steps are still "
    "1/16 of the int8 step of the same range",
)
# 4-bit weights are whole numbers in the TOSA graph: the activations' int8 rounding is the same
STEP_ALLOWANCES: Mapping[str, StepAllowance] = MappingProxyType(
    {"int8": TOSA_INT8, "a8w4": TOSA_INT8, "a16w8": TOSA_A16W8}
)


def validate(recipe: str, options: Mapping[str, Any]) -> None:
    for option in ("per_channel", "a16w8", "symmetric_io"):
        if not isinstance(options[option], bool):
            raise UsageError(f"recipe {recipe}: option {option} must be true or false")
    if options["weights"] not in ("int8", "int4"):
        raise UsageError(f"recipe {recipe}: option weights must be int8 or int4")
    if options["weights"] == "int4" and options["a16w8"]:
        raise UsageError(f"recipe {recipe}: int4 weights go with 8-bit activations only")


def numerics_of(options: Mapping[str, Any]) -> str:
    return "a16w8" if options["a16w8"] else "a8w4" if options["weights"] == "int4" else "int8"


def identity(quantizer: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Quantizer facts beyond the prepared graph (which the store fingerprints itself)."""
    return {
        "quantizer": quantizer,
        "per_channel": options["per_channel"],
        "a16w8": options["a16w8"],
        **({"weights": "int4"} if options["weights"] == "int4" else {}),
        **({"symmetric_io": True} if options["symmetric_io"] else {}),
    }


def configure(quantizer: Any, options: Mapping[str, Any]) -> Any:
    """`quantizer` (a TOSAQuantizer) with the global config the options ask for."""
    from executorch.backends.arm.quantizer import (
        get_symmetric_a16w8_quantization_config,
        get_symmetric_quantization_config,
    )
    from executorch.backends.arm.quantizer.arm_quantizer import (
        get_symmetric_a8w4_quantization_config,
    )

    make_config = (
        get_symmetric_a16w8_quantization_config
        if options["a16w8"]
        else get_symmetric_a8w4_quantization_config
        if options["weights"] == "int4"
        else get_symmetric_quantization_config
    )
    config = make_config(is_per_channel=options["per_channel"])
    quantizer.set_global(config)
    if options["symmetric_io"]:
        quantizer.set_io(config)
    return quantizer


def quantized_model(
    built: BuiltCase,
    identity: Mapping[str, Any],
    make: Callable[[], Any],
    shared_dir: Path | None,
    workdir: Path,
) -> QuantizedModel:
    """The quantized model, from the store shared between recipes (or a private one)."""
    root = shared_dir / "quantized" if shared_dir else workdir / ".quantized"
    model = QuantizedStore(root).get(built, identity, make)
    if shared_dir is None:
        shutil.rmtree(root, ignore_errors=True)
    return model
