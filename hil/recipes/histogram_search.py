"""HistogramObserver's range search with Python floats instead of one-element tensors.

PT2E's HistogramObserver picks each activation's range by walking its 2,048-bin histogram in
steps of 1e-5 of its mass, comparing a cumulative-sum bin with a bound at every step. torchao
indexes the cumulative sum as a tensor for each comparison: a one-element tensor made and
compared in C++ thousands of times per observer, 38 ms an observer and a tenth of a tiny
int8 export's time here (cProfile of ExecuTorch's test_sub on u85-ref, 2026-12). The walk is the
same with the sums read out once as Python floats.

The same answer, not a close one: a float32 element compared with a Python float is compared
in float32 by torch (the number does not promote the tensor), so each bound is rounded to
float32 first, as torch rounds it; `tolist()` of float32 values is exact. The quantization
error of a candidate range is still torchao's own method, as are every other step and the
result's arithmetic. A histogram of another dtype takes torchao's own path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hil.recipes.patch_once import Part, Patch

STEP = 1e-5  # torchao's granularity, of the histogram's mass


def _observer() -> Any:
    from torchao.quantization.pt2e.observer import HistogramObserver

    return HistogramObserver


def search_with_floats(self: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """torchao's `_non_linear_param_search`, its bin comparisons made on Python floats."""
    if self.histogram.dtype != torch.float32:
        return _shipped(self)
    assert self.histogram.size()[0] == self.bins, "bins mismatch"
    bin_width = (self.max_val - self.min_val) / self.bins
    total = torch.sum(self.histogram).item()
    cumulative = torch.cumsum(self.histogram, dim=0).tolist()
    alpha, beta = 0.0, 1.0
    start_bin, end_bin = 0, self.bins - 1
    norm_min: Any = float("inf")
    while alpha < beta:
        next_alpha = alpha + STEP
        next_beta = beta - STEP
        low = float(np.float32(next_alpha * total))
        high = float(np.float32(next_beta * total))
        left, right = start_bin, end_bin
        while left < end_bin and cumulative[left] < low:
            left += 1
        while right > start_bin and cumulative[right] > high:
            right -= 1
        next_start_bin, next_end_bin = start_bin, end_bin
        if (left - start_bin) > (end_bin - right):
            next_start_bin = left
            alpha = next_alpha
        else:
            next_end_bin = right
            beta = next_beta
        if next_start_bin == start_bin and next_end_bin == end_bin:
            continue
        norm = self._compute_quantization_error(next_start_bin, next_end_bin)
        if norm > norm_min:
            break
        norm_min = norm
        start_bin, end_bin = next_start_bin, next_end_bin
    return self.min_val + bin_width * start_bin, self.min_val + bin_width * (end_bin + 1)


def _shipped(observer: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """torchao's own search, whether or not this part is in place."""
    own = getattr(search_with_floats, "__wrapped__", None) or _observer()._non_linear_param_search
    return own(observer)  # type: ignore[no-any-return]


def applies() -> bool:
    """Whether the observer searches its range in the method this was written against."""
    return callable(getattr(_observer(), "_non_linear_param_search", None))


def _search_with_floats() -> None:
    observer = _observer()
    search_with_floats.__wrapped__ = observer._non_linear_param_search  # type: ignore[attr-defined]
    observer._non_linear_param_search = search_with_floats


PART = Part(
    "histogram-search",
    lambda: (_observer()._non_linear_param_search,),
    "776a7c18f3299c308441ea7b0c764b4095342152753603e6c62aba1595d5217c",
    Patch(applies, _search_with_floats),
)
