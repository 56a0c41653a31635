"""Latency statistics and budget verdicts.

Budgets are written per case for a reference machine and scaled by the device's `latency.scale`;
a device may also carry a default budget for cases that name none. The budget applies to one
statistic (median by default, p90 for cases that care about the tail).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hil.case import first_match
from hil.devices import DeviceSpec


@dataclass(frozen=True)
class LatencyStats:
    """Statistics over the timed runs in microseconds; `timing`: measured, estimated or emulated."""

    runs: int
    median_us: float
    p90_us: float
    mean_us: float
    min_us: float
    cv: float  # coefficient of variation (stdev / mean)
    timing: str = "measured"

    def statistic(self, name: str) -> float:
        return self.p90_us if name == "p90" else self.median_us


def latency_stats(timings_us: Sequence[float], timing: str = "measured") -> LatencyStats | None:
    """Summarise per-run timings; None when the target reported none."""
    if not timings_us:
        return None
    ordered = sorted(timings_us)
    mean = statistics.fmean(ordered)
    stdev = statistics.pstdev(ordered) if len(ordered) > 1 else 0.0
    return LatencyStats(
        runs=len(ordered),
        median_us=statistics.median(ordered),
        p90_us=_percentile(ordered, 0.9),
        mean_us=mean,
        min_us=ordered[0],
        cv=stdev / mean if mean > 0 else 0.0,
        timing=timing,
    )


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values."""
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Budget:
    """A latency limit in milliseconds on one statistic, and where it came from."""

    limit_ms: float
    statistic: str
    source: str


def budget_for(case_budgets: Mapping[str, float], device: DeviceSpec, recipe: str) -> Budget | None:
    """The budget for a case on (device, recipe).

    The case's table is searched by `first_match` (target-named entries are taken as they are;
    "*" and recipe-only entries are for the reference machine and get the device's scale, and
    apply only to devices whose latency is measured), then the device's own default applies.
    """
    scale, statistic = device.latency.scale, device.latency.statistic
    found = first_match(case_budgets, device.name, recipe)
    if found:
        key, limit = found
        scaled = key not in (f"{device.name}/{recipe}", device.name)
        source = f"case budget {key!r}"
        if scaled and scale != 1:
            limit, source = limit * scale, f"{source} x device scale {scale:g}"
        # reference-machine budgets say nothing of emulated or estimated time
        if not scaled or device.latency.timing == "measured":
            return Budget(limit, statistic, source)
    if device.latency.budget_ms is not None:
        return Budget(device.latency.budget_ms, statistic, f"device default ({device.source.name})")
    return None


@dataclass(frozen=True)
class BudgetBreach:
    what: str
    observed: float
    limit: float
    unit: str
    source: str

    def __str__(self) -> str:
        return (
            f"{self.what} {self.observed:.4g} {self.unit} exceeds budget "
            f"{self.limit:.4g} {self.unit} ({self.source})"
        )


def judge_latency(stats: LatencyStats | None, budget: Budget | None) -> list[BudgetBreach]:
    if stats is None or budget is None:
        return []
    observed_ms = stats.statistic(budget.statistic) / 1000.0
    if observed_ms <= budget.limit_ms:
        return []
    label = f"{stats.timing} latency ({budget.statistic})"
    return [BudgetBreach(label, observed_ms, budget.limit_ms, "ms", budget.source)]


# Units of the counters targets report (for budget messages).
COUNTER_UNITS: Mapping[str, str] = {
    "npu_cycles": "cycles",
    "total_cycles": "cycles",
    "est_time_us": "us",
    "sram_bytes": "bytes",
    "flash_bytes": "bytes",
    "dram_bytes": "bytes",
}


def judge_counters(
    counters: Mapping[str, float],
    case_budgets: Mapping[str, Mapping[str, float]],
    device: DeviceSpec,
    recipe: str,
) -> list[BudgetBreach]:
    """Counter budgets of the case (first matching key per counter), then the device's
    SRAM and flash limits against the sram_bytes / flash_bytes counters it reports."""
    breaches: list[BudgetBreach] = []
    for counter, table in case_budgets.items():
        found = first_match(table, device.name, recipe)
        if found:
            breaches += judge_limit(
                counter,
                counters.get(counter),
                found[1],
                COUNTER_UNITS.get(counter, ""),
                f"case counter budget {counter}[{found[0]!r}]",
            )
    for counter, limit, key in (
        ("sram_bytes", device.memory.sram_max_bytes, "sram_max_bytes"),
        ("flash_bytes", device.memory.flash_max_bytes, "flash_max_bytes"),
    ):
        breaches += judge_limit(
            counter, counters.get(counter), limit, "bytes", f"memory.{key} of {device.source.name}"
        )
    return breaches


def judge_limit(
    what: str, observed: float | None, limit: float | None, unit: str, source: str
) -> list[BudgetBreach]:
    """A generic `observed <= limit` budget (memory sizes, cycle counts)."""
    if observed is None or limit is None or observed <= limit:
        return []
    return [BudgetBreach(what, observed, limit, unit, source)]
