"""Per-output metrics: every output on its own, in its own steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hil.verdict.metrics import measure, range_step, top1_agreement


def test_identical_outputs_are_exact() -> None:
    ref = np.arange(12, dtype=np.float32).reshape(3, 4)
    metrics = measure(ref, ref.copy(), step=0.5)
    assert metrics.max_abs == 0 and math.isinf(metrics.sqnr_db) and metrics.cosine == 1
    assert metrics.max_steps == 0 and metrics.bias_steps == 0 and metrics.off_fraction == 0


def test_errors_in_steps_bias_and_share_of_elements_off() -> None:
    ref = np.zeros(8, np.float32)
    out = ref + np.array([0.5, 0, 0, 0, 0, 0, 0, -0.25], np.float32)  # steps of 0.25
    metrics = measure(ref, out, step=0.25)
    assert metrics.max_steps == pytest.approx(2.0)
    assert metrics.bias_steps == pytest.approx(1 / 8)  # (2 - 1) / 8
    assert metrics.off_fraction == pytest.approx(2 / 8)


def test_a_zero_point_off_by_one_shows_as_a_bias_and_every_element_off() -> None:
    ref = np.linspace(-1, 1, 64, dtype=np.float32)
    metrics = measure(ref, ref + 0.01, step=0.01)
    assert metrics.bias_steps == pytest.approx(1.0)
    assert metrics.off_fraction == 1.0 and metrics.max_steps == pytest.approx(1.0, rel=1e-4)


def test_nan_or_inf_in_the_output_is_an_infinite_error() -> None:
    ref = np.ones(3, np.float32)
    metrics = measure(ref, np.array([1, np.nan, 1], np.float32), step=0.1)
    assert metrics.nonfinite == 1 and math.isinf(metrics.max_abs) and math.isinf(metrics.max_steps)  # type: ignore[arg-type]


def test_eagers_own_nan_reproduced_is_equal() -> None:
    ref = np.array([1.0, np.nan, -np.inf], np.float32)
    assert measure(ref, ref.copy()).max_abs == 0.0
    assert math.isinf(measure(ref, np.array([1.0, 2.0, -np.inf], np.float32)).max_abs)


def test_range_step_is_an_int8_observers_choice() -> None:
    assert range_step(np.array([-1.0, 1.55], np.float32)) == pytest.approx(2.55 / 255)


def test_top1_agrees_where_the_reference_cannot_tell_classes_apart() -> None:
    ref = np.array([[0.0, 1.0, 0.99], [1.0, 0.0, 0.0]], np.float32)
    out = np.array([[0.0, 0.9, 1.0], [0.0, 1.0, 0.0]], np.float32)
    assert top1_agreement(ref, out, margin=0.0) == 0.0
    assert top1_agreement(ref, out, margin=0.02) == 0.5  # row 0: classes 1 and 2 are a tie
