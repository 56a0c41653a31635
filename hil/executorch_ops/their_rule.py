"""What ExecuTorch's own harness would have said of the same outputs, beside hil's verdict.

Their `run_method_and_compare_outputs` passes an output when `torch.allclose(target,
reference, atol + qtol * scale, rtol)`: for a quantized program the reference is the
quantized model and `scale` the output's quantization scale (qtol=1 by default: one step);
for a float program eager PyTorch with qtol=0. The same rule is applied here to the arrays
hil stored for the check (its target's outputs, the quantized model's and eager's), with the
test's own atol, rtol and qtol, so a difference between the two verdicts is about the rule,
never about which run was judged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hil.artifacts.store import Artifact
from hil.executorch_ops.calls import PipelineCall

DEFAULTS = {
    "int": {"atol": 1e-3, "rtol": 1e-3, "qtol": 1},
    "fp": {"atol": 1e-3, "rtol": 1e-3, "qtol": 0},
}


@dataclass(frozen=True)
class TheirVerdict:
    passed: bool | None  # None: their rule could not be applied (no reference arrays)
    detail: str
    # the worst element's |error| and what allclose allowed it (atol + qtol x scale +
    # rtol x |reference|): the figures a difference with hil is listed by
    max_error: float | None = None
    allowed: float | None = None

    @property
    def word(self) -> str:
        return {True: "PASS", False: "FAIL", None: "n/a"}[self.passed]


def their_verdict(
    call: PipelineCall, numerics: str, arrays: Path | None, artifact: Artifact
) -> TheirVerdict:
    rule = {**DEFAULTS[numerics], **call.compare_kwargs()}
    atol, rtol, qtol = float(rule["atol"]), float(rule["rtol"]), float(rule["qtol"])
    if arrays is None or not arrays.is_file():
        return TheirVerdict(None, "no stored outputs")
    with np.load(arrays) as stored:
        outputs = _indexed(stored, "output")
        against = _indexed(stored, "quantized_reference") if numerics == "int" else ()
        reference_name = "the quantized model"
        if not against:
            against, reference_name = _indexed(stored, "reference"), "eager"
    if not outputs or len(outputs) != len(against):
        return TheirVerdict(None, f"outputs and {reference_name} differ in count")
    scales = artifact.output_scales or ()
    passed, worst_share, worst_at = True, -np.inf, ""
    figures: tuple[float | None, float | None] = (None, None)
    for i, (out, ref) in enumerate(zip(outputs, against, strict=True)):
        step = scales[i] if i < len(scales) else None
        limit = atol + qtol * (float(step) if step is not None else 0.0)
        if out.shape != ref.shape:
            return TheirVerdict(False, f"output {i}: shape {out.shape} against {ref.shape}")
        excess_each, error = _excess(out, ref, limit, rtol)
        passed = passed and not bool(np.any(excess_each > 0.0))
        share, element = _worst_element(excess_each, error)
        if share > worst_share or not worst_at:  # the output that used most of its bound
            figures, worst_share, worst_at = (
                element,
                share,
                f"output {i}: max |error| {float(error.max(initial=0)):.4g}"
                f" against atol {limit:.4g} + rtol {rtol:g}*|{reference_name}|",
            )
    return TheirVerdict(
        passed,
        f"allclose vs {reference_name} (atol {atol:g} + qtol {qtol:g}"
        f" x scale, rtol {rtol:g}): {worst_at}",
        *figures,
    )


def _worst_element(
    excess: np.ndarray[Any, Any], error: np.ndarray[Any, Any]
) -> tuple[float, tuple[float | None, float | None]]:
    """The element that used the largest share of its allowance under allclose (an exact one
    uses none of it): that share, and the element's |error| and allowance (error - excess)."""
    if not excess.size:
        return -np.inf, (None, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        allowance = error - excess
        share = np.where(error == 0, 0.0, np.where(allowance > 0, error / allowance, np.inf))
    at = int(np.argmax(np.nan_to_num(share, nan=np.inf)))
    err, allowed = float(error.reshape(-1)[at]), float(allowance.reshape(-1)[at])
    if not (np.isfinite(err) and np.isfinite(allowed)):  # a NaN or infinity: no figure (JSON)
        return float(share.reshape(-1)[at]), (None, None)
    return float(share.reshape(-1)[at]), (err, allowed)


def _excess(
    out: np.ndarray[Any, Any], ref: np.ndarray[Any, Any], atol: float, rtol: float
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each element's error beyond torch.isclose's allowance (negative: within it, by that
    much), and its error. As in torch, equal values are close (infinities of one sign included:
    with no finite allowance, they count as furthest within) and a non-finite value is close to
    nothing else (NaN to nothing)."""
    out64, ref64 = out.astype(np.float64), ref.astype(np.float64)
    same = out64 == ref64
    finite = np.isfinite(out64) & np.isfinite(ref64)
    with np.errstate(invalid="ignore"):
        error = np.where(same, 0.0, np.abs(out64 - ref64))
        beyond = error - (atol + rtol * np.abs(ref64))
    excess = np.where(finite, beyond, np.where(same, -np.inf, np.inf))
    return excess, np.nan_to_num(error, nan=np.inf)


def _indexed(stored: Any, prefix: str) -> tuple[np.ndarray[Any, Any], ...]:
    keys = sorted(
        (k for k in stored.files if k.rstrip("0123456789").rstrip("_") == prefix),
        key=lambda k: int("".join(c for c in k if c.isdigit()) or 0),
    )
    return tuple(np.asarray(stored[k]) for k in keys)
