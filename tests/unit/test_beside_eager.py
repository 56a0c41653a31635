"""A target timed beside eager PyTorch: a window over its budget is timed again, and the best
window of each side is judged (load during one window must not fail a right target)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from hil.session.beside_eager import EXTRA_WINDOWS, run_beside_eager
from hil.targets.base import RunResult
from hil.verdict.budgets import Budget, BudgetKind, LatencyStats, latency_stats


def windows_of(*best_us: float) -> tuple[Callable[[], RunResult], list[RunResult]]:
    """A target whose successive windows have these best times; each run's outputs tell it
    apart. Returns the target and the list of the runs it made."""
    made: list[RunResult] = []
    times: Iterator[float] = iter(best_us)

    def run() -> RunResult:
        best = next(times)
        made.append(
            RunResult(
                outputs=(np.full(2, len(made), np.float32),),
                timings_us=(best * 1.2, best, best * 1.5),
            )
        )
        return made[-1]

    return run, made


WITHIN_2X = Budget(2.0, "min", "case budget_vs_eager 'host/portable'", BudgetKind.VS_EAGER)


def eager_at(*best_us: float) -> Callable[[], LatencyStats | None]:
    times = iter(best_us)
    return lambda: latency_stats([next(times), 999.0])


def test_a_window_within_budget_is_timed_once() -> None:
    run, made = windows_of(150.0)
    timed = run_beside_eager(run, eager_at(100.0, 120.0), WITHIN_2X)
    assert timed.windows == 1 and len(made) == 1
    assert timed.eager is not None and timed.eager.min_us == 100.0  # the better eager window


def test_one_loaded_window_is_timed_again_and_the_best_is_judged() -> None:
    run, made = windows_of(400.0, 180.0)  # load came during the first window only
    timed = run_beside_eager(run, eager_at(100.0, 100.0, 110.0), WITHIN_2X)
    assert timed.windows == 2 and len(made) == 2
    assert min(timed.run.timings_us) == 180.0  # the best window's timings
    assert timed.run.outputs[0][0] == 0  # the outputs judged are the first run's


def test_a_real_regression_is_over_in_every_window() -> None:
    run, made = windows_of(400.0, 390.0, 410.0, 1.0)
    timed = run_beside_eager(run, eager_at(100.0, 100.0, 100.0, 100.0), WITHIN_2X)
    assert timed.windows == 1 + EXTRA_WINDOWS and len(made) == 1 + EXTRA_WINDOWS
    assert timed.eager is not None
    assert min(timed.run.timings_us) / timed.eager.min_us > 2.0  # still over: it fails


def test_a_window_that_cannot_be_judged_is_not_repeated() -> None:
    run, made = windows_of(400.0)
    timed = run_beside_eager(run, lambda: None, WITHIN_2X)  # eager gave no timings
    assert timed.windows == 1 and len(made) == 1 and timed.eager is None
