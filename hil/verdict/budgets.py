"""Latency, counter and memory budgets, judged as checks.

A budget belongs to the hardware it describes. An absolute latency budget (`budget_ms`) names a
piece of hardware: a Pi 5, a board, an FVP's simulated clock, Vela's estimate for an NPU. On a
target whose hardware is whatever machine runs hil (`latency.hardware: host`: the host target,
the virtual board), an absolute budget would fail a correct run on a slower or busier machine,
so there the budget is relative: `budget_vs_eager`, the target's best time over eager PyTorch's
best time on the same machine in the same minute (best-of-N times, which load can only lengthen,
so a busy machine does not fail a correct target). The ratio still depends on the CPU's SIMD
path (hil.simd), so a ratio may name the path it was measured on. A budget that applies but
cannot be judged (no timings, a counter the target does not report, ratios measured only on
other SIMD paths) is NOT JUDGED, never met.
"""

from __future__ import annotations

import enum
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hil.case import Case, first_match
from hil.devices import DeviceSpec
from hil.errors import CaseError
from hil.simd import simd_path
from hil.verdict.checks import Check, Limit, Question, judged, not_judged


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
        return {"p90": self.p90_us, "min": self.min_us}.get(name, self.median_us)


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


class BudgetKind(enum.Enum):
    ABSOLUTE = "absolute"  # milliseconds on a named piece of hardware
    VS_EAGER = "vs eager"  # a ratio to eager PyTorch's time on the same machine


@dataclass(frozen=True)
class Budget:
    """A latency limit on one statistic, and where it came from. `limit` None: a budget applies
    but has no limit for this machine (`unjudged` says why)."""

    limit: float | None  # ms (ABSOLUTE) or a ratio (VS_EAGER)
    statistic: str
    source: str
    kind: BudgetKind = BudgetKind.ABSOLUTE
    unjudged: str = ""

    @property
    def limit_ms(self) -> float | None:
        return self.limit if self.kind is BudgetKind.ABSOLUTE else None


def budget_for(case: Case, device: DeviceSpec, recipe: str) -> Budget | None:
    """The latency budget for a case on (device, recipe), or None when none applies.

    On host hardware only `budget_vs_eager` applies; an absolute budget naming such a target
    is a CaseError (it cannot travel). Elsewhere `budget_ms` is searched by `first_match`:
    entries naming the target are taken as they are; "*" and recipe-only entries are for the
    reference machine, get the device's `latency.scale`, and apply only to measured timings.
    Then the device's own default applies.
    """
    latency = device.latency
    if latency.hardware == "host":
        named = first_match(case.budget_ms, device.name, recipe)
        if named and named[0] in (f"{device.name}/{recipe}", device.name):
            raise CaseError(
                f"case {case.name!r} gives {device.name!r} an absolute latency budget "
                f"({named[0]!r}: {named[1]:g} ms), but {device.name}'s hardware is whatever "
                "machine runs hil: that budget would fail correct runs on slower machines",
                fix="give it as budget_vs_eager={'" + named[0] + "': RATIO} (the target's "
                "best time over eager PyTorch's on the same machine)",
            )
        return _vs_eager_budget(case.budget_vs_eager, device.name, recipe, simd_path())
    found = first_match(case.budget_ms, device.name, recipe)
    if found:
        key, limit = found
        scaled = key not in (f"{device.name}/{recipe}", device.name)
        source = f"case budget {key!r}"
        if scaled and latency.scale != 1:
            limit, source = limit * latency.scale, f"{source} x device scale {latency.scale:g}"
        # reference-machine budgets say nothing of emulated or estimated time
        if not scaled or latency.timing == "measured":
            return Budget(limit, latency.statistic, source)
    if latency.budget_ms is not None:
        return Budget(
            latency.budget_ms, latency.statistic, f"device default ({device.source.name})"
        )
    return None


def _vs_eager_budget(
    table: Mapping[str, float], target: str, recipe: str, path: str
) -> Budget | None:
    """The ratio for this CPU's SIMD path ("key@path"), else one that names no path; a table
    whose matching ratios all name other paths gives a budget that is NOT JUDGED here."""
    by_path: dict[str, dict[str, float]] = {}
    for key, ratio in table.items():
        plain, _, on = key.partition("@")
        by_path.setdefault(on, {})[plain] = ratio
    found = first_match(by_path.get(path, {}), target, recipe)
    if found:
        source = f"case budget_vs_eager {found[0] + '@' + path!r}"
        return Budget(found[1], "min", source, BudgetKind.VS_EAGER)
    found = first_match(by_path.get("", {}), target, recipe)
    if found:
        return Budget(found[1], "min", f"case budget_vs_eager {found[0]!r}", BudgetKind.VS_EAGER)
    others = sorted(
        on for on, ratios in by_path.items() if on and first_match(ratios, target, recipe)
    )
    if not others:
        return None
    return Budget(
        None,
        "min",
        "case budget_vs_eager",
        BudgetKind.VS_EAGER,
        unjudged=f"its ratios were measured on the {', '.join(others)} SIMD path(s) and this CPU "
        f"takes the {path} path, where XNNPACK's and eager PyTorch's kernels compare otherwise "
        f"(fix: time it here and add a '{target}/{recipe}@{path}' ratio)",
    )


def latency_check(
    budget: Budget | None,
    stats: LatencyStats | None,
    eager: LatencyStats | None,
    windows: int = 1,
) -> Check | None:
    """The latency budget judged; None when no budget applies. `windows`: how many target
    windows were timed for a budget relative to eager (`stats` is the best one's)."""
    if budget is None:
        return None
    subject = f"latency ({budget.statistic})"
    if budget.limit is None:
        return not_judged(Question.BUDGET, subject, budget.unjudged, basis=budget.source)
    if stats is None:
        return not_judged(
            Question.BUDGET, subject, "the target reported no timings", basis=budget.source
        )
    observed_ms = stats.statistic(budget.statistic) / 1000.0
    if budget.kind is BudgetKind.ABSOLUTE:
        return judged(
            Question.BUDGET,
            subject,
            {"latency_ms": observed_ms, "timing": stats.timing},
            [Limit("latency_ms", "<=", budget.limit)],
            basis=budget.source,
        )
    if eager is None or eager.min_us <= 0:
        return not_judged(
            Question.BUDGET,
            subject,
            "eager PyTorch was not timed beside the target",
            basis=budget.source,
        )
    ratio = stats.min_us / eager.min_us
    return judged(
        Question.BUDGET,
        subject,
        {"vs_eager": ratio, "latency_ms": observed_ms, "eager_ms": eager.min_us / 1000.0},
        [Limit("vs_eager", "<=", budget.limit)],
        reference="eager PyTorch on this machine",
        basis=f"{budget.source}: best-of-{stats.runs} target time over best eager time"
        + (
            f" (best of {windows} target windows: the first was over the limit)"
            if windows > 1
            else ""
        ),
    )


# Units of the counters targets report (for budget messages).
COUNTER_UNITS: Mapping[str, str] = {
    "npu_cycles": "cycles",
    "total_cycles": "cycles",
    "est_time_us": "us",
    "sram_bytes": "bytes",
    "flash_bytes": "bytes",
    "dram_bytes": "bytes",
    "ram_peak_bytes": "bytes",
}


def counter_checks(
    counters: Mapping[str, float], case: Case, device: DeviceSpec, recipe: str, pte_bytes: int
) -> list[Check]:
    """The case's counter budgets (first matching key per counter), then the device file's
    memory limits: the .pte size, the SRAM and flash counters (Vela's, the NPU's) and the
    working memory a runner's pools reached (ram_peak_bytes)."""
    checks: list[Check] = []
    for counter, table in case.counter_budgets.items():
        found = first_match(table, device.name, recipe)
        if found:
            checks.append(
                _limit_check(
                    counter,
                    counters.get(counter),
                    found[1],
                    f"case counter budget {counter}[{found[0]!r}]",
                )
            )
    memory = device.memory
    for counter, limit, key, observed in (
        ("pte_bytes", memory.pte_max_bytes, "pte_max_bytes", float(pte_bytes)),
        ("sram_bytes", memory.sram_max_bytes, "sram_max_bytes", counters.get("sram_bytes")),
        ("flash_bytes", memory.flash_max_bytes, "flash_max_bytes", counters.get("flash_bytes")),
        ("ram_peak_bytes", memory.ram_max_bytes, "ram_max_bytes", counters.get("ram_peak_bytes")),
    ):
        if limit is not None:
            checks.append(
                _limit_check(counter, observed, limit, f"memory.{key} of {device.source.name}")
            )
    return checks


def _limit_check(counter: str, observed: float | None, limit: float, source: str) -> Check:
    unit = COUNTER_UNITS.get(counter, "")
    if observed is None:
        return not_judged(
            Question.BUDGET, counter, "the target does not report this counter", basis=source
        )
    return judged(
        Question.BUDGET,
        counter,
        {counter: observed, "unit": unit},
        [Limit(counter, "<=", float(limit))],
        basis=source,
    )
