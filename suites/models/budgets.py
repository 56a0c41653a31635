"""Latency budgets of the model cases, written for this reference machine (target `host`).

Each budget is about four times the median measured here (2-core x86_64, 2026-11, while other
jobs shared the machine), loose enough for noise and tight enough that a real regression (a
delegate lost, a slower kernel) fails. They are keyed "host/<recipe>" rather than "*/<recipe>":
"*" entries would also apply, scaled by `latency.scale` (1.0 everywhere today), to emulated
targets (pi5-emu under qemu-user, qemu-m55) whose timings are not comparable.
"""

from __future__ import annotations

from collections.abc import Mapping


def host_budgets(
    *, portable: float, xnnpack_fp32: float, xnnpack_int8: float
) -> Mapping[str, float]:
    """Median-latency budgets in ms for the three host recipes."""
    return {
        "host/portable": portable,
        "host/xnnpack-fp32": xnnpack_fp32,
        "host/xnnpack-int8": xnnpack_int8,
    }
