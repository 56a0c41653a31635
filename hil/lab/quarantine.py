"""Quarantine: known failures, each with its reason, issue and expiry, reported as such.

A quarantine file is a YAML list; every entry needs all four keys:

    - case: "conv2d_*-rack-xnnpack-int8"    # fnmatch pattern: a test id (case-target-recipe)
      reason: int8 conv drifts on the M55 build      #   or a pytest node id
      issue: https://github.com/example/hil/issues/12
      expires: 2026-12-31                   # after this day the entry is refused

A failing case an entry matches is reported as quarantined (with the reason and the link),
not as a failure; a quarantined case that passes is reported too, so the entry can go. An
expired entry is refused as a whole-file error naming it: a quarantine never outlives the
decision to look at it again.
"""

from __future__ import annotations

import datetime
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hil.errors import UsageError

KEYS = ("case", "reason", "issue", "expires")


@dataclass(frozen=True)
class Entry:
    case: str
    reason: str
    issue: str
    expires: datetime.date
    line: int  # 1-based position in the file, for messages

    def matches(self, names: Iterable[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, self.case) for name in names)

    def describe(self) -> str:
        return f"{self.reason} ({self.issue}; until {self.expires.isoformat()})"

    def to_record(self) -> dict[str, str]:
        return {
            "case": self.case,
            "reason": self.reason,
            "issue": self.issue,
            "expires": self.expires.isoformat(),
        }


@dataclass(frozen=True)
class Quarantine:
    path: Path
    entries: tuple[Entry, ...]

    def find(self, names: Sequence[str]) -> Entry | None:
        """The first entry matching any of the names (a test id, a node id)."""
        return next((e for e in self.entries if e.matches(names)), None)

    def expired(self, today: datetime.date) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.expires < today)


def _bad(path: Path, where: str, problem: str) -> UsageError:
    return UsageError(
        f"quarantine file {path}: {where}: {problem}",
        fix="each entry needs case, reason, issue and expires (YYYY-MM-DD); "
        "see hil/lab/quarantine.py",
    )


def _entry(path: Path, index: int, raw: Any) -> Entry:
    where = f"entry {index + 1}"
    if not isinstance(raw, dict):
        raise _bad(path, where, f"must be a mapping of {', '.join(KEYS)}, got {raw!r}")
    missing = [k for k in KEYS if raw.get(k) in (None, "")]
    unknown = sorted(set(raw) - set(KEYS))
    if missing or unknown:
        problem = (f"missing {', '.join(missing)}" if missing else "") + (
            f"{'; ' if missing else ''}unknown keys {', '.join(map(str, unknown))}"
            if unknown
            else ""
        )
        raise _bad(path, where, problem)
    expires = raw["expires"]
    if isinstance(expires, str):
        try:
            expires = datetime.date.fromisoformat(expires)
        except ValueError:
            raise _bad(path, where, f"expires must be a date YYYY-MM-DD, got {expires!r}") from None
    if isinstance(expires, datetime.datetime):
        expires = expires.date()
    if not isinstance(expires, datetime.date):
        raise _bad(path, where, f"expires must be a date YYYY-MM-DD, got {expires!r}")
    return Entry(str(raw["case"]), str(raw["reason"]), str(raw["issue"]), expires, index + 1)


def load(path: Path, today: datetime.date | None = None) -> Quarantine:
    """The file's entries; UsageError for a malformed file or any expired entry."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"cannot read quarantine file {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise UsageError(f"quarantine file {path} is not valid YAML: {e}") from e
    if data is None:
        data = []
    if not isinstance(data, list):
        raise _bad(path, "top level", "must be a list of entries")
    quarantine = Quarantine(path, tuple(_entry(path, i, raw) for i, raw in enumerate(data)))
    expired = quarantine.expired(today or datetime.date.today())
    if expired:
        raise UsageError(
            f"quarantine file {path}: {len(expired)} expired entr"
            f"{'y' if len(expired) == 1 else 'ies'}: "
            + "; ".join(
                f"entry {e.line} ({e.case}: {e.reason}, {e.issue}) expired on "
                f"{e.expires.isoformat()}"
                for e in expired
            ),
            fix="look at each issue again: fix the case and delete the entry, or renew its "
            "expires date with a fresh reason",
        )
    return quarantine
