"""hil in use in a pytest run: the session, parametrization over targets x recipes, records,
summary and reports. Loaded by the plugin's entry (hil.plugin) once the run uses hil.

Everything it does is a call into hil.Session; it only translates between pytest and the
library.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from hil.case import Case
from hil.compat.versions import installed, require_supported
from hil.device_search import find_devices
from hil.errors import HilError
from hil.plugin import allure_hooks, lab_hooks, report_hooks
from hil.plugin.options import OPT_IN_TAGS, read_options
from hil.plugin.outcomes import VerdictOutcomes, xfail_mark
from hil.plugin.state import RECORD_KEY, SESSION_KEY, STATE, HilState, Variant
from hil.report import fvp_table, memory_table, problems, summary
from hil.results.writer import ResultsFolder
from hil.session import Session
from hil.speedups.switch import PRISTINE

# A test whose cases apply to none of the run's targets and recipes: deselected at collection.
NOT_APPLICABLE = "no-case-applies"
NOT_APPLICABLE_MARK = pytest.mark.hil_not_applicable
# The run's start, refused (its results folder is busy) when hil started late: raised by
# HilPlugin at the next hook where pytest shows it as a usage error, not a collection error
REFUSED = pytest.StashKey[pytest.UsageError]()


def activate(config: pytest.Config) -> HilState:
    """Start hil for this run: device files, the Session, and the hooks that need them.

    Activated after the run started (the first hil test was met at collection, or, in an
    xdist controller, the first hil record arrived), the new hooks get the session's start
    now, so run.json and records.jsonl are written as in a run that used hil from the start.
    A start refused then (another run holds the results folder) is raised by HilPlugin once
    collection is over: inside a collector pytest would turn it into a collection error with
    a traceback.
    """
    manager = config.pluginmanager
    before = manager.get_plugins()
    options = read_options(config)
    notices: list[str] = []  # an ignored devices/ folder: said at the session's start
    try:
        require_supported()  # outside the tested ExecuTorch: one sentence, before any work
        registry = find_devices(
            config.rootpath,
            options.device_dirs,
            option="--hil-devices",
            say=notices.append,
        ).registry
        for name in options.targets:
            registry.get(name)
    except HilError as e:
        raise pytest.UsageError(str(e)) from e
    session = Session(
        devices=registry,
        cache_dir=options.cache_dir,
        results_dir=options.results_dir,
        progress=lambda message: _say(config, message),
        explain=options.explain,
        profile=options.profile,
    )
    if options.cache_dir is not None:
        _export_env(config, "HIL_CACHE_DIR", str(options.cache_dir.resolve()))
    if options.pristine_export:
        _export_env(config, PRISTINE, "1")
    state = config.stash[STATE] = HilState(
        options, registry, session, ResultsFolder(session.results_dir)
    )
    manager.register(HilPlugin(config), "hil-plugin")
    if notices:
        manager.register(Notices(config, notices), "hil-notices")
    manager.register(VerdictOutcomes(options.require), "hil-outcomes")
    report_hooks.register(config)  # run.json, --hil-report
    allure_hooks.register(config)  # only with --alluredir
    lab_hooks.register(config)  # retries, quarantine, attempts in records, SIGTERM
    started = config.stash.get(SESSION_KEY, None)
    if started is not None:
        try:
            manager.subset_hook_caller("pytest_sessionstart", before)(session=started)
        except pytest.UsageError as e:
            config.stash[REFUSED] = e
    return state


def _export_env(config: pytest.Config, name: str, value: str) -> None:
    """An option as the environment variable the library reads, so model factories (trained
    weights), export workers and xdist workers see it too (HIL_CACHE_DIR for --hil-cache-dir,
    HIL_PRISTINE_EXPORT for --hil-pristine-export); restored at the end."""
    previous = os.environ.get(name)
    os.environ[name] = value

    def restore() -> None:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous

    config.add_cleanup(restore)


def _say(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"hil: {message}")


def _cases(marker: pytest.Mark) -> list[tuple[str, Case]]:
    if len(marker.args) != 1:
        raise pytest.UsageError(
            "hil_cases takes one argument: an iterable of hil.Case or a mapping id -> Case"
        )
    table = marker.args[0]
    items: Iterable[tuple[str, Any]] = (
        table.items() if isinstance(table, Mapping) else ((c.name, c) for c in table)
    )
    cases = []
    for key, case in items:
        if not isinstance(case, Case):
            raise pytest.UsageError(
                f"hil_cases entry {key!r} is {type(case).__name__}, not hil.Case"
            )
        if key != case.name:
            raise pytest.UsageError(
                f"hil_cases key {key!r} differs from the case's name {case.name!r}"
            )
        cases.append((key, case))
    return cases


def parametrize(state: HilState, metafunc: pytest.Metafunc) -> None:
    """One test per case x target x recipe (the entry calls it for tests that use hil)."""
    marker = metafunc.definition.get_closest_marker("hil_cases")
    if marker is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} uses hil fixtures without @pytest.mark.hil_cases"
        )
    only_targets = _marker_names(metafunc, "hil_targets")
    only_recipes = _marker_names(metafunc, "hil_recipes")
    params = []
    for case_id, case in _cases(marker):
        for target in state.options.targets:
            if only_targets is not None and target not in only_targets:
                continue
            for recipe in state.registry.get(target).recipe_names:
                if (only_recipes is not None and recipe not in only_recipes) or not case.applies_to(
                    target, recipe
                ):
                    continue
                variant = Variant(case_id, case, target, recipe)
                tags = case.tags_for(target, recipe)
                marks = [getattr(pytest.mark, tag) for tag in sorted(tags)]
                reason = case.xfail_reason(target, recipe)
                if reason:
                    marks.append(xfail_mark(reason))
                params.append(pytest.param(variant, id=variant.id, marks=marks))
    if not params:  # no case applies to these targets: deselected, not an empty skip
        params.append(pytest.param(None, id=NOT_APPLICABLE, marks=NOT_APPLICABLE_MARK))
    metafunc.parametrize("hil_variant", params, indirect=True)


class Notices:
    """What hil met while starting that the user must read (an ignored devices/ folder),
    said when the session starts: hil may start before the terminal is there, and a header
    line would be hidden under -q."""

    def __init__(self, config: pytest.Config, lines: Iterable[str]) -> None:
        self.config = config
        self.lines = tuple(lines)

    @pytest.hookimpl(trylast=True)  # after pytest's own header
    def pytest_sessionstart(self) -> None:
        for line in self.lines:
            _say(self.config, line)


class HilPlugin:
    """Hooks that need the run's state."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.state: HilState = config.stash[STATE]
        self.seen: set[tuple[str, int]] = set()

    def pytest_report_header(self) -> list[str]:
        targets = ", ".join(self.state.options.targets)
        return [
            f"hil: targets {targets}; cache {self.state.session.cache.root}",
            f"hil: {installed().sentence()}",
        ]

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            names = {m.name for m in item.iter_markers()}
            tags = names & set(OPT_IN_TAGS)
            opted_out = bool(tags - self.state.options.opt_in_tags)
            (drop if opted_out or NOT_APPLICABLE_MARK.name in names else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def _refused(self) -> None:
        """A late start's refusal (activate), as the usage error it is."""
        refused = self.config.stash.get(REFUSED, None)
        if refused is not None:
            del self.config.stash[REFUSED]
            raise refused

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Export ahead what the collected checks need, in their order (not in an xdist
        process: xdist already spreads the run over the cores)."""
        self._refused()
        if _under_xdist(self.config) or self.config.option.collectonly:
            return
        checks = []
        for item in session.items:
            callspec = getattr(item, "callspec", None)
            variant = callspec.params.get("hil_variant") if callspec else None
            if isinstance(variant, Variant):
                checks.append((variant.case, variant.target, variant.recipe))
        try:
            self.state.session.export_ahead(checks, self.state.options.export_workers)
        except HilError as e:  # a device file or recipe the checks themselves will report
            _say(self.config, f"not exporting ahead: {e}")

    def pytest_sessionstart(self) -> None:
        """An xdist worker writes arrays only: the controller gets every report and holds
        the folder (report_hooks.RunRecorder takes it, with the run document)."""
        if hasattr(self.config, "workerinput"):
            self.state.session.results_dir.mkdir(parents=True, exist_ok=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._refused()  # an xdist controller that started hil at this report
        # setup, call and teardown reports all carry the item's properties: take each once
        for index, (name, record) in enumerate(report.user_properties):
            if (
                name == RECORD_KEY
                and isinstance(record, dict)
                and (report.nodeid, index) not in self.seen
            ):
                self.seen.add((report.nodeid, index))
                self.state.records.append(record)
                if self.state.results.holding:  # kept as it comes: a Ctrl-C loses nothing
                    self.state.results.append(record)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.state.records:
            return
        terminalreporter.section("hil summary")
        for line in summary.render(self.state.records):
            terminalreporter.write_line(line)
        records = self.state.records
        for line in (
            fvp_table.render(records) + memory_table.render(records) + problems.render(records)
        ):
            terminalreporter.write_line(line)
        if self.state.results.holding:
            terminalreporter.write_line(f"records: {self.state.results.records_path}")

    def pytest_unconfigure(self) -> None:
        self.state.results.release()  # after --hil-report read the run: the next run may move it
        self.state.session.close()


def _under_xdist(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def _marker_names(metafunc: pytest.Metafunc, name: str) -> set[str] | None:
    marks = list(metafunc.definition.iter_markers(name))
    if not marks:
        return None
    return {arg for m in marks for arg in m.args}
