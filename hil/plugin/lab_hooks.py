"""pytest glue for lab racks: retries, quarantine, attempts in the records, SIGTERM.

    --hil-retries N        a case that fails on the infrastructure is run again, up to N
                           times, on another board where the target has a pool (Session
                           retries); verdicts on the model are never retried
    --hil-quarantine FILE  known failures reported as quarantined (hil/lab/quarantine.py); an
                           expired entry is a usage error naming it

Every check's attempts (board, verdict, cause, what was done) go into its record when there
was more than one or the board changed. With a labgrid target, SIGTERM ends the run as Ctrl-C
does, so the places are released on the way out (pytest unwinds to the session's close).
"""

from __future__ import annotations

import signal
from collections.abc import Generator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest

from hil.errors import UsageError
from hil.lab.quarantine import Entry, Quarantine, load
from hil.plugin.lab_summary import render
from hil.plugin.outcomes import is_test_failure, variant_of
from hil.plugin.state import STATE, HilState
from hil.settings import lab_settings
from hil.verdict.result import CheckResult


@dataclass(frozen=True)
class LabOptions:
    retries: int
    quarantine: Quarantine | None


LAB_KEY = pytest.StashKey[LabOptions]()


def register(config: pytest.Config) -> None:
    state = config.stash[STATE]
    path = config.getoption("hil_quarantine", None)
    try:
        quarantine = load(path) if path is not None else None
    except UsageError as e:
        raise pytest.UsageError(str(e)) from e
    options = LabOptions(int(config.getoption("hil_retries", 0) or 0), quarantine)
    config.stash[LAB_KEY] = options
    state.session.retries = options.retries
    config.pluginmanager.register(AttemptRecorder(state), "hil-attempts")
    if quarantine is not None:
        config.pluginmanager.register(QuarantinePlugin(quarantine), "hil-quarantine")
    if any(lab_settings(state.registry.get(t).settings) for t in state.options.targets):
        config.pluginmanager.register(SigtermExit(), "hil-sigterm")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(LabSummary(state), "hil-lab-summary")


class AttemptRecorder:
    """Puts the session's attempts of this check into its record."""

    def __init__(self, state: HilState) -> None:
        self.state = state

    def pytest_runtest_setup(self) -> None:
        self.state.session.last_attempts = None  # never another check's attempts

    def _note(self, record: dict[str, Any]) -> None:
        attempts = self.state.session.last_attempts
        if attempts is None or (attempts.case, attempts.target, attempts.recipe) != (
            record.get("case"),
            record.get("target"),
            record.get("recipe"),
        ):
            return
        if attempts.attempts and attempts.attempts[-1].board != attempts.target:
            record["board"] = attempts.attempts[-1].board
        if attempts.retried or any(a.recovery for a in attempts.attempts):
            record["attempts"] = attempts.to_record()
            record["boards"] = list(attempts.boards)

    def pytest_hil_result(
        self, item: pytest.Item, result: CheckResult, record: dict[str, Any]
    ) -> None:
        self._note(record)

    def pytest_hil_error(self, item: pytest.Item, record: dict[str, Any], error: Exception) -> None:
        self._note(record)


class QuarantinePlugin:
    """Failures an entry matches become quarantined (pytest's xfail outcome, with the
    entry's reason and issue); a matched case that passes shows as XPASS with the same."""

    def __init__(self, quarantine: Quarantine) -> None:
        self.quarantine = quarantine

    def entry(self, item: pytest.Item) -> Entry | None:
        variant = variant_of(item)
        names = [item.nodeid, *([variant.id] if variant else [])]
        return self.quarantine.find(names)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        entry = self.entry(item)
        if entry is None or hasattr(report, "wasxfail"):
            return report
        if report.failed and report.when in ("setup", "call") and is_test_failure(call):
            # only a test failure is quarantined: a lost link or a crash stays an error
            report.outcome = "skipped"
            report.wasxfail = f"quarantined: {entry.describe()}"
        elif report.passed and report.when == "call":
            report.wasxfail = f"quarantined, but passed: {entry.describe()}"
        return report

    def _note(self, item: pytest.Item, record: dict[str, Any]) -> None:
        entry = self.entry(item)
        if entry is not None:
            record["quarantine"] = entry.to_record()

    def pytest_hil_result(
        self, item: pytest.Item, result: CheckResult, record: dict[str, Any]
    ) -> None:
        self._note(item, record)

    def pytest_hil_error(self, item: pytest.Item, record: dict[str, Any], error: Exception) -> None:
        self._note(item, record)


class SigtermExit:
    """SIGTERM unwinds the run like Ctrl-C, so labgrid places are released on the way out."""

    def __init__(self) -> None:
        self.previous: Any = None

    def pytest_sessionstart(self) -> None:
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                self.previous = signal.signal(signal.SIGTERM, self._on_term)
        except ValueError:  # not the main thread: leave signals alone
            self.previous = None

    @staticmethod
    def _on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt("SIGTERM: ending the run, releasing labgrid places")

    def pytest_unconfigure(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
            self.previous = None


class LabSummary:
    """Retried cases, boards taken out of service, quarantined cases (controller only)."""

    def __init__(self, state: HilState) -> None:
        self.state = state

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = render(self.state.records)
        if lines:
            terminalreporter.section("hil lab")
            for line in lines:
                terminalreporter.write_line(line)
