"""pytest outcomes that say what the verdicts say.

    a passing hil_cases test whose check was NOT JUDGED   skipped, with what could not be
                                                          judged (--hil-require: failed)
    a hil_cases test that never called hil_check()        failed: nothing was judged
    xfail and quarantine                                  only for test failures (TEST_FAILURES):
                                                          a lost link or a crash stays an error

Registered by the plugin; reads the records the fixtures put in the item's user_properties.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from hil.errors import TEST_FAILURES
from hil.plugin.state import RECORD_KEY, Variant


def variant_of(item: pytest.Item) -> Variant | None:
    callspec = getattr(item, "callspec", None)
    variant = callspec.params.get("hil_variant") if callspec else None
    return variant if isinstance(variant, Variant) else None


def records_of(item: pytest.Item) -> list[dict[str, Any]]:
    return [r for name, r in item.user_properties if name == RECORD_KEY and isinstance(r, dict)]


def is_test_failure(call: pytest.CallInfo[None]) -> bool:
    """Whether the call failed as a test fails (a verdict, an export, a deploy, an assert),
    not as the lab fails (a lost link, a crash, an unavailable target)."""
    return call.excinfo is not None and call.excinfo.errisinstance(TEST_FAILURES)


def xfail_mark(reason: str) -> pytest.MarkDecorator:
    """A case's expected failure: strict, and only for test failures."""
    return pytest.mark.xfail(reason=reason, strict=True, raises=TEST_FAILURES)


class VerdictOutcomes:
    def __init__(self, require: bool) -> None:
        self.require = require

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if report.when != "call" or not report.passed or variant_of(item) is None:
            return report
        if hasattr(report, "wasxfail"):
            return report  # an xpass: strict xfail already turned it into a failure
        records = records_of(item)
        if not records:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} is a hil_cases test that never called hil_check(): nothing "
                "was judged, so it cannot pass (call hil_check() in the test)"
            )
            return report
        unjudged = [r for r in records if r.get("verdict") == "NOT JUDGED"]
        if unjudged:
            reason = "; ".join(str(r.get("failure") or "NOT JUDGED") for r in unjudged)
            if self.require:
                report.outcome = "failed"
                report.longrepr = f"--hil-require: {reason}"
            else:
                report.outcome = "skipped"
                line = item.location[1] + 1 if item.location[1] is not None else 0
                report.longrepr = (str(item.path), line, reason)
        return report
