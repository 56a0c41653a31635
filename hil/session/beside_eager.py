"""A target's run timed beside eager PyTorch, for a latency budget relative to eager.

Eager is timed right before and right after the target's window, and the better of the two is
judged against it. A target window whose best time is over the budget is timed again, eager
after it too, up to EXTRA_WINDOWS more times, and the best window of each side is judged. On a
shared machine, load that comes during one window (another process, an export worker, a VM's
slow phase) lengthens every run longer than a scheduler slice: the target's best time over
5 runs of 20-500 ms rises with it, while eager's best over up to 200 short runs finds a quiet
moment. One unlucky window must not fail a right target; a real regression is over the limit
in every window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from hil.session.references import best_of
from hil.targets.base import RunResult
from hil.verdict.budgets import Budget, LatencyStats, latency_check, latency_stats
from hil.verdict.checks import Status

EXTRA_WINDOWS = 2  # target windows timed again when the first is over its budget


@dataclass(frozen=True)
class TimedBeside:
    """The run (its first outputs; the timings of its best window), eager's best window, and
    how many target windows were timed."""

    run: RunResult
    eager: LatencyStats | None
    windows: int


def run_beside_eager(
    run_target: Callable[[], RunResult],
    time_eager: Callable[[], LatencyStats | None],
    budget: Budget,
) -> TimedBeside:
    """Run the target between two eager windows; time it again while the window fails
    `budget` (one relative to eager), at most EXTRA_WINDOWS more times."""
    before = time_eager()
    run = run_target()
    eager = best_of(before, time_eager())
    windows = 1
    while windows <= EXTRA_WINDOWS and _over(run, eager, budget):
        again = run_target()
        eager = best_of(eager, time_eager())
        windows += 1
        if again.timings_us and min(again.timings_us) < min(run.timings_us):
            run = replace(run, timings_us=again.timings_us)  # the outputs judged stay the first
    return TimedBeside(run, eager, windows)


def _over(run: RunResult, eager: LatencyStats | None, budget: Budget) -> bool:
    """Whether the window fails its budget, by the rule the verdict applies (a window that
    cannot be judged is not timed again: it is NOT JUDGED however often it is repeated)."""
    check = latency_check(budget, latency_stats(run.timings_us, run.timing), eager)
    return check is not None and check.status is Status.FAIL
