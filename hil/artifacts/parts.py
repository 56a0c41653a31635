"""Typed parts of an artifact: written by recipes, read by targets and verdicts.

A neutral module (it imports neither recipes nor targets), so the facts a recipe records reach
the code that reads them as types, not as string-keyed guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OutputSensitivity:
    """How far one output of the quantized model moves when its rounding ties break the other
    way (hil.recipes.rounding), in its own steps: the largest over the seeded runs."""

    max_steps: float  # largest |perturbed - reference| over elements and runs
    off_fraction: float  # largest share of elements moved by half a step or more, over runs
    runs: int

    def to_dict(self) -> dict[str, float]:
        return {"max_steps": self.max_steps, "off_fraction": self.off_fraction, "runs": self.runs}

    @classmethod
    def from_dict(cls, data: Any) -> OutputSensitivity:
        return cls(float(data["max_steps"]), float(data["off_fraction"]), int(data["runs"]))
