"""A case's own limits, with the reason it gives (hil.verdict.tolerances applies them).

Down here, below the verdict, because a case carries one (hil.case) and the verdict reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WAIVABLE = ("sqnr_db", "cosine")  # the quantization question's metrics a case may waive


@dataclass(frozen=True)
class ToleranceOverride:
    """A case's own limits. A reason is required: a loosened tolerance must say why.

    Against eager PyTorch (`max_abs`, `min_sqnr_db`, `min_cosine`, `min_top1`): the target's
    outputs for a float program, the quantized model's (the quantization question) for a
    quantized one. `quantized_steps` and `quantized_off_fraction` replace the limits of a
    quantized program's target check (steps from the quantized PyTorch model). `waived` names
    the quantization question's metrics ("sqnr_db", "cosine") the case does not judge, for the
    reason given; with both waived that question is NOT JUDGED, never passed.
    """

    reason: str
    max_abs: float | None = None
    min_sqnr_db: float | None = None
    min_cosine: float | None = None
    min_top1: float | None = None
    quantized_steps: float | None = None
    quantized_off_fraction: float | None = None
    waived: tuple[str, ...] = ()
    int8_steps: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError("ToleranceOverride needs a reason")
        unknown = set(self.waived) - set(WAIVABLE)
        if unknown:
            raise ValueError(f"ToleranceOverride(waived=...) takes {WAIVABLE}, not {unknown}")
        if self.int8_steps is not None:
            raise ValueError(
                "ToleranceOverride(int8_steps=...) is gone: a quantized target is judged against "
                "the quantized PyTorch model (quantized_steps=...), and the quantization against "
                "eager by SQNR and cosine (min_sqnr_db=..., min_cosine=...)"
            )
