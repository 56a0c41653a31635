"""The exit codes `hil report` gates a CI job with: one table, documented in docs/reports.md.

A code says the worst thing true of the report, in this order: an altered file, bad input, not
certifiable, test failures, nothing judged. Only 0 says "sign it": certifiable, at least one
result judged, and every judged result passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any


class ReportExit(IntEnum):
    CERTIFIED = 0  # certifiable, something judged, every judged result passed
    FAILURES = 1  # test failures, infrastructure or framework errors among the results
    BAD_INPUT = 2  # a file unreadable or malformed, a bad option, a key that cannot be used
    NOT_CERTIFIABLE = 3  # incomplete or untrustworthy inputs: the reasons are printed
    NOTHING_JUDGED = 4  # certifiable, but no result passed or failed (all skipped, not judged)
    ALTERED = 5  # a signature, content hash or signed file does not match

    def meaning(self) -> str:
        return MEANINGS[self]


MEANINGS: Mapping[ReportExit, str] = {
    ReportExit.CERTIFIED: "certifiable, and every judged result passed",
    ReportExit.FAILURES: "results failed (test failures, infrastructure or framework errors)",
    ReportExit.BAD_INPUT: "bad input: a file unreadable or malformed, a bad option or key",
    ReportExit.NOT_CERTIFIABLE: "not certifiable: an input is incomplete or cannot be trusted",
    ReportExit.NOTHING_JUDGED: "nothing was judged: no result passed or failed",
    ReportExit.ALTERED: "altered: a signature, content hash or signed file does not match",
}


def exit_code(report: Mapping[str, Any]) -> ReportExit:
    """The code a written report gates with."""
    certification = report.get("certification") or {}
    if not certification.get("certifiable", False):
        return ReportExit.NOT_CERTIFIABLE
    summary = report["summary"]
    if summary["failing"]:
        return ReportExit.FAILURES
    if not summary["categories"].get("pass"):
        return ReportExit.NOTHING_JUDGED
    return ReportExit.CERTIFIED
