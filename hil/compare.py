"""Output metrics against the eager PyTorch reference, and tolerance verdicts.

Tolerances follow the case's numerics instead of hand-tuned constants: fp32 is held tight,
int8 is allowed a number of quantization steps of the output's own scale (what the quantizer
chose for that tensor), so a model with a wide output range is not failed for rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hil.arrays import Array

FP32_ATOL = 1e-5
FP32_RTOL = 1e-4
FP32_MIN_SQNR_DB = 60.0
FP16_ULPS = 4.0
FP16_MIN_SQNR_DB = 50.0
INT8_STEPS = 8.0
INT8_MIN_SQNR_DB = 15.0


@dataclass(frozen=True)
class Metrics:
    """Worst case over all outputs of one run, against the reference."""

    max_abs: float
    max_rel: float  # max_abs relative to the reference's largest magnitude
    mean_abs: float
    sqnr_db: float
    cosine: float
    top1: float | None  # fraction of rows whose argmax agrees; classifiers only

    def value(self, metric: str) -> float | None:
        value: float | None = getattr(self, metric)
        return value


@dataclass(frozen=True)
class Tolerance:
    """Limits a result must meet; `basis` says where the numbers come from."""

    max_abs: float | None = None
    min_sqnr_db: float | None = None
    min_cosine: float | None = None
    min_top1: float | None = None
    basis: str = ""


@dataclass(frozen=True)
class ToleranceOverride:
    """A case's own limits. A reason is required: a loosened tolerance must say why."""

    reason: str
    max_abs: float | None = None
    int8_steps: float | None = None
    min_sqnr_db: float | None = None
    min_cosine: float | None = None
    min_top1: float | None = None
    # Most output steps a reference-model target may differ from the quantized PyTorch model
    # (targets that judge this expect at most one; integer rounding compounds in deep models).
    quantized_steps: float | None = None

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("ToleranceOverride needs a reason")


@dataclass(frozen=True)
class Breach:
    """One metric outside its limit."""

    metric: str
    observed: float
    limit: float
    relation: str  # "<=" or ">=": what should have held

    def __str__(self) -> str:
        return f"{self.metric} = {self.observed:.6g}, tolerance {self.relation} {self.limit:.6g}"


def _sqnr_db(ref: Array, err: Array) -> float:
    signal = float(np.sum(ref.astype(np.float64) ** 2))
    noise = float(np.sum(err.astype(np.float64) ** 2))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _cosine(ref: Array, out: Array) -> float:
    a = ref.astype(np.float64).ravel()
    b = out.astype(np.float64).ravel()
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def structure_problems(reference: Sequence[Array], outputs: Sequence[Array]) -> list[str]:
    """Describe structural differences (count, shape) that make metrics meaningless."""
    if len(reference) != len(outputs):
        return [f"the target returned {len(outputs)} outputs, eager PyTorch {len(reference)}"]
    problems = []
    for i, (r, o) in enumerate(zip(reference, outputs, strict=True)):
        if r.shape != o.shape:
            problems.append(
                f"output {i} has shape {tuple(o.shape)}, eager PyTorch {tuple(r.shape)}"
            )
        elif r.dtype != o.dtype:
            problems.append(f"output {i} has dtype {o.dtype}, eager PyTorch {r.dtype}")
    return problems


def measure(
    reference: Sequence[Array], outputs: Sequence[Array], *, classifier: bool = False
) -> Metrics:
    """Metrics of `outputs` against `reference`, worst over outputs; shapes must already agree."""
    worst: Metrics | None = None
    for ref, out in zip(reference, outputs, strict=True):
        ref64 = ref.astype(np.float64)
        err = out.astype(np.float64) - ref64
        max_abs = float(np.max(np.abs(err))) if err.size else 0.0
        scale = float(np.max(np.abs(ref64))) if ref64.size else 0.0
        current = Metrics(
            max_abs=max_abs,
            max_rel=max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf),
            mean_abs=float(np.mean(np.abs(err))) if err.size else 0.0,
            sqnr_db=_sqnr_db(ref64, err),
            cosine=_cosine(ref64, out),
            top1=None,
        )
        worst = (
            current
            if worst is None
            else Metrics(
                max_abs=max(worst.max_abs, current.max_abs),
                max_rel=max(worst.max_rel, current.max_rel),
                mean_abs=max(worst.mean_abs, current.mean_abs),
                sqnr_db=min(worst.sqnr_db, current.sqnr_db),
                cosine=min(worst.cosine, current.cosine),
                top1=None,
            )
        )
    if worst is None:
        worst = Metrics(0.0, 0.0, 0.0, math.inf, 1.0, None)
    if classifier and reference:
        worst = replace(worst, top1=top1_agreement(reference[0], outputs[0]))
    return worst


def top1_agreement(reference: Array, output: Array) -> float:
    """Fraction of rows (all leading dims) whose arg-max class agrees."""
    if reference.ndim == 0 or reference.shape[-1] == 0:
        return 1.0
    ref_top = np.argmax(reference.reshape(-1, reference.shape[-1]), axis=-1)
    out_top = np.argmax(output.reshape(-1, output.shape[-1]), axis=-1)
    return float(np.mean(ref_top == out_top))


def fp32_tolerance(reference: Sequence[Array]) -> Tolerance:
    peak = max((float(np.max(np.abs(r))) for r in reference if r.size), default=0.0)
    return Tolerance(
        max_abs=FP32_ATOL + FP32_RTOL * peak,
        min_sqnr_db=FP32_MIN_SQNR_DB,
        basis=f"fp32: {FP32_ATOL:g} + {FP32_RTOL:g} x peak |reference| {peak:.4g}",
    )


def fp16_tolerance(reference: Sequence[Array]) -> Tolerance:
    """A float16 model: eager and the kernels round at different points, so allow a few
    fp16 units in the last place at the output's peak."""
    peak = max((float(np.max(np.abs(r))) for r in reference if r.size), default=0.0)
    ulp = float(np.spacing(np.float16(peak)))
    return Tolerance(
        max_abs=FP16_ULPS * ulp,
        min_sqnr_db=FP16_MIN_SQNR_DB,
        basis=f"fp16: {FP16_ULPS:g} ulps of {ulp:.3g} at peak |reference| {peak:.4g}",
    )


def int8_tolerance(
    reference: Sequence[Array], output_scales: Sequence[float | None], steps: float = INT8_STEPS
) -> Tolerance:
    """`steps` quantization steps of the output's scale; the largest scale over outputs governs.

    Where the recipe could not tell an output's scale (output left in float by the quantizer),
    the step is what an int8 observer would pick for the reference's range: (max - min) / 255.
    """
    scales = []
    inferred = False
    for i, ref in enumerate(reference):
        scale = output_scales[i] if i < len(output_scales) else None
        if scale is None:
            inferred = True
            scale = (float(np.max(ref)) - float(np.min(ref))) / 255.0 if ref.size else 0.0
        scales.append(scale)
    step = max(scales, default=0.0)
    origin = "range-derived" if inferred else "quantizer's"
    return Tolerance(
        max_abs=steps * step,
        min_sqnr_db=INT8_MIN_SQNR_DB,
        basis=f"int8: {steps:g} steps x {origin} output scale {step:.4g}",
    )


def tolerance_for(
    numerics: str,
    reference: Sequence[Array],
    output_scales: Sequence[float | None] = (),
    override: ToleranceOverride | None = None,
) -> Tolerance:
    """The tolerance a result must meet: the numerics' rule, then the case's override on top."""
    if numerics == "fp32" and any(r.dtype == np.float16 for r in reference):
        base = fp16_tolerance(reference)
    elif numerics == "fp32":
        base = fp32_tolerance(reference)
    elif numerics == "a16w8":
        # A 16-bit output step says nothing of the int8 weights' error: judge in int8 steps
        # of the reference's range instead.
        steps = override.int8_steps if override and override.int8_steps else INT8_STEPS
        base = int8_tolerance(reference, [None] * len(reference), steps)
        base = replace(base, basis=f"a16w8 (int8 weights): {base.basis}")
    else:
        steps = override.int8_steps if override and override.int8_steps else INT8_STEPS
        base = int8_tolerance(reference, output_scales, steps)
    if override is None:
        return base
    return Tolerance(
        max_abs=override.max_abs if override.max_abs is not None else base.max_abs,
        min_sqnr_db=override.min_sqnr_db if override.min_sqnr_db is not None else base.min_sqnr_db,
        min_cosine=override.min_cosine if override.min_cosine is not None else base.min_cosine,
        min_top1=override.min_top1 if override.min_top1 is not None else base.min_top1,
        basis=f"{base.basis}; case override: {override.reason}",
    )


@dataclass(frozen=True)
class QuantizedAgreement:
    """How closely a target's outputs match the quantized PyTorch model's, in output steps."""

    max_abs: float
    steps: float | None  # max_abs in units of the output's quantization step; None: no step

    @property
    def statement(self) -> str:
        if self.max_abs == 0.0:
            return "bit-exact"
        if self.steps is None:
            return f"max abs {self.max_abs:.3g} (output step unknown)"
        if self.steps <= 1.0 + STEP_SLACK:
            return "within 1 step"
        return f"{self.steps:.1f} steps"


STEP_SLACK = 1e-3  # dequantized values carry float rounding


def quantized_agreement(
    quantized: Sequence[Array], outputs: Sequence[Array], output_scales: Sequence[float | None]
) -> QuantizedAgreement | None:
    """Worst difference over outputs from the quantized model, in steps of each output's scale."""
    if structure_problems(quantized, outputs):
        return None
    worst_abs, worst_steps, known = 0.0, 0.0, True
    for i, (ref, out) in enumerate(zip(quantized, outputs, strict=True)):
        diff = (
            float(np.max(np.abs(out.astype(np.float64) - ref.astype(np.float64))))
            if ref.size
            else 0.0
        )
        worst_abs = max(worst_abs, diff)
        scale = output_scales[i] if i < len(output_scales) else None
        if scale:
            worst_steps = max(worst_steps, diff / scale)
        elif diff > 0.0:
            known = False
    return QuantizedAgreement(worst_abs, worst_steps if known else None)


def judge(metrics: Metrics, tolerance: Tolerance) -> list[Breach]:
    """Every metric outside its limit (empty when the result is acceptable)."""
    breaches = []
    if tolerance.max_abs is not None and not metrics.max_abs <= tolerance.max_abs:
        breaches.append(Breach("max_abs_error", metrics.max_abs, tolerance.max_abs, "<="))
    if tolerance.min_sqnr_db is not None and not metrics.sqnr_db >= tolerance.min_sqnr_db:
        breaches.append(Breach("sqnr_db", metrics.sqnr_db, tolerance.min_sqnr_db, ">="))
    if tolerance.min_cosine is not None and not metrics.cosine >= tolerance.min_cosine:
        breaches.append(Breach("cosine", metrics.cosine, tolerance.min_cosine, ">="))
    if (
        tolerance.min_top1 is not None
        and metrics.top1 is not None
        and not metrics.top1 >= tolerance.min_top1
    ):
        breaches.append(Breach("top1_agreement", metrics.top1, tolerance.min_top1, ">="))
    return breaches
