"""Metrics and tolerance rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hil import compare


def test_identical_outputs_are_exact() -> None:
    ref = [np.arange(12, dtype=np.float32).reshape(3, 4)]
    metrics = compare.measure(ref, [ref[0].copy()])
    assert (
        metrics.max_abs == 0 and math.isinf(metrics.sqnr_db) and metrics.cosine == pytest.approx(1)
    )


def test_metrics_take_the_worst_output() -> None:
    ref = [np.ones(4, np.float32), np.ones(4, np.float32)]
    out = [np.ones(4, np.float32), np.array([1, 1, 1, 1.5], np.float32)]
    metrics = compare.measure(ref, out)
    assert metrics.max_abs == pytest.approx(0.5)
    assert metrics.max_rel == pytest.approx(0.5)
    assert metrics.sqnr_db == pytest.approx(10 * math.log10(4 / 0.25))


def test_top1_agreement_counts_rows() -> None:
    ref = np.array([[0, 1], [1, 0], [0, 1]], np.float32)
    out = np.array([[0, 1], [0, 1], [0, 1]], np.float32)
    assert compare.measure([ref], [out], classifier=True).top1 == pytest.approx(2 / 3)


def test_structure_problems_are_reported_before_metrics() -> None:
    problems = compare.structure_problems([np.zeros((2, 3))], [np.zeros((3, 2))])
    assert problems == ["output 0 has shape (3, 2), eager PyTorch (2, 3)"]
    assert "returned 2 outputs" in compare.structure_problems([np.zeros(1)], [np.zeros(1)] * 2)[0]


def test_int8_tolerance_is_steps_of_the_output_scale() -> None:
    tol = compare.tolerance_for("int8", [np.zeros(3, np.float32)], output_scales=[0.02])
    assert tol.max_abs == pytest.approx(compare.INT8_STEPS * 0.02)
    assert "quantizer's output scale 0.02" in tol.basis


def test_int8_scale_falls_back_to_the_reference_range() -> None:
    ref = [np.array([-1.0, 1.55], np.float32)]
    tol = compare.tolerance_for("int8", ref, output_scales=[None])
    assert tol.max_abs == pytest.approx(compare.INT8_STEPS * 2.55 / 255)
    assert "range-derived" in tol.basis


def test_fp32_tolerance_scales_with_the_reference_peak() -> None:
    tol = compare.tolerance_for("fp32", [np.array([100.0, -3.0], np.float32)])
    assert tol.max_abs == pytest.approx(compare.FP32_ATOL + compare.FP32_RTOL * 100)


def test_override_needs_a_reason_and_says_it() -> None:
    with pytest.raises(ValueError):
        compare.ToleranceOverride(reason=" ")
    override = compare.ToleranceOverride(reason="softmax saturates", int8_steps=20, min_sqnr_db=10)
    tol = compare.tolerance_for("int8", [np.zeros(2)], [0.1], override)
    assert tol.max_abs == pytest.approx(2.0) and tol.min_sqnr_db == 10
    assert "case override: softmax saturates" in tol.basis


def test_judge_names_each_breached_metric() -> None:
    metrics = compare.Metrics(0.5, 0.5, 0.1, 12.0, 0.9, 0.5)
    tol = compare.Tolerance(max_abs=0.1, min_sqnr_db=20, min_cosine=0.99, min_top1=1.0)
    names = [b.metric for b in compare.judge(metrics, tol)]
    assert names == ["max_abs_error", "sqnr_db", "cosine", "top1_agreement"]
    assert str(compare.judge(metrics, tol)[0]) == "max_abs_error = 0.5, tolerance <= 0.1"


def test_nan_output_never_passes() -> None:
    metrics = compare.measure([np.ones(3, np.float32)], [np.array([1, np.nan, 1], np.float32)])
    assert compare.judge(metrics, compare.fp32_tolerance([np.ones(3)]))


def test_dtype_differences_are_structure_problems() -> None:
    ref = [np.arange(4, dtype=np.int32)]
    assert compare.structure_problems(ref, [np.arange(4, dtype=np.float32)]) == [
        "output 0 has dtype float32, eager PyTorch int32"
    ]


def test_float16_outputs_get_the_fp16_rule() -> None:
    ref = [np.array([2.14, -1.0], np.float16)]
    tol = compare.tolerance_for("fp32", ref)
    assert tol.max_abs == pytest.approx(compare.FP16_ULPS * 2.0**-9)
    assert tol.basis.startswith("fp16: 4 ulps")
