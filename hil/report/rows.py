"""Result rows: one check's record joined with its test's pytest outcome and its run.

A row is what a report shows for one (case, target, backend): the verdict and its category, the
short reason, the numbers, the artifact, which run it came from and how to run it again.
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from hil.report import document, verdicts

log = logging.getLogger("hil.report")

Row = dict[str, Any]

# Record members carried into a result row as they are (after finite()).
_COPIED = (
    "numerics",
    "checks",
    "not_judged",
    "margin",
    "metrics",
    "latency",
    "eager_latency",
    "budget",
    "failure",
    "error_class",
    "deploy_bytes",
    "arrays",
    "partition",
    "partition_problems",
    "quantized_agreement",
    "first_divergent",
    "profile",
    "profile_line",
    "explore",
    "executorch",
    "altered",
    "quarantine",  # the quarantine entry that named this failure (its category derives from it)
    "attempts",  # each try of a retried check: board, verdict, cause, recovery
    "boards",  # the boards tried, in order
    "board",  # the board that gave the verdict, where it is not the target's own name
    "arrays_sha256",  # the .npz as the check wrote it: checked before it is plotted
)


def _key(case: str, target: str, recipe: str) -> str:
    return f"{case}/{target}/{recipe}"


def suite_of(nodeid: str | None) -> str | None:
    """ "suites/operators/test_operators.py::test_operator[...]" -> "operators"."""
    if not nodeid:
        return None
    path = PurePosixPath(nodeid.split("::", 1)[0])
    return path.parent.name or path.stem


def reason_of(record: Mapping[str, Any], verdict: str) -> str | None:
    """The short why of a verdict; the full text stays in `failure`."""
    if verdict == "PASS":
        return None
    if verdict == "NOT JUDGED" and record.get("not_judged"):
        return "; ".join(str(n) for n in record["not_judged"])
    checks = record.get("checks") or []
    failing = [c for c in checks if c.get("status") == "fail"]
    if failing:
        first = failing[0]["question"]
        return "; ".join(_describe(c) for c in failing if c["question"] == first)
    failure = str(record.get("failure") or "")
    lines = [line.strip() for line in failure.splitlines() if line.strip()]
    return lines[0] if lines else None


def _describe(check: Mapping[str, Any]) -> str:
    what = str(check.get("subject", ""))
    if check.get("reference"):
        what += f" vs {check['reference']}"
    details = "; ".join(str(b) for b in check.get("breaches") or []) or check.get("cause") or ""
    return f"{what}: {details}" if details else what


def reproduce(run: Mapping[str, Any], nodeid: str | None, case: str, target: str) -> str | None:
    """A shell line that runs one result again on the same commit with the same options."""
    command = run.get("command")
    if not isinstance(command, Mapping):
        return None
    what = [nodeid] if nodeid else ["-k", case]
    python = (run.get("python") or {}).get("executable") or "python"
    line = shlex.join(
        [python, "-m", "pytest", *what, f"--target={target}", *command.get("options", [])]
    )
    steps = [f"cd {shlex.quote(str(command.get('rootdir') or command.get('cwd') or '.'))}"]
    commit = (run.get("git") or {}).get("commit")
    if commit:
        steps.append(f"git checkout {commit}")
    return " && ".join([*steps, line])


def _row(record: Mapping[str, Any], item: Mapping[str, Any] | None, run: Mapping[str, Any]) -> Row:
    verdict = str(record["verdict"])
    outcome = item.get("outcome") if item else None
    reason = reason_of(record, verdict)
    if verdict == "PASS" and outcome == "xpassed" and item and item.get("strict"):
        verdict, reason = "XPASS", f"passed, but the case expects a failure: {item.get('reason')}"
    elif verdict == "PASS" and outcome in ("failed", "error"):
        verdict = "ERROR"
        reason = f"the check passed, then the test failed: {item.get('reason') if item else ''}"
    elif outcome == "xfailed" and item:
        reason = f"expected failure ({item.get('reason')}): {reason}"
    nodeid = item.get("nodeid") if item else None
    row: Row = {
        "key": _key(record["case"], record["target"], record["recipe"]),
        "case": record["case"],
        "target": record["target"],
        "recipe": record["recipe"],
        "suite": suite_of(nodeid),
        "nodeid": nodeid,
        "run": run["run_id"],
        "outcome": outcome,
        "verdict": verdict,
        "category": verdicts.category_of(
            verdict,
            outcome,
            from_error="error_class" in record,
            quarantined=bool(record.get("quarantine")),
        ),
        "reason": reason,
        "budget_breaches": [str(b) for b in record.get("budget_breaches") or []],
        "counters": dict(record.get("counters") or {}),
        "artifact": record.get("artifact"),
        "target_info": {str(k): str(v) for k, v in (record.get("target_info") or {}).items()},
        "reproduce": reproduce(run, nodeid, record["case"], record["target"]),
        "superseded": [],
    }
    for name in _COPIED:
        row[name] = record.get(name)
    row["checks"] = list(row["checks"] or [])  # error records ran no check
    row["not_judged"] = list(row["not_judged"] or [])
    return dict(document.finite(row))


def _row_without_record(item: Mapping[str, Any], run: Mapping[str, Any]) -> Row:
    """A test that produced no check: skipped (target unavailable) or failed before checking."""
    verdict = "SKIPPED" if item["outcome"] == "skipped" else "ERROR"
    record = {
        "case": item["case"],
        "target": item["target"],
        "recipe": item["recipe"],
        "verdict": verdict,
        "failure": item.get("reason"),
    }
    row = _row(record, None, run)
    row.update(
        outcome=item["outcome"],
        nodeid=item.get("nodeid"),
        suite=suite_of(item.get("nodeid")),
        category=verdicts.category_of(verdict, item["outcome"], from_error=True),
        reproduce=reproduce(run, item.get("nodeid"), item["case"], item["target"]),
    )
    return row


def rows_from_run(run: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> list[Row]:
    """Join the run's records with its tests' pytest outcomes, by (case, target, recipe)."""
    items: dict[str, list[Mapping[str, Any]]] = {}
    for item in run.get("items") or []:
        items.setdefault(_key(item["case"], item["target"], item["recipe"]), []).append(item)
    rows = []
    for record in _unique(records):
        waiting = items.get(_key(record["case"], record["target"], record["recipe"]))
        rows.append(_row(record, waiting.pop(0) if waiting else None, run))
    for waiting in items.values():
        rows.extend(_row_without_record(i, run) for i in waiting if i["outcome"] != "passed")
    seen: dict[str, int] = {}
    for row in rows:  # the same case in two test functions: keep both, keys stay unique
        seen[row["key"]] = seen.get(row["key"], 0) + 1
        if seen[row["key"]] > 1:
            row["key"] += f"#{seen[row['key']]}"
    return rows


def _unique(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Drop byte-identical repeats of a record (a results file written twice by xdist workers
    and their controller); two real checks never agree to the last microsecond."""
    seen: set[str] = set()
    unique = []
    for record in records:
        text = json.dumps(record, sort_keys=True, default=str)
        if text in seen:
            log.warning("dropped a repeated record of %s on %s", record["case"], record["target"])
            continue
        seen.add(text)
        unique.append(record)
    return unique
