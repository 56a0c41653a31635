"""Run provenance for every run (`<results>/run.json`), and `--hil-report DIR` at the end.

run.json is written when the run starts (so even a run killed half-way says what it was: the
run takes the results folder then, hil.results.writer), again when collection finished (the
tests the run means to run, `collected`), as tests end (`ended`, at most once a second, so a
run killed half-way lists at most a second's fewer tests than ended, never more), and at the
end with the finish time, the exit status, each hil test's pytest outcome, the identities the
targets reported and what records.jsonl holds. With records.jsonl it is all `hil report`
needs, and enough for it to tell a whole run from one cut short.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from hil.errors import HilError
from hil.plugin.state import STATE, Variant
from hil.plugin.tests_seen import seen_in
from hil.report.certify import Written, write_report
from hil.results import provenance

log = logging.getLogger("hil.plugin.report")

RUN_KEY = pytest.StashKey[dict[str, Any]]()  # the run document, for other integrations
VARIANT_ATTR = "hil_variant"  # set on each test report; survives xdist's serialisation
MAX_REASON = 500
ENDED_EVERY_S = 1.0  # run.json rewritten for `ended` at most this often (it may be large)


class VariantTagger:
    """Puts the (case, target, recipe) of a test on each of its reports, wherever it runs."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        callspec = getattr(item, "callspec", None)
        variant = callspec.params.get("hil_variant") if callspec else None
        if isinstance(variant, Variant):
            setattr(
                report,
                VARIANT_ATTR,
                {"case": variant.case_id, "target": variant.target, "recipe": variant.recipe},
            )
        return report


def _reason(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
        return text.removeprefix("Skipped: ")
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)[:MAX_REASON]
    lines = [line for line in report.longreprtext.splitlines() if line.strip()]
    return lines[-1][:MAX_REASON] if lines else ""


def outcome_update(item: dict[str, Any], report: pytest.TestReport) -> None:
    """Fold one phase's report into the test's outcome, as pytest's own summary counts it."""
    wasxfail = getattr(report, "wasxfail", None)
    if report.when == "setup":
        if report.failed:
            item.update(outcome="error", reason=_reason(report))
        elif report.skipped:
            if wasxfail is not None:
                item.update(outcome="xfailed", reason=str(wasxfail))
            else:
                item.update(outcome="skipped", reason=_reason(report))
    elif report.when == "call":
        if wasxfail is not None:
            item.update(outcome="xfailed" if report.skipped else "xpassed", reason=str(wasxfail))
        elif report.failed and report.longreprtext.startswith("[XPASS(strict)]"):
            reason = report.longreprtext.removeprefix("[XPASS(strict)]").strip()
            item.update(outcome="xpassed", strict=True, reason=reason)
        else:
            item.update(outcome=report.outcome, reason=_reason(report) if report.failed else None)
    elif report.failed and item.get("outcome") in (None, "passed"):
        item.update(outcome="error", reason=_reason(report))
    item["duration_s"] = round(item.get("duration_s", 0.0) + report.duration, 6)


class RunRecorder:
    """Writes run.json; with --hil-report, writes the certification report when the run ends."""

    def __init__(self, config: pytest.Config, report_dir: Path | None, baseline: Path | None):
        self.config = config
        self.report_dir = report_dir
        self.baseline = baseline
        self.run: dict[str, Any] = {}
        self.items: dict[str, dict[str, Any]] = {}
        self.written: Written | None = None
        self.report_error: HilError | None = None
        self.progress_written = 0.0  # time.monotonic() of run.json's last `ended` write

    @property
    def results_dir(self) -> Path:
        return self.config.stash[STATE].session.results_dir

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The run takes the results folder: a folder another run is writing is a usage
        error now, before any work (hil.results.lock), never a mix of two runs' records.
        `--collect-only` runs nothing: it leaves the folder, and the run it holds, alone."""
        if self.config.option.collectonly:
            return
        state = self.config.stash[STATE]
        params = self.config.invocation_params
        run = provenance.new_run(
            argv=params.args,
            positional=self.config.args,
            invocation_dir=params.dir,
            rootdir=self.config.rootpath,
            targets={name: state.registry.get(name) for name in state.options.targets},
        )
        self._note_tests(run)  # hil started late (an xdist controller): what was seen so far
        try:
            state.results.begin(run)
        except HilError as e:
            raise pytest.UsageError(str(e)) from e
        self.run = run
        self.config.stash[RUN_KEY] = self.run

    def _note_tests(self, run: dict[str, Any]) -> None:
        seen = seen_in(self.config)
        run["collected"] = None if seen.collected is None else list(seen.collected)
        run["ended"] = list(seen.ended)

    def _write_progress(self, *, now: bool) -> None:
        """run.json with the tests collected and ended so far: `now` when collection
        finished, else at most every ENDED_EVERY_S (a suite of thousands of tests would
        otherwise rewrite a large file thousands of times)."""
        if not self.run:
            return
        if not now and time.monotonic() - self.progress_written < ENDED_EVERY_S:
            return
        self._note_tests(self.run)
        self.config.stash[STATE].results.write_run(self.run)
        self.progress_written = time.monotonic()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._write_progress(now=True)

    @pytest.hookimpl(trylast=True, optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        if self.run and self.run.get("collected") is None:  # the first worker's says it
            self._write_progress(now=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self._write_progress(now=False)
        variant = getattr(report, VARIANT_ATTR, None)
        if not isinstance(variant, dict):
            return
        item = self.items.setdefault(report.nodeid, {"nodeid": report.nodeid, **variant})
        outcome_update(item, report)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.run:
            return
        state = self.config.stash[STATE]
        self._note_tests(self.run)
        state.results.finish(
            self.run,
            exit_status=exitstatus,
            records=state.records,
            items=[i for i in self.items.values() if "outcome" in i],
        )
        if self.report_dir is None:
            return
        try:
            self.written = write_report(
                [self.results_dir],
                self.report_dir,
                baseline=self.baseline,
                command=["pytest", *self.config.invocation_params.args],
            )
        except HilError as e:
            self.report_error = e
            log.error("the certification report could not be written: %s", e)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    @pytest.hookimpl(trylast=True)  # after the hil summary tables: the last thing to read
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report_error is not None:
            terminalreporter.write_line(
                f"hil: the certification report was NOT written: {self.report_error}", red=True
            )
        elif self.written is not None:
            w = self.written
            terminalreporter.write_line(
                f"hil report: {w.html_path.resolve()} (report.json content hash {w.digest[:16]}...)"
            )
            reasons = w.certification["reasons"]
            if reasons:
                terminalreporter.write_line(
                    f"hil report: NOT CERTIFIED ({len(reasons)} reason(s)): "
                    + "; ".join(reasons[:3]),
                    red=True,
                )


def register(config: pytest.Config) -> None:
    """Tag every test's reports; record the run in the controlling process only (not xdist's
    workers, whose results reach the controller)."""
    config.pluginmanager.register(VariantTagger(), "hil-variant-tagger")
    if hasattr(config, "workerinput"):
        return
    report_dir = config.getoption("hil_report", None)
    baseline = config.getoption("hil_baseline", None)
    if baseline is not None and not Path(baseline).is_file():
        raise pytest.UsageError(f"--hil-baseline {baseline}: no such report.json")
    if baseline is not None and report_dir is None:
        raise pytest.UsageError("--hil-baseline needs --hil-report DIR (the report it goes into)")
    config.pluginmanager.register(RunRecorder(config, report_dir, baseline), "hil-run-recorder")
