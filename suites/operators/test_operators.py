"""The operator sweep: every row of suites/operators/table.py on every target and recipe."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import hil
from suites.operators.table import TABLE


@pytest.mark.hil_cases(TABLE)
def test_operator(hil_check: Callable[[], hil.CheckResult]) -> None:
    hil_check()
