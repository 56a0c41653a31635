"""The model suite: each family's cases on every target and recipe, judged against eager."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import hil
from suites.models import digits, mlperf_tiny, mobilenet_v2_cases, tiny_opt

Check = Callable[[], hil.CheckResult]


@pytest.mark.hil_cases(mobilenet_v2_cases.CASES)
def test_mobilenet_v2(hil_check: Check) -> None:
    hil_check()


@pytest.mark.hil_cases(mlperf_tiny.CASES)
def test_mlperf_tiny(hil_check: Check) -> None:
    hil_check()


@pytest.mark.hil_cases(digits.CASES)
def test_digits(hil_check: Check) -> None:
    hil_check()


@pytest.mark.hil_cases(tiny_opt.CASES)
def test_opt(hil_check: Check) -> None:
    hil_check()
