"""The partition report: fractions, round trip, and the case's fallback expectations."""

from __future__ import annotations

import pytest

import hil
from hil.artifacts.partition import Fallback, PartitionReport, judge_partition, short_name


def report(*fallbacks: Fallback, accelerated: int = 9, delegates: int = 2) -> PartitionReport:
    return PartitionReport(
        backend="Ethos-U",
        delegates=delegates,
        accelerated={"aten.convolution.default": accelerated},
        fallbacks=fallbacks,
        boundary={"quantized_decomposed.quantize_per_tensor.default": 2},
        pte_bytes=1234,
        macs=1000,
        accelerated_macs=900,
    )


POOL3D = Fallback("aten.avg_pool3d.default", 1, "Not included in BaseTOSASupportList")


def test_short_names() -> None:
    assert short_name("aten.avg_pool3d.default") == "avg_pool3d"
    assert short_name("cortex_m.quantized_add.default") == "quantized_add"
    assert short_name("avg_pool3d") == "avg_pool3d"


def test_fraction_counts_compute_operators_not_boundary_ones() -> None:
    assert report(POOL3D).delegated_fraction == pytest.approx(0.9)
    assert report().delegated_fraction == 1.0
    assert report().fully_delegated and not report(POOL3D).fully_delegated


def test_round_trip_through_json_form() -> None:
    original = report(POOL3D)
    again = PartitionReport.from_dict(original.to_dict())
    assert again == original
    assert original.to_dict()["delegated_fraction"] == 0.9


def test_expected_fallback_matches_on_short_names() -> None:
    assert judge_partition(report(POOL3D), {"avg_pool3d"}) == []
    assert judge_partition(report(POOL3D), {"aten.avg_pool3d.default"}) == []
    assert judge_partition(report(POOL3D), None) == []  # nothing asserted


def test_unexpected_fallback_names_operator_and_reason() -> None:
    problems = judge_partition(report(POOL3D), frozenset())
    assert any("unexpected CPU fallback: aten.avg_pool3d.default x1" in p for p in problems)
    assert any("BaseTOSASupportList" in p for p in problems)


def test_missing_expected_fallback_is_reported() -> None:
    problems = judge_partition(report(), {"avg_pool3d"})
    assert any("expected avg_pool3d on the CPU" in p for p in problems)


def test_fully_delegated_needs_something_delegated() -> None:
    problems = judge_partition(report(accelerated=0, delegates=0), frozenset())
    assert any("nothing ran on Ethos-U" in p for p in problems)


def test_case_expectations_by_target() -> None:
    model = lambda: None  # noqa: E731 - never built here
    inputs = lambda: ()  # noqa: E731
    assert hil.Case("c", model, inputs).expected_fallback_for("u55-ref", "ethos-u") is None
    full = hil.Case("c", model, inputs, fully_delegated=True)
    assert full.expected_fallback_for("u55-ref", "ethos-u") == frozenset()
    everywhere = hil.Case("c", model, inputs, expected_fallback=frozenset({"avg_pool3d"}))
    assert everywhere.expected_fallback_for("u85-ref", "ethos-u") == {"avg_pool3d"}
    per_target = hil.Case(
        "c",
        model,
        inputs,
        expected_fallback={"u55-ref": frozenset({"gelu"}), "*": frozenset()},
    )
    assert per_target.expected_fallback_for("u55-ref", "ethos-u") == {"gelu"}
    assert per_target.expected_fallback_for("u85-ref", "ethos-u") == frozenset()


def test_target_qualified_tags() -> None:
    case = hil.Case(
        "c", lambda: None, lambda: (), tags=frozenset({"large", "full@ethos-u", "full@u85-ref/x"})
    )  # type: ignore[arg-type, return-value]
    assert case.tags_for("host", "xnnpack-int8") == {"large"}
    assert case.tags_for("u55-ref", "ethos-u") == {"large", "full"}
    assert case.tags_for("u85-ref", "x") == {"large", "full"}
