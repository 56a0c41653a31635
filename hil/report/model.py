"""The certification report's content, built from results folders (or earlier reports) and merged.

Input is what a run leaves behind: `records.jsonl` (one line per check) and `run.json` (command,
commit, tools, machine, targets, and each test's pytest outcome). Each result row keeps the id of
the run it came from; when several inputs hold the same (case, target, recipe), the later run
wins and the earlier verdicts stay listed under `superseded`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from hil.errors import ReportError
from hil.report import document, regression, verdicts
from hil.report.regression import Baseline

log = logging.getLogger("hil.report")

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"

Row = dict[str, Any]
Run = dict[str, Any]

# Record members carried into a result row as they are (after finite()).
_COPIED = (
    "numerics",
    "metrics",
    "tolerance",
    "quantized_reference_metrics",
    "accuracy",
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
)


@dataclass(frozen=True)
class Source:
    """One input of a report: its runs and its result rows."""

    path: str
    runs: tuple[Run, ...]
    rows: tuple[Row, ...]


def load_source(path: Path) -> Source:
    """A results folder (run.json + records.jsonl) or an earlier report.json."""
    if path.is_file():
        report = document.read_report(path)
        return Source(str(path), tuple(report["runs"]), tuple(report["results"]))
    if not path.is_dir():
        raise ReportError(
            f"no results at {path}",
            fix="pass a folder a pytest run wrote (--hil-results-dir, default .hil/results) "
            "or a report.json",
        )
    records_path = path / RECORDS_FILE
    if not records_path.exists():
        raise ReportError(
            f"{path} holds no {RECORDS_FILE}",
            fix="run `pytest suites --target=NAME` first (it writes .hil/results), "
            "or pass --results with the folder your run used",
        )
    run_path = path / RUN_FILE
    if run_path.exists():
        run = document.read_json(run_path)
        if not isinstance(run, dict) or "run_id" not in run:
            raise ReportError(f"{run_path} is not a hil run document (no run_id)")
    else:
        log.warning("%s has no %s: its provenance is unknown", path, RUN_FILE)
        run = _unknown_run(path)
    records = read_records(records_path)
    return Source(str(path), (_run_summary(run),), tuple(rows_from_run(run, records)))


def read_records(path: Path) -> list[dict[str, Any]]:
    """records.jsonl; a torn last line (a run killed mid-write) is dropped with a warning."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):
                log.warning("%s: dropped a torn last line", path)
                break
            raise ReportError(f"{path}:{number} is not a JSON record: {e}") from e
        if not isinstance(record, dict) or not {"case", "target", "recipe", "verdict"} <= set(
            record
        ):
            raise ReportError(f"{path}:{number} lacks case, target, recipe or verdict")
        records.append(record)
    return records


def _unknown_run(folder: Path) -> Run:
    token = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return {"run_id": f"unknown-{token}", "started": None, "targets": {}, "items": []}


def _run_summary(run: Mapping[str, Any]) -> Run:
    """The run as the report carries it: everything but the per-test items (rows hold those)."""
    keep = {k: v for k, v in run.items() if k != "items"}
    keep.setdefault("started", None)
    keep.setdefault("targets", {})
    return dict(document.finite(keep))


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
    if verdict == "OVER BUDGET" and record.get("budget_breaches"):
        return "; ".join(str(b) for b in record["budget_breaches"])
    if verdict == "PARTITION" and record.get("partition_problems"):
        return "; ".join(str(p) for p in record["partition_problems"])
    failure = str(record.get("failure") or "")
    lines = [line.strip() for line in failure.splitlines() if line.strip()]
    if verdict == "MISMATCH":
        details = [
            line
            for line in lines[1:]
            if not line.startswith(("tolerance basis:", "full arrays", "fix:"))
        ]
        return "; ".join(details) or (lines[0] if lines else None)
    return lines[0] if lines else None


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
        "category": verdicts.category_of(verdict, outcome, from_error="error_class" in record),
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


def merge(sources: Sequence[Source]) -> tuple[list[Run], list[Row]]:
    """All runs once each; one row per key, the latest run's, earlier verdicts kept."""
    runs: dict[str, Run] = {}
    for source in sources:
        for run in source.runs:
            runs.setdefault(run["run_id"], run)
    started = {run_id: run.get("started") or "" for run_id, run in runs.items()}
    tagged = [(started.get(r["run"], ""), i, r) for i, s in enumerate(sources) for r in s.rows]
    tagged.sort(key=lambda t: (t[0], t[1]))  # stable: input order breaks ties
    rows: dict[str, Row] = {}
    for _, _, row in tagged:
        old = rows.get(row["key"])
        if old is not None and old["run"] != row["run"]:
            row = {
                **row,
                "superseded": [
                    *old["superseded"],
                    {"run": old["run"], "verdict": old["verdict"], "category": old["category"]},
                ],
            }
        rows[row["key"]] = row
    order = {key: i for i, key in enumerate(r["key"] for s in sources for r in s.rows)}
    return list(runs.values()), sorted(rows.values(), key=lambda r: order[r["key"]])


def targets_of(runs: Sequence[Run], rows: Sequence[Row]) -> dict[str, Any]:
    """Each target's kind, timing, device file hashes, identities and the runs that used it."""
    targets: dict[str, Any] = {}
    for run in runs:
        for name, entry in (run.get("targets") or {}).items():
            merged = targets.setdefault(name, _empty_target())
            _add(merged["runs"], run["run_id"])
            for field in ("kind", "description", "timing"):
                merged[field] = merged[field] or entry.get(field) or ""
            _add(merged["device_sha256"], entry.get("device_sha256"))
            for identity in entry.get("identities") or []:
                _add(merged["identities"], identity)
    for row in rows:
        merged = targets.setdefault(row["target"], _empty_target())
        _add(merged["runs"], row["run"])
        if row["target_info"]:
            _add(merged["identities"], row["target_info"])
    return targets


def _empty_target() -> dict[str, Any]:
    return {
        "kind": "",
        "description": "",
        "timing": "",
        "device_sha256": [],
        "identities": [],
        "runs": [],
    }


def _add(values: list[Any], value: Any) -> None:
    if value and value not in values:
        values.append(value)


def summarize(rows: Sequence[Row]) -> dict[str, Any]:
    by_verdict: dict[str, int] = {}
    by_category = dict.fromkeys(verdicts.CATEGORIES, 0)
    by_target: dict[str, dict[str, int]] = {}
    for row in rows:
        by_verdict[row["verdict"]] = by_verdict.get(row["verdict"], 0) + 1
        by_category[row["category"]] += 1
        per_target = by_target.setdefault(
            row["target"], {"total": 0, **dict.fromkeys(verdicts.CATEGORIES, 0)}
        )
        per_target["total"] += 1
        per_target[row["category"]] += 1
    return {
        "total": len(rows),
        "verdicts": by_verdict,
        "categories": by_category,
        "targets": by_target,
        "failing": sum(n for c, n in by_category.items() if verdicts.is_failing(c)),
    }


def hil_version() -> str:
    try:
        return importlib.metadata.version("hil")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build(
    sources: Sequence[Source],
    *,
    title: str,
    generated: str,
    command: Sequence[str] = (),
    baseline: Baseline | None = None,
    latency_threshold: float = regression.DEFAULT_LATENCY_THRESHOLD,
) -> dict[str, Any]:
    """The report's content (not yet sealed: `document.seal` adds the digest)."""
    if not sources:
        raise ReportError("a report needs at least one results folder or report")
    runs, rows = merge(sources)
    changes = (
        regression.compare(rows, baseline, latency_threshold) if baseline is not None else None
    )
    cases = list(dict.fromkeys(row["case"] for row in rows))
    return {
        "schema": document.SCHEMA_NAME,
        "schema_version": document.SCHEMA_VERSION,
        "title": title,
        "generated": generated,
        "generator": {"hil": hil_version(), "command": list(command)},
        "inputs": [s.path for s in sources],
        "runs": runs,
        "targets": targets_of(runs, rows),
        "cases": cases,
        "results": rows,
        "summary": summarize(rows),
        "regression": changes,
    }
