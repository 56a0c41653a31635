"""Latency statistics and budget lookup."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.budgets import budget_for, judge_latency, judge_limit, latency_stats
from hil.devices import parse_device

DEVICE = {
    "name": "slow",
    "kind": "host",
    "recipes": ["portable", "xnnpack-fp32"],
    "latency": {"scale": 3.0, "budget_ms": 50},
}


def device(**latency: object):  # type: ignore[no-untyped-def]
    data = {**DEVICE, "latency": {**DEVICE["latency"], **latency}}  # type: ignore[dict-item]
    return parse_device(data, Path("slow.yaml"))


def test_stats_median_p90_and_cv() -> None:
    stats = latency_stats([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0])
    assert stats is not None
    assert stats.median_us == 55 and stats.p90_us == pytest.approx(91) and stats.min_us == 10
    assert stats.cv == pytest.approx(28.7228 / 55, rel=1e-4)
    assert latency_stats([]) is None


def test_budget_lookup_order_and_scaling() -> None:
    spec = device()
    table = {"slow/portable": 7.0, "*/xnnpack-fp32": 2.0, "*": 1.0}
    assert budget_for(table, spec, "portable").limit_ms == 7.0  # type: ignore[union-attr]
    scaled = budget_for(table, spec, "xnnpack-fp32")
    assert scaled is not None and scaled.limit_ms == 6.0 and "x device scale 3" in scaled.source
    assert budget_for({}, spec, "portable").limit_ms == 50  # type: ignore[union-attr]
    assert budget_for({}, device(budget_ms=None), "portable") is None


def test_breach_reports_both_numbers() -> None:
    stats = latency_stats([2000.0] * 5)
    breach = judge_latency(stats, budget_for({"*": 1.0}, device(scale=1.0), "portable"))
    assert len(breach) == 1
    assert str(breach[0]) == "measured latency (median) 2 ms exceeds budget 1 ms (case budget '*')"
    assert not judge_latency(stats, budget_for({"*": 2.5}, device(scale=1.0), "portable"))


def test_p90_statistic_is_used_when_the_device_says_so() -> None:
    stats = latency_stats([1000.0] * 8 + [9000.0] * 2)  # median 1 ms, p90 9 ms
    assert judge_latency(
        stats, budget_for({"*": 2.0}, device(statistic="p90", scale=1.0), "portable")
    )


def test_generic_limit() -> None:
    assert judge_limit("sram", 10, 5, "bytes", "spec")[0].observed == 10
    assert not judge_limit("sram", 10, None, "bytes", "spec")


def test_reference_budgets_do_not_apply_to_emulated_or_estimated_time() -> None:
    for timing in ("emulated", "estimated"):
        spec = device(timing=timing, budget_ms=None)
        assert budget_for({"*": 1.0, "*/portable": 2.0}, spec, "portable") is None
        named = budget_for({"slow": 9.0, "*": 1.0}, spec, "portable")
        assert named is not None and named.limit_ms == 9.0
