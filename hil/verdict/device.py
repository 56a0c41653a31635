"""Is the device faithful to its program? Its outputs against the lowered program's reference.

Where the program a device runs has a reference of its own (each TOSA delegate run in Arm's
TOSA reference model, the rest on the CPU; for a runner device's CPU program, the same .pte on
this machine's runtime: hil.session.lowered), the target question is asked as two
(hil.verdict.judge):
*is the lowering faithful?* (that reference against the model, with the target's limits) and
*is the device faithful to its program?* (the device's outputs against that reference, within
the device's allowance, here). A failure then says which of the two to fix: a lowering that
reads a bias otherwise, or an NPU command stream, kernel or driver that computes otherwise.

The allowance is counted in the output's quantization steps where the output is quantized, in
float ULPs of the output's peak where it is float; integer outputs must be equal. A stand-in that
runs the reference itself answers by construction, and its outputs are compared all the same:
outputs changed after the run (a fault injected, a driver's copy gone wrong) are caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hil.arrays import Array
from hil.devices import DeviceAllowance
from hil.verdict.checks import Check, Limit, Question, failed, judged, not_judged

EXACT = DeviceAllowance()


@dataclass(frozen=True)
class Lowered:
    """The lowered program's reference outputs on the check's inputs, or why there are none."""

    outputs: tuple[Array, ...] = ()
    source: str = "its TOSA graphs in Arm's TOSA reference model, the rest on this CPU"
    by_construction: bool = False  # the device is this reference (a stand-in)
    allowance: DeviceAllowance = EXACT
    # why the reference could not be made: the target question is then asked as one
    unavailable: str = ""

    @property
    def reference(self) -> str:
        return f"the lowered program's reference ({self.source})"


def device_checks(
    lowered: Lowered, outputs: Sequence[Array], steps: Sequence[float | None]
) -> list[Check]:
    """One check per output: the device against the lowered program's reference.
    `steps`: each output's quantization step (None: a float output)."""
    if lowered.unavailable:
        return [not_judged(Question.DEVICE, "outputs", lowered.unavailable)]
    if len(outputs) != len(lowered.outputs):
        return [
            failed(
                Question.DEVICE,
                "outputs",
                f"{len(outputs)} output(s), its program's reference gives {len(lowered.outputs)}",
            )
        ]
    return [
        _output_check(i, ref, out, steps[i] if i < len(steps) else None, lowered)
        for i, (ref, out) in enumerate(zip(lowered.outputs, outputs, strict=True))
    ]


def _output_check(
    index: int, ref: Array, out: Array, step: float | None, lowered: Lowered
) -> Check:
    subject = f"output {index}"
    if ref.shape != out.shape or ref.dtype != out.dtype:
        return failed(
            Question.DEVICE,
            subject,
            f"{out.dtype}{list(out.shape)}, its program's reference gives "
            f"{ref.dtype}{list(ref.shape)}",
            reference=lowered.reference,
        )
    allowance = lowered.allowance
    basis = (
        "by construction: this stand-in's outputs are the lowered program's reference"
        if lowered.by_construction
        else str(allowance)
    )
    if not np.issubdtype(ref.dtype, np.floating):
        unequal = float(np.count_nonzero(ref != out))
        observed, limit = {"unequal": unequal}, Limit("unequal", "<=", 0.0)
    elif step:
        observed = {"max_steps": _max_abs(ref, out) / step}
        limit = Limit("max_steps", "<=", 0.0 if lowered.by_construction else allowance.steps)
    else:
        observed = {"max_ulps": _ulps_of_peak(ref, out)}
        limit = Limit("max_ulps", "<=", 0.0 if lowered.by_construction else allowance.float_ulps)
    return judged(
        Question.DEVICE, subject, observed, [limit], reference=lowered.reference, basis=basis
    )


def _max_abs(ref: Array, out: Array) -> float:
    """The largest difference; the same non-finite value on both sides is equal, any other
    non-finite difference is infinite."""
    a, b = ref.astype(np.float64).ravel(), out.astype(np.float64).ravel()
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return 0.0
    difference = np.abs(a[~same] - b[~same])
    return float(np.max(np.where(np.isnan(difference), np.inf, difference)))


def _ulps_of_peak(ref: Array, out: Array) -> float:
    """The largest difference in units of the last place of the reference's peak."""
    difference = _max_abs(ref, out)
    if difference == 0.0:
        return 0.0
    finite = np.abs(ref[np.isfinite(ref)].astype(np.float64))
    peak = float(finite.max()) if finite.size else 0.0
    unit = float(np.spacing(np.array(peak, dtype=ref.dtype))) if peak else 0.0
    return difference / unit if unit else float("inf")
