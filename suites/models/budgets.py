"""Latency budgets of the model cases on `host`, relative to eager PyTorch on the same machine.

`host` is whatever machine runs the suites, so its budgets are ratios: the target's best time
over eager PyTorch's best time, both on one thread, timed side by side (hil.verdict.budgets).
A ratio still depends on the CPU's SIMD path (hil.simd): int8 MobileNetV2 on XNNPACK ran at
about 0.075 of eager's time on an AVX-512 EPYC and at 0.37-0.39 on an AVX2 one. So each case
gives its ratios per path, keyed "host/<recipe>@<path>"; on a path with none the budget is
NOT JUDGED, naming the path. The ratios are loose enough for another CPU of the same path and a
busy machine, tight enough that a real regression (a delegate lost, a slower kernel) fails:
- avx512-vnni: about four times the ratio measured on a 2-core AMD EPYC with AVX-512 (2026-12);
- avx2: about 2.5 times the larger of two runs on a 2-core AMD EPYC with AVX2 (2026-12-06),
  where XNNPACK's lead over eager is smaller, so four times would let a lost lead pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Ratios(NamedTuple):
    """The three host recipes' budgets, as ratios of eager PyTorch's time (1.0: as fast)."""

    portable: float
    xnnpack_fp32: float
    xnnpack_int8: float


def host_budgets(*, avx512_vnni: Ratios, avx2: Ratios | None) -> Mapping[str, float]:
    """`budget_vs_eager` entries for the three host recipes on the measured SIMD paths (None:
    not measured on that path, so NOT JUDGED there)."""
    measured = (("avx512-vnni", avx512_vnni), ("avx2", avx2))
    return {
        f"host/{recipe}@{path}": ratio
        for path, ratios in measured
        if ratios is not None
        for recipe, ratio in zip(("portable", "xnnpack-fp32", "xnnpack-int8"), ratios, strict=True)
    }
