"""Latency budgets of the model cases on `host`, relative to eager PyTorch on the same machine.

`host` is whatever machine runs the suites, so its budgets are ratios: the target's best time
over eager PyTorch's best time, both on one thread, timed side by side (hil.verdict.budgets).
Each ratio is about four times the one measured here (2-core AMD EPYC with AVX-512, 2026-12):
loose enough for another CPU's balance of SIMD paths, tight enough that a real regression (a
delegate lost, a slower kernel, XNNPACK no faster than eager) fails. They are keyed
"host/<recipe>": other targets' timings are not this machine's.
"""

from __future__ import annotations

from collections.abc import Mapping


def host_budgets(
    *, portable: float, xnnpack_fp32: float, xnnpack_int8: float
) -> Mapping[str, float]:
    """Budgets for the three host recipes, as ratios of eager PyTorch's time (1.0: as fast)."""
    return {
        "host/portable": portable,
        "host/xnnpack-fp32": xnnpack_fp32,
        "host/xnnpack-int8": xnnpack_int8,
    }
