"""A program's per-instruction times on one device (hil.explain.profile reads them from the
device's ETDump): the record a check carries, the line a summary prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SHOWN = 5  # operators a summary line names


@dataclass(frozen=True)
class OperatorTime:
    """One instruction's median time, in the profile's unit."""

    instruction: int
    operator: str  # "aten::add.out", "XnnpackBackend delegate call"
    layout: bool  # moves data only (a permute, a dim-order copy)
    time: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "operator": self.operator,
            "layout": self.layout,
            "time": self.time,
        }


@dataclass(frozen=True)
class Profile:
    """A program's per-instruction times on one device, slowest first."""

    unit: str  # "ns", "CPU cycles", ...
    runs: int
    total: float  # the median whole inference (Method::execute)
    operators: tuple[OperatorTime, ...]

    @property
    def covered(self) -> float:
        """The share of the whole inference the instructions account for."""
        return sum(o.time for o in self.operators) / self.total if self.total else 0.0

    @property
    def layout_share(self) -> float:
        return sum(o.time for o in self.operators if o.layout) / self.total if self.total else 0.0

    def describe(self, shown: int = SHOWN) -> str:
        """The slowest operators in one line (each with its instruction's index), with what
        the numbers are."""
        parts = [
            f"{o.operator} [{o.instruction}]{' (layout)' if o.layout else ''} "
            f"{_share(o.time, self.total)}"
            for o in self.operators[:shown]
        ]
        more = len(self.operators) - shown
        tail = f", {more} more" if more > 0 else ""
        layout = (
            f"; layout copies {_share(self.layout_share * self.total, self.total)}"
            if any(o.layout for o in self.operators)
            else ""
        )
        return (
            f"{_amount(self.total, self.unit)} an inference (median of {self.runs}, the "
            f"device's ETDump): {', '.join(parts)}{tail}{layout}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "runs": self.runs,
            "total": self.total,
            "covered": self.covered,
            "layout_share": self.layout_share,
            "operators": [o.to_dict() for o in self.operators],
        }


def _share(time: float, total: float) -> str:
    return f"{100 * time / total:.0f} %" if total else "?"


def _amount(value: float, unit: str) -> str:
    """Nanoseconds as ms or us, keeping what follows the unit ("ns (emulated)"); counts whole."""
    if unit.startswith("ns"):
        said = unit.removeprefix("ns")
        shown = (
            f"{value / 1e9:.3g} s"
            if value >= 1e9
            else f"{value / 1e6:.3g} ms"
            if value >= 1e5
            else f"{value / 1e3:.3g} us"
        )
        return shown + said
    return f"{value:,.0f} {unit}"
