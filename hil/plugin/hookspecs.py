"""Hooks hil adds to pytest, so integrations (allure, reports) plug in without editing fixtures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hil.verdict.result import CheckResult


@pytest.hookspec
def pytest_hil_result(item: pytest.Item, result: CheckResult, record: dict[str, Any]) -> None:
    """Called in the test's call phase for every finished check, before its verdict is raised."""


@pytest.hookspec
def pytest_hil_error(item: pytest.Item, record: dict[str, Any], error: Exception) -> None:
    """Called when a check ended in a hil error (export failure, crash, lost link)."""
