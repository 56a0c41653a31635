"""Under CI (`CI=true`), a skip is a defect unless CI cannot have what the test needs.

`.ci/run` installs every component the tests use (Debian packages, Chromium, the ML SDK, the
ExecuTorch wheel), so there a test that skips because one is missing, or because provisioning
raised, hides a broken install or a moved module. Such a skip is turned into a failure; the
skips CI is allowed are the things it can never have, listed here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

# Each entry: what CI cannot have, and the words its skips say it with.
CI_CANNOT_HAVE: dict[str, tuple[str, ...]] = {
    "an ExecuTorch SDK for qemu-m55 (built from fetched ExecuTorch sources)": (
        "no ExecuTorch for the Cortex-M55",
        "SDK in",
    ),
    "a Corstone FVP binary (no registry has one)": ("no Corstone FVP", "FVP_Corstone"),
    "a real Raspberry Pi or board on a rack": ("no real Pi", "no board at"),
}


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def allowed(reason: str) -> bool:
    return any(words in reason for all_words in CI_CANNOT_HAVE.values() for words in all_words)


def _reason(longrepr: Any) -> str:
    reason = (
        str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    )
    return reason.removeprefix("Skipped: ")


def _refuse(report: Any) -> None:
    reason = _reason(report.longrepr)
    if allowed(reason):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI: {reason}\n"
        ".ci/run installs this, so in CI the skip hides a broken install or a moved module; "
        "the skips CI may make are listed in tests/ci_skips.py (CI_CANNOT_HAVE)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _refuse(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped:  # a module-level importorskip
        _refuse(report)
