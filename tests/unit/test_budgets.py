"""Latency statistics, budget lookup, and budgets judged as checks (NOT JUDGED included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import hil
from hil.devices import parse_device
from hil.errors import CaseError
from hil.verdict.budgets import (
    BudgetKind,
    budget_for,
    counter_checks,
    latency_check,
    latency_stats,
)
from hil.verdict.checks import Status

DEVICE = {
    "name": "slow",
    "kind": "serial",
    "recipes": ["portable", "xnnpack-fp32"],
    "latency": {"scale": 3.0, "budget_ms": 50},
    "connection": {"port": "/dev/ttyACM0"},
}


def device(**latency: object):  # type: ignore[no-untyped-def]
    data = {**DEVICE, "latency": {**DEVICE["latency"], **latency}}  # type: ignore[dict-item]
    return parse_device(data, Path("slow.yaml"))


def case(**options: Any) -> hil.Case:
    return hil.Case("c", lambda: torch.nn.ReLU(), lambda: (torch.ones(1),), **options)


def test_stats_median_p90_min_and_cv() -> None:
    stats = latency_stats([10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0])
    assert stats is not None
    assert stats.median_us == 55 and stats.p90_us == pytest.approx(91) and stats.min_us == 10
    assert stats.statistic("min") == 10 and stats.statistic("p90") == pytest.approx(91)
    assert stats.cv == pytest.approx(28.7228 / 55, rel=1e-4)
    assert latency_stats([]) is None


def test_budget_lookup_order_and_scaling() -> None:
    spec = device()
    table = {"slow/portable": 7.0, "*/xnnpack-fp32": 2.0, "*": 1.0}
    assert budget_for(case(budget_ms=table), spec, "portable").limit == 7.0  # type: ignore[union-attr]
    scaled = budget_for(case(budget_ms=table), spec, "xnnpack-fp32")
    assert scaled is not None and scaled.limit == 6.0 and "x device scale 3" in scaled.source
    assert budget_for(case(), spec, "portable").limit == 50  # type: ignore[union-attr]
    assert budget_for(case(), device(budget_ms=None), "portable") is None


def test_an_over_budget_run_names_both_numbers() -> None:
    stats = latency_stats([2000.0] * 5)
    budget = budget_for(case(budget_ms={"*": 1.0}), device(scale=1.0), "portable")
    check = latency_check(budget, stats, None)
    assert check is not None and check.status is Status.FAIL
    assert check.describe() == "latency (median): latency_ms = 2, limit <= 1"
    ok = latency_check(
        budget_for(case(budget_ms={"*": 2.5}), device(scale=1.0), "portable"), stats, None
    )
    assert ok is not None and ok.status is Status.PASS


def test_p90_statistic_is_used_when_the_device_says_so() -> None:
    stats = latency_stats([1000.0] * 8 + [9000.0] * 2)  # median 1 ms, p90 9 ms
    budget = budget_for(case(budget_ms={"*": 2.0}), device(statistic="p90", scale=1.0), "portable")
    assert latency_check(budget, stats, None).status is Status.FAIL  # type: ignore[union-attr]


def test_reference_budgets_do_not_apply_to_emulated_or_estimated_time() -> None:
    for timing in ("emulated", "estimated"):
        spec = device(timing=timing, budget_ms=None)
        assert budget_for(case(budget_ms={"*": 1.0, "*/portable": 2.0}), spec, "portable") is None
        named = budget_for(case(budget_ms={"slow": 9.0, "*": 1.0}), spec, "portable")
        assert named is not None and named.limit == 9.0


def test_a_budget_without_timings_is_not_judged_never_met() -> None:
    budget = budget_for(case(budget_ms={"slow": 1.0}), device(), "portable")
    check = latency_check(budget, None, None)
    assert check is not None and check.status is Status.NOT_JUDGED
    assert check.cause == "the target reported no timings"
    assert latency_check(None, latency_stats([1.0]), None) is None  # no budget: nothing to judge


def test_absolute_budgets_do_not_travel_to_host_hardware() -> None:
    host = device(hardware="host", budget_ms=None)
    with pytest.raises(CaseError, match="budget_vs_eager"):
        budget_for(case(budget_ms={"slow/portable": 1.0}), host, "portable")
    assert budget_for(case(budget_ms={"*": 1.0}), host, "portable") is None  # reference-machine


def test_a_budget_relative_to_eager_compares_best_times() -> None:
    host = device(hardware="host", budget_ms=None)
    budget = budget_for(case(budget_vs_eager={"slow/portable": 2.0}), host, "portable")
    assert budget is not None and budget.kind is BudgetKind.VS_EAGER and budget.statistic == "min"
    eager = latency_stats([100.0, 400.0, 900.0])  # load lengthened two of eager's runs
    loaded = latency_stats([150.0, 2000.0, 3000.0])  # and most of the target's
    check = latency_check(budget, loaded, eager)
    assert check is not None and check.status is Status.PASS
    assert check.observed["vs_eager"] == pytest.approx(1.5)
    slow = latency_check(budget, latency_stats([250.0] * 3), eager)
    assert slow is not None and slow.status is Status.FAIL
    unjudged = latency_check(budget, loaded, None)
    assert unjudged is not None and unjudged.status is Status.NOT_JUDGED


def npu_device() -> object:
    return parse_device(
        {
            "name": "u55-ref",
            "kind": "ethos_u_ref",
            "npu": "ethos-u55-128",
            "recipes": [{"name": "ethos-u", "options": {"accelerator_config": "ethos-u55-128"}}],
            "memory": {"sram_max_bytes": 1000, "flash_max_bytes": 5000, "pte_max_bytes": 100},
        },
        Path("u55-ref.yaml"),
    )


def test_counter_budgets_take_the_first_matching_key() -> None:
    counters = {"npu_cycles": 30_000.0, "sram_bytes": 900.0, "flash_bytes": 4000.0}
    budgets = {"npu_cycles": {"u55-ref": 20_000.0, "*": 50_000.0}}
    checks = counter_checks(counters, case(counter_budgets=budgets), npu_device(), "ethos-u", 10)  # type: ignore[arg-type]
    failed = [c.subject for c in checks if c.status is Status.FAIL]
    assert failed == ["npu_cycles"]
    assert "u55-ref" in checks[0].basis
    other = counter_checks(
        counters,
        case(counter_budgets={"npu_cycles": {"u85-ref": 1.0}}),
        npu_device(),
        "ethos-u",
        10,
    )  # type: ignore[arg-type]
    assert all(c.status is Status.PASS for c in other)


def test_a_counter_the_target_does_not_report_is_not_judged() -> None:
    checks = counter_checks(
        {},
        case(counter_budgets={"npu_cycles": {"*": 1.0}}),
        npu_device(),  # type: ignore[arg-type]
        "ethos-u",
        10,
    )
    npu = next(c for c in checks if c.subject == "npu_cycles")
    assert npu.status is Status.NOT_JUDGED and "does not report" in npu.cause


def test_device_memory_limits_and_pte_size() -> None:
    counters = {"sram_bytes": 1500.0, "flash_bytes": 6000.0}
    checks = counter_checks(counters, case(), npu_device(), "ethos-u", 200)  # type: ignore[arg-type]
    assert sorted(c.subject for c in checks if c.status is Status.FAIL) == [
        "flash_bytes",
        "pte_bytes",
        "sram_bytes",
    ]
    assert all("u55-ref.yaml" in c.basis for c in checks)


def test_a_ratio_applies_on_the_simd_path_it_was_timed_on(monkeypatch: pytest.MonkeyPatch) -> None:
    host = device(hardware="host", budget_ms=None)
    ratios = {"slow/portable@avx2": 2.0, "slow/portable@avx512-vnni": 0.5}
    eager = latency_stats([100.0])
    monkeypatch.setattr("hil.verdict.budgets.simd_path", lambda: "avx2")
    on_avx2 = budget_for(case(budget_vs_eager=ratios), host, "portable")
    assert on_avx2 is not None and on_avx2.limit == 2.0 and "@avx2" in on_avx2.source
    check = latency_check(on_avx2, latency_stats([150.0]), eager)
    assert check is not None and check.status is Status.PASS
    monkeypatch.setattr("hil.verdict.budgets.simd_path", lambda: "avx512-vnni")
    on_avx512 = budget_for(case(budget_vs_eager=ratios), host, "portable")
    check = latency_check(on_avx512, latency_stats([150.0]), eager)
    assert check is not None and check.status is Status.FAIL


def test_a_ratio_for_other_simd_paths_only_is_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    host = device(hardware="host", budget_ms=None)
    monkeypatch.setattr("hil.verdict.budgets.simd_path", lambda: "dotprod")
    budget = budget_for(case(budget_vs_eager={"slow/portable@avx2": 2.0}), host, "portable")
    assert budget is not None and budget.limit is None
    check = latency_check(budget, latency_stats([1.0]), latency_stats([100.0]))
    assert check is not None and check.status is Status.NOT_JUDGED
    assert (
        "avx2" in check.cause
        and "dotprod" in check.cause
        and "slow/portable@dotprod" in check.cause
    )
    # a ratio that names no path applies on every path; other recipes' ratios do not count
    anywhere = budget_for(
        case(budget_vs_eager={"slow/portable@avx2": 2.0, "slow": 3.0}), host, "portable"
    )
    assert anywhere is not None and anywhere.limit == 3.0
    assert (
        budget_for(case(budget_vs_eager={"slow/xnnpack-fp32@avx2": 1.0}), host, "portable") is None
    )
