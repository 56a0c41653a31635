"""The timing loop shared by every in-process measurement (targets and eager PyTorch)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from hil.devices import TimingPolicy

R = TypeVar("R")


def timed_runs(run: Callable[[], R], policy: TimingPolicy) -> tuple[R, tuple[float, ...]]:
    """Warm up, then time runs until both `min_runs` and `min_time_s` hold.

    Stops early at `max_runs`, or at `max_time_s` once `min_runs` are done, so a slow model
    gets fewer repeats instead of a stalled suite. Returns the last result and the timings in us.
    """
    for _ in range(policy.warmup):
        run()
    timings: list[float] = []
    started = time.perf_counter()
    while True:
        begin = time.perf_counter_ns()
        result = run()
        timings.append((time.perf_counter_ns() - begin) / 1000.0)
        elapsed = time.perf_counter() - started
        enough = len(timings) >= policy.min_runs and elapsed >= policy.min_time_s
        out_of_time = len(timings) >= policy.min_runs and elapsed >= policy.max_time_s
        if enough or out_of_time or len(timings) >= policy.max_runs:
            return result, tuple(timings)
