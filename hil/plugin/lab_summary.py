"""The summary's lab section: cases retried after infrastructure errors (every attempt, with
its board), boards taken out of service, and quarantined cases. A pure function from result
records to text lines, shown after the per-target tables."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

Record = Mapping[str, Any]
MAX_FAILURE = 160


def _short(text: str | None) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= MAX_FAILURE else line[: MAX_FAILURE - 3] + "..."


def _where(r: Record) -> str:
    return f"{r['case']} on {r['target']} [{r['recipe']}]"


def failed_boards(records: Sequence[Record]) -> dict[str, str]:
    """board -> first cause, for every board an attempt failed on and the next attempt left."""
    found: dict[str, str] = {}
    for r in records:
        attempts = r.get("attempts") or ()
        for this, after in itertools.pairwise(attempts):
            if this["board"] != after["board"] and this.get("verdict") == "INFRA":
                found.setdefault(
                    this["board"], f"{this.get('error_class', '')}: {_short(this.get('failure'))}"
                )
        last = attempts[-1] if attempts else None
        if last is not None and "out of service" in (last.get("recovery") or ""):
            found.setdefault(
                last["board"], f"{last.get('error_class', '')}: {_short(last.get('failure'))}"
            )
    return found


def render(records: Sequence[Record]) -> list[str]:
    lines: list[str] = []
    retried = [r for r in records if len(r.get("attempts") or ()) > 1]
    if retried:
        lines.append(f"retried after infrastructure errors: {len(retried)} case(s)")
        for r in retried:
            lines.append(f"  {_where(r)}: {r.get('verdict')} after {len(r['attempts'])} attempts")
            for a in r["attempts"]:
                cause = (
                    f" {a['error_class']}: {_short(a.get('failure'))}"
                    if a.get("error_class")
                    else ""
                )
                then = f" -> {a['recovery']}" if a.get("recovery") else ""
                lines.append(f"    {a['attempt']}. {a['board']}: {a['verdict']}{cause}{then}")
    boards = failed_boards(records)
    if boards:
        lines.append(f"boards taken out of service: {len(boards)}")
        lines.extend(f"  {board}: {cause}" for board, cause in sorted(boards.items()))
    quarantined = [r for r in records if r.get("quarantine")]
    if quarantined:
        passing = [r for r in quarantined if r.get("verdict") == "PASS"]
        lines.append(
            f"quarantined: {len(quarantined) - len(passing)} known failure(s), "
            f"{len(passing)} quarantined case(s) passed (their entries can go)"
        )
        for r in quarantined:
            q = r["quarantine"]
            state = "passed" if r.get("verdict") == "PASS" else r.get("verdict")
            lines.append(
                f"  {_where(r)}: {state}; {q['reason']} ({q['issue']}, until {q['expires']})"
            )
    if lines:
        lines.append("")
    return lines
