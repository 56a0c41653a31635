"""Per-output numbers: how far one output array is from its reference, in its own units.

Every output is measured on its own (a model's logits and its auxiliary head have different
ranges and steps), in float64 so the measurement adds no rounding of its own. Where the output
has a quantization step, the error is also counted in steps: the largest, the mean signed error
(a bias: a zero point off by one shows as 1.0 while rounding flips average out), and the share of
elements that differ by a step or more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from hil.arrays import Array

STEP_DIGITS = 4  # steps are counted to 1e-4: finer is the float32 rounding of dequantized values


@dataclass(frozen=True)
class OutputMetrics:
    """One output against its reference."""

    max_abs: float  # inf when the output has NaN or inf where the reference is finite
    mean_abs: float
    sqnr_db: float
    cosine: float
    peak: float  # largest |reference|
    nonfinite: int  # elements that are NaN or infinite where the reference is not
    step: float | None = None  # the output's quantization step, when it has one
    max_steps: float | None = None
    bias_steps: float | None = None  # mean signed error, in steps
    off_fraction: float | None = None  # share of elements off by half a step or more
    # metrics this signal leaves undefined (0/0): a verdict must not rest on their inf or 0
    undefined: tuple[str, ...] = ()

    def get(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


def sqnr_db(reference: Array, error: Array) -> float:
    return _sqnr_db(_sum_of_squares(reference), _sum_of_squares(error))


def cosine(reference: Array, output: Array) -> float:
    return _cosine(_dot(reference, output), _sum_of_squares(reference), _sum_of_squares(output))


def measure(reference: Array, output: Array, step: float | None = None) -> OutputMetrics:
    """`output` against `reference` (same shape); in steps too when `step` is given.

    Positions where both are the same non-finite value (eager's own NaN or inf, reproduced)
    count as equal; a non-finite value anywhere else makes the error infinite. Few passes
    over the arrays: a check measures every output three times, and an output can be megabytes.
    """
    ref = reference.astype(np.float64).ravel()
    out = output.astype(np.float64).ravel()
    finite_ref = np.isfinite(ref)
    if not (finite_ref.all() and np.isfinite(out).all()):
        same_special = ~finite_ref & ((ref == out) | (np.isnan(ref) & np.isnan(out)))
        ref = np.where(same_special, 0.0, ref)
        out = np.where(same_special, 0.0, out)
        nonfinite = int(np.count_nonzero(~np.isfinite(out) | ~np.isfinite(ref)))
        if nonfinite:
            return OutputMetrics(
                math.inf,
                math.inf,
                -math.inf,
                0.0,
                _peak(ref),
                nonfinite,
                step,
                math.inf if step else None,
                math.inf if step else None,
                1.0 if step else None,
            )
    error = out - ref
    size = error.size
    distance = np.abs(error)
    max_abs = float(np.max(distance)) if size else 0.0
    signal = _sum_of_squares(ref)
    output_energy = _sum_of_squares(out)
    metrics = OutputMetrics(
        max_abs=max_abs,
        mean_abs=float(np.mean(distance)) if size else 0.0,
        sqnr_db=_sqnr_db(signal, _sum_of_squares(error)),
        cosine=_cosine(_dot(ref, out), signal, output_energy),
        peak=float(np.max(np.abs(ref))) if size else 0.0,
        nonfinite=0,
        undefined=undefined_metrics(signal, output_energy),
    )
    if not step:
        return metrics
    in_steps = error / step
    return replace(
        metrics,
        step=step,
        # dequantized values carry float32 rounding (up to ~2e-5 of a step at int8's extremes)
        max_steps=round(max_abs / step, STEP_DIGITS),
        bias_steps=float(np.mean(in_steps)) if size else 0.0,
        off_fraction=float(np.mean(np.abs(in_steps) >= 0.5)) if size else 0.0,
    )


def undefined_metrics(reference_energy: float, output_energy: float) -> tuple[str, ...]:
    """SQNR divides by the reference's energy and cosine by both norms: on an all-zero
    reference both are 0/0, on an all-zero output cosine is."""
    if reference_energy == 0.0:
        return ("sqnr_db", "cosine")
    return ("cosine",) if output_energy == 0.0 else ()


def _dot(a: Array, b: Array) -> float:
    return float(np.dot(a.ravel(), b.ravel()))


def _sum_of_squares(a: Array) -> float:
    return _dot(a, a)


def _sqnr_db(signal: float, noise: float) -> float:
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _cosine(dot: float, reference_energy: float, output_energy: float) -> float:
    if reference_energy == 0.0 and output_energy == 0.0:
        return 1.0
    if reference_energy == 0.0 or output_energy == 0.0:
        return 0.0
    return dot / (math.sqrt(reference_energy) * math.sqrt(output_energy))


def _peak(reference: Array) -> float:
    finite = reference[np.isfinite(reference)]
    return float(np.max(np.abs(finite))) if finite.size else 0.0


def range_step(reference: Array) -> float:
    """The step an int8 observer would choose for the reference's range: (max - min) / 255."""
    finite = reference[np.isfinite(reference)].astype(np.float64)
    return float(np.max(finite) - np.min(finite)) / 255.0 if finite.size else 0.0


def top1_agreement(reference: Array, output: Array, margin: float | Array) -> float:
    """Share of rows (all leading dims) whose output's arg-max class is one the reference
    ranks within `margin` (one for all rows, or one per row) of its own top: classes closer
    than that cannot be told apart at the comparison's resolution, so choosing either agrees."""
    if reference.ndim == 0 or reference.shape[-1] == 0:
        return 1.0
    ref = reference.reshape(-1, reference.shape[-1]).astype(np.float64)
    out = output.reshape(-1, output.shape[-1]).astype(np.float64)
    chosen = np.argmax(out, axis=-1)
    best = np.max(ref, axis=-1)
    picked = ref[np.arange(len(ref)), chosen]
    return float(np.mean(picked >= best - margin))
