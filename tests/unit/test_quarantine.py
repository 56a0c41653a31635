"""The quarantine file: entries need all four keys, patterns match test ids or node ids, and
an expired entry is refused naming it, its issue and the day it expired."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from hil.errors import UsageError
from hil.lab.quarantine import load

TODAY = datetime.date(2026, 11, 30)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "quarantine.yaml"
    path.write_text(text)
    return path


def test_entries_match_test_ids_and_node_ids_by_pattern(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
- case: "conv2d_*-rack-xnnpack-int8"
  reason: int8 conv drifts
  issue: https://example.org/issues/12
  expires: 2026-12-31
- case: "tests/test_x.py::test_flaky"
  reason: flaky
  issue: ISSUE-7
  expires: "2026-11-30"
""",
    )
    quarantine = load(path, TODAY)
    entry = quarantine.find(
        ["suite.py::test_operator[conv2d_3x3-rack-xnnpack-int8]", "conv2d_3x3-rack-xnnpack-int8"]
    )
    assert entry is not None and entry.issue == "https://example.org/issues/12"
    assert quarantine.find(["conv2d_3x3-rack-portable"]) is None
    assert quarantine.find(["tests/test_x.py::test_flaky"]).line == 2  # type: ignore[union-attr]
    assert entry.to_record()["expires"] == "2026-12-31"


def test_an_expired_entry_is_refused_naming_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
- {case: "ok-*", reason: fine, issue: I-1, expires: 2027-01-01}
- {case: "old-*", reason: stale reason, issue: I-2, expires: 2026-11-29}
""",
    )
    with pytest.raises(UsageError) as caught:
        load(path, TODAY)
    message = str(caught.value)
    assert "1 expired entry" in message
    assert "entry 2 (old-*: stale reason, I-2) expired on 2026-11-29" in message
    assert "renew" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- {case: a, reason: r, issue: i}", "missing expires"),
        ("- {case: a, reason: r, issue: i, expires: soon}", "expires must be a date"),
        ("- {case: a, reason: r, issue: i, expires: 2027-01-01, owner: me}", "unknown keys owner"),
        ("- just a string", "must be a mapping"),
        ("case: a", "must be a list"),
    ],
)
def test_malformed_files_are_usage_errors(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        load(write(tmp_path, text), TODAY)


def test_an_empty_file_quarantines_nothing(tmp_path: Path) -> None:
    assert load(write(tmp_path, ""), TODAY).entries == ()
