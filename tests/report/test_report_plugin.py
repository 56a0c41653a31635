"""The plugin side: run.json on every run, --hil-report at the end of a run, option errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_lab import Runs

from hil.report import document
from hil.report.certify import verify_file


def items(results: Path) -> dict[str, dict[str, object]]:
    run = json.loads((results / "run.json").read_text())
    return {i["nodeid"].split("[")[1].rstrip("]"): i for i in run["items"]}


def test_run_json_says_what_ran_and_how_each_test_ended(runs: Runs) -> None:
    run = json.loads((runs.a / "run.json").read_text())
    assert run["run_version"] == 1
    assert run["started"] <= run["finished"] and run["exit_status"] == 1
    assert "--target=ghost" in run["command"]["argv"]
    assert run["command"]["rootdir"] == str(runs.project)
    outcomes = {key: item["outcome"] for key, item in items(runs.a).items()}
    assert outcomes["relu-host-portable"] == "passed"
    assert outcomes["tight-host-portable"] == "failed"
    assert outcomes["drift-host-xnnpack-int8"] == "xfailed"
    assert outcomes["relu-ghost-portable"] == "skipped"
    assert outcomes["relu-flaky-portable"] == "error"
    assert outcomes["linear-flaky-portable"] == "skipped"
    assert items(runs.a)["drift-host-xnnpack-int8"]["reason"] == "int8 cannot meet 1e-9"
    assert run["machine"]["cpu"] and run["python"]["version"].startswith("3.11")


def test_hil_report_option_writes_a_sealed_report_with_the_changes(runs: Runs) -> None:
    path = runs.report_b / "report.json"
    assert verify_file(path).ok
    report = document.read_report(path)
    assert report["generator"]["command"][0] == "pytest"
    assert report["regression"]["baseline"]["path"] == str(runs.report_a)
    assert [e["key"] for e in report["regression"]["new_failures"]] == ["linear/host/xnnpack-int8"]
    assert (runs.report_b / "report.html").stat().st_size > 10_000
    assert report["runs"][0]["exit_status"] == 1  # the final run.json, not the one at the start


SUITE = """
import pytest, torch, hil

@pytest.mark.hil_cases([hil.Case("relu", torch.nn.ReLU, hil.seeded((1, 8)),
                                 recipes=frozenset({"portable"}))])
def test_case(hil_check):
    hil_check()
"""


@pytest.fixture
def project(pytester: pytest.Pytester, runs: Runs, shared_cache: Path) -> pytest.Pytester:
    """A one-case project; `runs` first, so the exporter is imported before pytester's snapshot."""
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} --hil-devices={runs.project / 'devices'}"
        " -p no:cacheprovider -p no:labgrid -W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def test_end_of_run_prints_where_the_report_is(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=host", "--hil-report=out")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "hil report: */out/report.html (report.json content hash *...)",
            "hil report: NOT CERTIFIED (1 reason(s)): run * did not run from a git checkout*",
        ]
    )
    assert verify_file(project.path / "out" / "report.json").ok


def test_baseline_without_a_report_or_a_file_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--hil-baseline=missing.json", "--hil-report=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--hil-baseline missing.json: no such report.json*"])
    (project.path / "old.json").write_text("{}")
    result = project.runpytest("--hil-baseline=old.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--hil-baseline needs --hil-report DIR*"])


def test_a_report_that_cannot_be_written_fails_the_run_loudly(project: pytest.Pytester) -> None:
    (project.path / "old.json").write_text('{"schema": "something else"}')
    result = project.runpytest("--hil-report=out", "--hil-baseline=old.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(
        ["*the certification report was NOT written*not a hil certification report*"]
    )
