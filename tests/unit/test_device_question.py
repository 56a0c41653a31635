"""Is the device faithful to its program? The rules of hil.verdict.device on plain arrays."""

from __future__ import annotations

import numpy as np
import pytest

from hil.devices import DeviceAllowance
from hil.verdict.checks import Question, Status
from hil.verdict.device import Lowered, device_checks

FLOAT = np.array([1.0, -2.0, 4.0], dtype=np.float32)
ULP_AT_PEAK = float(np.spacing(np.float32(4.0)))


def test_integer_outputs_must_be_equal() -> None:
    reference = np.array([1, 2, 3], dtype=np.int32)
    lowered = Lowered((reference,), allowance=DeviceAllowance(steps=5, float_ulps=5, basis="x"))
    (same,) = device_checks(lowered, (reference.copy(),), (None,))
    (off,) = device_checks(lowered, (np.array([1, 2, 4], dtype=np.int32),), (None,))
    assert same.status is Status.PASS and same.question is Question.DEVICE
    assert off.failed and off.observed["unequal"] == 1.0


def test_quantized_outputs_are_counted_in_their_steps() -> None:
    lowered = Lowered((FLOAT,), allowance=DeviceAllowance(steps=1.0, basis="one step"))
    (within,) = device_checks(lowered, (FLOAT + np.float32(0.5),), (0.5,))
    (beyond,) = device_checks(lowered, (FLOAT + np.float32(1.0),), (0.5,))
    assert within.status is Status.PASS and within.observed["max_steps"] == 1.0
    assert beyond.failed and beyond.observed["max_steps"] == 2.0
    assert "one step" in beyond.basis


def test_float_outputs_are_counted_in_ulps_of_their_peak() -> None:
    lowered = Lowered((FLOAT,), allowance=DeviceAllowance(float_ulps=2.0, basis="measured"))
    nudged = FLOAT.copy()
    nudged[2] += np.float32(2 * ULP_AT_PEAK)
    (within,) = device_checks(lowered, (nudged,), (None,))
    nudged[2] += np.float32(2 * ULP_AT_PEAK)
    (beyond,) = device_checks(lowered, (nudged,), (None,))
    assert within.status is Status.PASS and within.observed["max_ulps"] == pytest.approx(2.0)
    assert beyond.failed and beyond.observed["max_ulps"] == pytest.approx(4.0)


def test_the_same_nan_is_equal_and_a_new_one_is_infinitely_off() -> None:
    reference = np.array([np.nan, 1.0], dtype=np.float32)
    lowered = Lowered((reference,), allowance=DeviceAllowance(float_ulps=1e6, basis="loose"))
    (same,) = device_checks(lowered, (reference.copy(),), (None,))
    (new,) = device_checks(lowered, (np.array([np.nan, np.nan], dtype=np.float32),), (None,))
    assert same.status is Status.PASS
    assert new.failed and new.observed["max_ulps"] == float("inf")


def test_a_stand_in_is_exact_by_construction_and_says_so() -> None:
    lowered = Lowered((FLOAT,), by_construction=True, allowance=DeviceAllowance(float_ulps=99))
    (check,) = device_checks(lowered, (FLOAT + np.float32(ULP_AT_PEAK),), (None,))
    assert check.failed  # by construction means equal: the allowance does not apply
    assert check.basis.startswith("by construction")


def test_another_structure_fails_and_no_reference_is_not_judged() -> None:
    lowered = Lowered((FLOAT,))
    (shape,) = device_checks(lowered, (FLOAT[:2],), (None,))
    (count,) = device_checks(lowered, (FLOAT, FLOAT), (None, None))
    (none,) = device_checks(Lowered(unavailable="the reference model refused it"), (FLOAT,), ())
    assert shape.failed and "its program's reference gives float32[3]" in shape.cause
    assert count.failed and "2 output(s)" in count.cause
    assert none.status is Status.NOT_JUDGED and "refused" in none.cause
