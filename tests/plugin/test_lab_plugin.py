"""The lab options through pytest: a quarantined failure is reported as quarantined (xfail,
with its reason and issue) and a quarantined pass as XPASS, both in the records and the
summary; an expired entry or a bad --hil-retries stops the run naming the problem."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

SUITE = """
import pytest, torch
import hil

def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(8, 4)

CASES = [
    hil.Case("slow", linear, hil.seeded((1, 8)), budget_vs_eager={"host": 1e-9},
             recipes=frozenset({"portable"})),
    hil.Case("fine", linear, hil.seeded((2, 8)), recipes=frozenset({"portable"})),
    hil.Case("other", linear, hil.seeded((3, 8)), budget_vs_eager={"host": 1e-9},
             recipes=frozenset({"portable"})),
]

@pytest.mark.hil_cases(CASES)
def test_case(hil_check):
    hil_check()

@pytest.mark.hil_cases([hil.Case("lost", linear, hil.seeded((4, 8)), recipes=frozenset({"portable"}))])
def test_link_lost(hil_check):
    hil_check()
    raise hil.errors.LinkTimeout("the board stopped answering (a lost link, not the model)")
"""


@pytest.fixture
def project(pytester: pytest.Pytester, shared_cache: Path) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini(
        f"[pytest]\naddopts = --hil-cache-dir={shared_cache} -p no:cacheprovider -p no:labgrid "
        "-W ignore::pytest.PytestAssertRewriteWarning\n"
    )
    return pytester


def quarantine_file(folder: Path, expires: datetime.date) -> Path:
    path = folder / "quarantine.yaml"
    path.write_text(
        f"- {{case: 'slow-host-*', reason: budget for a faster host, issue: HIL-31, "
        f"expires: {expires.isoformat()}}}\n"
        f"- {{case: '*fine-host-portable*', reason: was flaky, issue: HIL-32, "
        f"expires: {expires.isoformat()}}}\n"
    )
    return path


def test_quarantined_failures_and_passes_are_reported_as_such(project: pytest.Pytester) -> None:
    path = quarantine_file(project.path, datetime.date.today() + datetime.timedelta(days=30))
    result = project.runpytest(
        "--target=host",
        f"--hil-quarantine={path}",
        "-rxX",
        "--hil-results-dir=results",
        "test_suite.py::test_case",
    )
    result.assert_outcomes(failed=1, xfailed=1, xpassed=1)  # "other" is not quarantined
    result.stdout.fnmatch_lines(
        [
            "*= hil lab =*",
            "quarantined: 1 known failure(s), 1 quarantined case(s) passed (their entries can go)",
            "  slow on host ?portable?: OVER BUDGET; budget for a faster host (HIL-31, until *",
            "  fine on host ?portable?: passed; was flaky (HIL-32, until *",
            "*short test summary info*",
            "XFAIL *slow-host-portable* - quarantined: budget for a faster host (HIL-31; until *",
            "XPASS *fine-host-portable* - quarantined, but passed: was flaky (HIL-32; until *",
        ]
    )
    records = {
        r["case"]: r for r in map(json.loads, (project.path / "results/records.jsonl").open())
    }
    assert records["slow"]["quarantine"]["issue"] == "HIL-31"
    assert records["fine"]["quarantine"]["issue"] == "HIL-32"
    assert "quarantine" not in records["other"]
    run = json.loads((project.path / "results/run.json").read_text())
    outcomes = {i["case"]: i["outcome"] for i in run["items"]}
    assert outcomes == {"slow": "xfailed", "fine": "xpassed", "other": "failed"}


def test_quarantine_never_hides_a_lost_link(project: pytest.Pytester) -> None:
    path = project.path / "quarantine.yaml"
    expires = datetime.date.today() + datetime.timedelta(days=30)
    path.write_text(
        f"- {{case: 'lost-host-*', reason: flaky board, issue: HIL-33, "
        f"expires: {expires.isoformat()}}}\n"
    )
    result = project.runpytest(
        "--target=host", f"--hil-quarantine={path}", "test_suite.py::test_link_lost"
    )
    result.assert_outcomes(failed=1)  # an infrastructure failure is no known test failure
    result.stdout.fnmatch_lines(["*LinkTimeout: the board stopped answering*"])


def test_an_expired_entry_stops_the_run_naming_it(project: pytest.Pytester) -> None:
    path = quarantine_file(project.path, datetime.date.today() - datetime.timedelta(days=1))
    result = project.runpytest("--target=host", f"--hil-quarantine={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*2 expired entries: entry 1 (slow-host-*: budget for a faster host, HIL-31) expired on *"]
    )


def test_retries_must_be_a_whole_number(project: pytest.Pytester) -> None:
    result = project.runpytest("--target=host", "--hil-retries=two")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--hil-retries takes a whole number >= 0, got 'two'*"])
