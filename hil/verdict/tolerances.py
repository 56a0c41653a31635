"""The limits each check uses, where they come from, and how a case overrides them.

Two questions, two kinds of limit (ARCHITECTURE.md, "The verdict"):

* Is the target right? A float program is held to eager PyTorch tightly (fp32: 1e-5 + 1e-4 x
  the output's peak, SQNR >= 60 dB; fp16 and bf16: 4 ulps at the peak). A quantized program is
  held to the quantized PyTorch model it was compiled from, in that output's own quantization
  steps: the larger of the backend's allowance (how far its kernels may round differently on
  one operator, measured on the operator rows) and the model's rounding sensitivity (how far
  its outputs move when ties break the other way at every layer, measured per model at export:
  hil.reference.rounding).
* Is the quantization good enough? The quantized model against eager, per output: SQNR and
  cosine with defaults near healthy int8, and top-1 for classifiers.

A case overrides a limit with `ToleranceOverride(reason=...)`; the reason is written beside the
numbers in every verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from hil.artifacts.parts import OutputSensitivity
from hil.tolerance_override import ToleranceOverride
from hil.verdict.checks import Limit

FP32_ATOL = 1e-5
FP32_RTOL = 1e-4
FP32_MIN_SQNR_DB = 60.0
FP16_ULPS = 4.0
FP16_MIN_SQNR_DB = 50.0
# bfloat16 keeps 8 bits of precision to float16's 11: the same 4 ulps (each 8x float16's at the
# same peak) and the SQNR bar 3 bits (18 dB) lower. Measured over the 52 bf16 checks of
# ExecuTorch's 16 race op files on host (portable and XNNPACK against eager, 2026-12): at most
# 2 ulps at the peak (avg_pool2d), SQNR 44.5 dB and up (conv2d: its kernel rounds its sum
# otherwise than eager's); their 44 fp16 checks: at most 2 ulps, 61.7 dB and up.
BF16_ULPS = 4.0
BF16_MIN_SQNR_DB = FP16_MIN_SQNR_DB - 18.0

# Quantization quality, quantized PyTorch model against eager. Measured on the suites' default
# cases (2026-12): healthy int8 models reach 27-42 dB; seeded deep models without training sit at
# 21-26 dB and say so in their own override. 25 dB is an rms error of 5.6 % of the rms signal.
INT8_MIN_SQNR_DB = 25.0
INT8_MIN_COSINE = 0.995
# 16-bit activations leave the int8 weights as the main error: measured 48-87 dB on the default
# operator rows through EthosUQuantizer's a16w8 config (u85-ref, 2026-12), so a16w8 is held at
# 40 dB (an rms error of 1 % of the rms signal).
A16W8_MIN_SQNR_DB = 40.0
A16W8_MIN_COSINE = 0.9999
# 4-bit weights are the main error: symmetric int4 (steps of max/7) on uniformly spread weights
# (torch's default init) gives 10 log10(196) = 22.9 dB by the step formula; measured 16.6-51 dB,
# cosine >= 0.993, over ExecuTorch's 224 conv2d and linear a8w4 checks (EthosUQuantizer's a8w4
# config, u55-ref and u85-ref, 2026-12; a 5x5 stride-5 convolution lowest), so a8w4 is held at
# 15 dB (an rms error of 18 % of the rms signal) and cosine 0.98.
A8W4_MIN_SQNR_DB = 15.0
A8W4_MIN_COSINE = 0.98
QUANTIZATION_LIMITS = {  # numerics -> (SQNR dB, cosine); int8 for any other
    "int8": (INT8_MIN_SQNR_DB, INT8_MIN_COSINE),
    "a16w8": (A16W8_MIN_SQNR_DB, A16W8_MIN_COSINE),
    "a8w4": (A8W4_MIN_SQNR_DB, A8W4_MIN_COSINE),
}
MIN_TOP1 = 1.0  # every row's class, where eager's own top two are at least a step apart

# How many times the model's measured rounding sensitivity a target may use. Measured over the
# default suites on host, vboard, pi5-emu, u55-ref, u85-ref and cortex-m55-ref under
# ATEN_CPU_CAPABILITY=avx512 and =default (2026-12): a correct target moved at most 7/6 times it
# (mobilenet_v2 on cortex-m55-ref, 7 steps against a sensitivity of 6); 1.5 keeps a fifth of
# the limit as margin for machines not measured.
SENSITIVITY_SHARE = 1.5


@dataclass(frozen=True)
class StepAllowance:
    """How far a backend's correct kernels may be from the quantized PyTorch model on one
    operator, in output steps, and the measured reason. Rounding that compounds over layers is
    the model's rounding sensitivity, measured per model (`step_limits`)."""

    steps: float
    off_fraction: float  # share of elements that may differ by a step
    reason: str


DEFAULT_ALLOWANCE = StepAllowance(
    1.0, 0.02, "hil's default for a backend without a measured allowance: one rounding flip"
)


@dataclass(frozen=True)
class Tolerance:
    """The limits one check applies, and where they come from (`basis`)."""

    limits: tuple[Limit, ...]
    basis: str

    def get(self, metric: str) -> float | None:
        for limit in self.limits:
            if limit.metric == metric:
                return limit.value
        return None

    @property
    def max_abs(self) -> float | None:
        return self.get("max_abs")


def _with_reason(basis: str, override: ToleranceOverride | None, used: bool) -> str:
    return f"{basis}; case override: {override.reason}" if override and used else basis


def float_target(peak: float, precision: str, override: ToleranceOverride | None) -> Tolerance:
    """A float program's output against eager PyTorch; `precision` is the output's float type
    (fp32, fp16, bf16)."""
    if precision in ("fp16", "bf16"):
        ulps, sqnr = (
            (FP16_ULPS, FP16_MIN_SQNR_DB) if precision == "fp16" else (BF16_ULPS, BF16_MIN_SQNR_DB)
        )
        ulp = _ulp(peak, precision)
        max_abs = ulps * ulp
        basis = f"{precision}: {ulps:g} ulps of {ulp:.3g} at peak |eager| {peak:.4g}"
    else:
        max_abs, sqnr = FP32_ATOL + FP32_RTOL * peak, FP32_MIN_SQNR_DB
        basis = f"fp32: {FP32_ATOL:g} + {FP32_RTOL:g} x peak |eager| {peak:.4g}"
    o = override
    limits = [Limit("max_abs", "<=", o.max_abs if o and o.max_abs is not None else max_abs)]
    if o and o.min_sqnr_db is not None:
        limits.append(Limit("sqnr_db", ">=", o.min_sqnr_db))
    elif precision not in ("fp16", "bf16") and peak <= FP32_ATOL:
        # every eager value is inside fp32's absolute floor: eager's output is rounding noise
        # (ExecuTorch's group norm of one-element groups: eager 8e-6, exactly 0 on every
        # backend), and a ratio of noise to noise judges nothing; max_abs still does
        basis += " (all within the absolute floor: SQNR not a measure here)"
    else:
        limits.append(Limit("sqnr_db", ">=", sqnr))
    if o and o.min_cosine is not None:
        limits.append(Limit("cosine", ">=", o.min_cosine))
    used = bool(o and (o.max_abs, o.min_sqnr_db, o.min_cosine) != (None, None, None))
    return Tolerance(tuple(limits), _with_reason(basis, override, used))


def _ulp(value: float, precision: str) -> float:
    """The spacing of fp16 or bf16 numbers at `value` (bf16: float32's exponent, 8 bits of
    precision to float32's 24, so float32's spacing times 2**16)."""
    import numpy as np

    if precision == "fp16":
        return float(np.spacing(np.float16(value)))
    return float(np.spacing(np.float32(value))) * 2.0**16


def step_limits(
    allowance: StepAllowance, sensitivity: OutputSensitivity | None
) -> tuple[float, float]:
    """(largest difference in steps, share of elements off by a step) a correct target may
    show: the larger of the backend's allowance and SENSITIVITY_SHARE times the model's
    rounding sensitivity. The larger, not the sum: both describe the same rounding. The
    allowance was measured on single operators, whose own output flip is what the sensitivity
    of a one-operator model measures too; the sum let an element 2 steps off pass on a
    one-operator model (bench/mutants.py), and no correct target of the suites needed it
    (largest share of the larger used: at most 0.78 over the default, avx2 and avx512 paths,
    bench/verdicts_across_cpus.py, 2026-12-01)."""
    if sensitivity is None:
        return allowance.steps, allowance.off_fraction
    return (
        max(allowance.steps, SENSITIVITY_SHARE * sensitivity.max_steps),
        max(allowance.off_fraction, SENSITIVITY_SHARE * sensitivity.off_fraction),
    )


def quantized_target(
    allowance: StepAllowance,
    sensitivity: OutputSensitivity | None,
    step_origin: str,
    override: ToleranceOverride | None,
) -> Tolerance:
    """A quantized program's output against the quantized PyTorch model, in output steps."""
    steps, fraction = step_limits(allowance, sensitivity)
    basis = f"backend allowance {allowance.steps:g} step(s) ({allowance.reason})"
    if sensitivity is not None:
        basis = (
            f"the larger of {SENSITIVITY_SHARE:g} x the model's rounding sensitivity "
            f"{sensitivity.max_steps:g} step(s), {sensitivity.off_fraction:.1%} of elements "
            f"(ties re-broken in {sensitivity.runs} seeded runs) and the {basis}"
        )
    else:
        basis += "; no rounding sensitivity measured for this output"
    o = override
    if o and o.quantized_steps is not None:
        steps = o.quantized_steps
    if o and o.quantized_off_fraction is not None:
        fraction = o.quantized_off_fraction
    used = bool(o and (o.quantized_steps, o.quantized_off_fraction) != (None, None))
    limits = (Limit("max_steps", "<=", steps), Limit("off_fraction", "<=", min(fraction, 1.0)))
    return Tolerance(limits, _with_reason(f"steps of {step_origin}: {basis}", override, used))


def quantization(numerics: str, override: ToleranceOverride | None) -> Tolerance:
    """The quantized model's output against eager PyTorch."""
    sqnr, cosine = QUANTIZATION_LIMITS.get(numerics, QUANTIZATION_LIMITS["int8"])
    o = override
    waived = set(o.waived) if o else set()
    limits = [
        Limit("sqnr_db", ">=", o.min_sqnr_db if o and o.min_sqnr_db is not None else sqnr),
        Limit("cosine", ">=", o.min_cosine if o and o.min_cosine is not None else cosine),
    ]
    limits = [limit for limit in limits if limit.metric not in waived]
    if o and o.max_abs is not None:
        limits.append(Limit("max_abs", "<=", o.max_abs))
    used = bool(o and ((o.min_sqnr_db, o.min_cosine, o.max_abs) != (None, None, None) or waived))
    basis = f"{numerics} quantization: SQNR >= {sqnr:g} dB, cosine >= {cosine:g} (hil defaults)"
    return Tolerance(tuple(limits), _with_reason(basis, override, used))


def min_top1(override: ToleranceOverride | None) -> float:
    return override.min_top1 if override and override.min_top1 is not None else MIN_TOP1
