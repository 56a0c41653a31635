"""HistogramObserver's range search, walked from one change of range to the next.

PT2E's HistogramObserver picks each activation's range by walking its 2,048-bin histogram in
steps of 1e-5 of its mass, up to 100,000 steps an observer, comparing cumulative-sum bins with
a bound at each step. torchao indexes the cumulative sum as a tensor for each comparison: 38 ms
an observer and a tenth of a tiny int8 export's time here (cProfile of ExecuTorch's test_sub
on u85-ref, 2026-12). Read out as Python floats the walk still took 22 ms an observer, 4 % of
a cold run of their operator tests (cProfile, 2026-12-05).

Almost every step changes nothing: the range moves only when a bound crosses a bin. The walk
here goes from one such step to the next with binary searches over the bounds every step
would compute, and asks torchao's quantization error exactly where torchao asks it:

* The bounds are torchao's: the steps accumulate 1e-5 in float64 one at a time, as its loop
  does, and each bound is rounded to float32, as torch rounds a Python float it compares with a
  float32 element (the number does not promote the tensor).
* A bin walk against a non-decreasing cumulative sum is a binary search. A sum that decreases
  somewhere, or is not finite, takes torchao's own path, as does a histogram of another dtype.
* A step that moves neither end only advances the upper bound (torchao's tie-break), so the
  next step that moves an end is the first where that bound falls below the end's bin, or the
  walk's end: both found by binary search too.

The ranges are torchao's to the bit (tests/unit/test_histogram_search.py), and the
pristine-export test compares the programs' bytes. Per observer (2026-12-05): a histogram of a
few distinct values (ones, a ramp, small integers: common in their tests) 62 ms in torchao,
21 ms walked on floats, 0.27 ms here; a broad one (activations of a convolution) 2.0, 0.82
and 0.95 ms.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from hil.arrays import Array
from hil.speedups.patch_once import Part, Patch

STEP = 1e-5  # torchao's granularity, of the histogram's mass
STEPS = 100_100  # more than either bound takes to cross the whole mass (1 / STEP)


def _observer() -> Any:
    from torchao.quantization.pt2e.observer import HistogramObserver

    return HistogramObserver


@functools.cache
def _bounds() -> tuple[Array, Array]:
    """Each step's lower and upper fraction of the mass, summed one step at a time in float64
    exactly as torchao's loop sums them."""
    alphas = itertools.accumulate(itertools.repeat(STEP, STEPS - 1), initial=0.0)
    betas = itertools.accumulate(itertools.repeat(-STEP, STEPS - 1), initial=1.0)
    return np.fromiter(alphas, np.float64, STEPS), np.fromiter(betas, np.float64, STEPS)


def range_search(self: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """torchao's `_non_linear_param_search`, walked from one change of range to the next."""
    if self.histogram.dtype != torch.float32:
        return _shipped(self)
    assert self.histogram.size()[0] == self.bins, "bins mismatch"
    cumulative = torch.cumsum(self.histogram, dim=0).detach().cpu().numpy()
    total = torch.sum(self.histogram).item()
    if not np.isfinite(total) or not np.all(np.diff(cumulative) >= 0):
        return _shipped(self)
    start_bin, end_bin = _walk(self, cumulative, total)
    bin_width = (self.max_val - self.min_val) / self.bins
    return self.min_val + bin_width * start_bin, self.min_val + bin_width * (end_bin + 1)


def _walk(observer: Any, cumulative: Array, total: float) -> tuple[int, int]:
    alphas, betas = _bounds()

    def low(step: int) -> np.float32:
        return np.float32(alphas[step] * total)

    def high(step: int) -> np.float32:
        return np.float32(betas[step] * total)

    a = b = 0  # steps taken by the lower and the upper bound
    start_bin, end_bin = 0, observer.bins - 1
    norm_min: Any = float("inf")
    while alphas[a] < betas[b]:
        left = int(np.searchsorted(cumulative, low(a + 1), "left"))
        left = min(max(start_bin, left), end_bin)
        right = int(np.searchsorted(cumulative, high(b + 1), "right")) - 1
        right = max(start_bin, min(end_bin, right))
        next_start_bin, next_end_bin = start_bin, end_bin
        if (left - start_bin) > (end_bin - right):
            next_start_bin = left
            a += 1
        else:
            next_end_bin = right
            b += 1
        if next_start_bin == start_bin and next_end_bin == end_bin:
            end_sum = cumulative[end_bin] if end_bin > start_bin else None
            b = _next_move(a, b, end_sum, high)
            continue
        norm = observer._compute_quantization_error(next_start_bin, next_end_bin)
        if norm > norm_min:
            break
        norm_min = norm
        start_bin, end_bin = next_start_bin, next_end_bin
    return start_bin, end_bin


def _next_move(a: int, b: int, end_sum: Any, high: Callable[[int], np.float32]) -> int:
    """The upper bound's step count at the next step that moves an end or ends the walk (from
    `b` on): the first at which the upper fraction meets the lower one, or whose next bound
    (`high`, non-increasing) falls below the end bin's sum (`end_sum`; None when the ends meet
    and cannot move). Bounds are computed where the search looks, not for every step."""
    alphas, betas = _bounds()
    meets = bisect.bisect_left(range(STEPS), -alphas[a], lo=b, key=lambda k: -betas[k])
    moves = meets
    if end_sum is not None:
        moves = bisect.bisect_right(range(STEPS), -end_sum, lo=b, key=lambda k: -high(k)) - 1
    return max(b, min(meets, moves))


def _shipped(observer: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """torchao's own search, whether or not this part is in place."""
    own = getattr(range_search, "__wrapped__", None) or _observer()._non_linear_param_search
    return own(observer)  # type: ignore[no-any-return]


def applies() -> bool:
    """Whether the observer searches its range in the method this was written against."""
    return callable(getattr(_observer(), "_non_linear_param_search", None))


def _search_by_changes() -> None:
    observer = _observer()
    range_search.__wrapped__ = observer._non_linear_param_search  # type: ignore[attr-defined]
    observer._non_linear_param_search = range_search


PART = Part(
    "histogram-search",
    lambda: (_observer()._non_linear_param_search,),
    "776a7c18f3299c308441ea7b0c764b4095342152753603e6c62aba1595d5217c",
    Patch(applies, _search_by_changes),
)
