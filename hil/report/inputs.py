"""A report's inputs, read as evidence: each results folder or earlier report, its rows, the
bytes it was read from (by sha256), and every reason it cannot be certified.

A results folder is complete and honest when its run finished and said so (`finished`,
`exit_status`), its `run.json` is there, every test it collected ended, its records are the
ones the run wrote (`records.count` and `records.sha256` in run.json), none is torn, and its
tree was a clean checkout. An earlier report is taken only when its content hash holds (and its
signature, where it is signed and a key is given); its rows are derived again from their
verdicts, never copied.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.errors import ReportAltered, ReportError, SignatureInvalid
from hil.hashing import bytes_sha256
from hil.report import attestation, document, rederive
from hil.report.rows import Row, rows_from_run
from hil.results.files import RECORDS_FILE, RUN_FILE
from hil.signing import TrustedKey

log = logging.getLogger("hil.report")

Run = dict[str, Any]


# pytest's exit statuses that say a run stopped before its end (1, tests failed, is complete)
_CUT_SHORT = {2: "interrupted", 3: "an internal error", 4: "a usage error"}
_SHOWN = 5  # ids or files named in one reason


@dataclass(frozen=True)
class Evidence:
    """A file the report vouches for: a subject of its signed attestation."""

    kind: str  # run, records, report, program, runner
    name: str
    path: str
    sha256: str
    run: str | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
        }
        if self.run:
            found["run"] = self.run
        return found


@dataclass(frozen=True)
class Source:
    """One input of a report: its runs, its rows, what it was read from, and why it cannot be
    certified (empty: nothing against it)."""

    path: str
    runs: tuple[Run, ...]
    rows: tuple[Row, ...]
    problems: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()


def load_source(path: Path, trusted: TrustedKey | None = None) -> Source:
    """A results folder (run.json + records.jsonl) or an earlier report.json."""
    if path.is_file():
        return _report_source(path, trusted)
    if not path.is_dir():
        raise ReportError(
            f"no results at {path}",
            fix="pass a folder a pytest run wrote (--hil-results-dir, default .hil/results) "
            "or a report.json",
        )
    return _folder_source(path)


# -- a results folder ----------------------------------------------------------------------


def _folder_source(folder: Path) -> Source:
    records_path, run_path = folder / RECORDS_FILE, folder / RUN_FILE
    if not records_path.exists():
        raise ReportError(
            f"{folder} holds no {RECORDS_FILE}",
            fix="run `pytest suites --target=NAME` first (it writes .hil/results), "
            "or pass --results with the folder your run used",
        )
    problems: list[str] = []
    records_bytes = _read_bytes(records_path)
    records, torn = parse_records(records_bytes, records_path)
    if torn:
        problems.append(
            f"{records_path} ends in a torn line (the run was killed while writing a record): "
            "that result is lost"
        )
    evidence = []
    if run_path.exists():
        run_bytes = _read_bytes(run_path)
        run = document.parse_json(run_bytes, run_path)
        if not isinstance(run, dict) or "run_id" not in run:
            raise ReportError(f"{run_path} is not a hil run document (no run_id)")
        problems += run_problems(run, records_bytes, len(records) + int(torn))
        evidence.append(
            Evidence(
                "run",
                f"run {run['run_id']}: {RUN_FILE}",
                str(run_path.resolve()),
                bytes_sha256(run_bytes),
                run["run_id"],
            )
        )
    else:
        log.warning("%s has no %s: its provenance is unknown", folder, RUN_FILE)
        problems.append(
            f"{folder} has no {RUN_FILE}: what ran, from which commit, with which tools and "
            "whether the run finished are unknown"
        )
        run = _unknown_run(folder)
    evidence.append(
        Evidence(
            "records",
            f"run {run['run_id']}: {RECORDS_FILE}",
            str(records_path.resolve()),
            bytes_sha256(records_bytes),
            run["run_id"],
        )
    )
    rows = tuple(rederive.row(r) for r in rows_from_run(run, records))
    return Source(str(folder), (_run_summary(run),), rows, tuple(problems), tuple(evidence))


def parse_records(data: bytes, path: Path) -> tuple[list[dict[str, Any]], bool]:
    """records.jsonl's records, and whether its last line was torn (a run killed mid-write).
    A malformed line anywhere else, or a record without its keys, is bad input."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line, object_pairs_hook=document.no_duplicate_keys)
        except json.JSONDecodeError as e:
            if number == len(lines):
                log.warning("%s: a torn last line", path)
                return records, True
            raise ReportError(f"{path}:{number} is not a JSON record: {e}") from e
        if not isinstance(record, dict) or not {"case", "target", "recipe", "verdict"} <= set(
            record
        ):
            raise ReportError(f"{path}:{number} lacks case, target, recipe or verdict")
        records.append(record)
    return records, False


def run_problems(run: Mapping[str, Any], records_bytes: bytes, lines: int) -> list[str]:
    """Why this run's folder does not hold the whole, unaltered result of a finished run."""
    name = f"run {run['run_id']}"
    problems = []
    status = run.get("exit_status")
    if run.get("finished") is None or status is None:
        problems.append(f"{name} did not finish (it was killed, or is still running)")
    elif status in _CUT_SHORT:
        problems.append(f"{name} ended with pytest exit status {status} ({_CUT_SHORT[status]})")
    problems += _records_problems(name, run.get("records"), records_bytes, lines, run)
    problems += _collection_problems(name, run)
    problems += _tree_problems(name, run.get("git"))
    return problems


def _records_problems(
    name: str, written: Any, data: bytes, lines: int, run: Mapping[str, Any]
) -> list[str]:
    if run.get("finished") is None:
        return []  # said above: an unfinished run never counted its records
    if not isinstance(written, Mapping):
        return [
            f"{name} does not say how many records it wrote (an older hil wrote it): records "
            "dropped or edited since cannot be told apart"
        ]
    problems = []
    if written.get("count") != lines:
        problems.append(
            f"{name} wrote {written.get('count')} records, its {RECORDS_FILE} holds {lines}: "
            "records were dropped or added after the run"
        )
    if written.get("sha256") != bytes_sha256(data):
        problems.append(
            f"{name}'s {RECORDS_FILE} is not the file the run wrote (its sha256 differs from "
            "the one run.json recorded): it was edited after the run"
        )
    return problems


def _collection_problems(name: str, run: Mapping[str, Any]) -> list[str]:
    if "collected" not in run:
        return [f"{name} does not list the tests it collected (an older hil wrote it)"]
    collected = run["collected"]
    if collected is None:
        return []  # a library session: no collection, its records are its checks
    ended = set(run.get("ended") or [])
    missing = [nodeid for nodeid in collected if nodeid not in ended]
    if not missing:
        return []
    shown = ", ".join(missing[:_SHOWN]) + (" ..." if len(missing) > _SHOWN else "")
    return [f"{name}: {len(missing)} of {len(collected)} collected tests left no result: {shown}"]


def _tree_problems(name: str, git: Any) -> list[str]:
    if not isinstance(git, Mapping):
        return [f"{name} did not run from a git checkout: no commit names the code that ran"]
    if not git.get("dirty"):
        return []
    changed = [str(line).strip() for line in git.get("changed_files") or []]
    shown = ", ".join(changed[:_SHOWN]) + (" ..." if len(changed) > _SHOWN else "")
    return [
        f"{name} ran on a working tree with uncommitted changes ({shown}): commit "
        f"{str(git.get('commit', ''))[:12]} does not name the code that ran"
    ]


def _unknown_run(folder: Path) -> Run:
    token = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return {"run_id": f"unknown-{token}", "started": None, "targets": {}, "items": []}


def _run_summary(run: Mapping[str, Any]) -> Run:
    """The run as the report carries it: without the per-test lists (rows hold those)."""
    keep = {k: v for k, v in run.items() if k not in ("items", "collected", "ended")}
    keep.setdefault("started", None)
    keep.setdefault("targets", {})
    return dict(document.finite(keep))


# -- an earlier report ---------------------------------------------------------------------


def _report_source(path: Path, trusted: TrustedKey | None) -> Source:
    data = _read_bytes(path)
    report = document.read_report_bytes(data, path)
    check = document.verify(report)
    if not check.ok:
        raise ReportAltered(
            f"{path} was changed after it was written: {check}",
            fix="merge the results folders it was made from, or the report as it was written",
        )
    problems = [f"{path}: {reason}" for reason in _certification(report)]
    problems += _signature_problems(path, data, trusted)
    rows = tuple(rederive.row(r) for r in report["results"])
    evidence = (Evidence("report", f"input report {path.name}", str(path), bytes_sha256(data)),)
    return Source(str(path), tuple(report["runs"]), rows, tuple(problems), evidence)


def _certification(report: Mapping[str, Any]) -> list[str]:
    found = report.get("certification")
    if not isinstance(found, Mapping):
        return ["an older hil wrote it and judged nothing of its completeness"]
    return [str(r) for r in found.get("reasons") or []]


def _signature_problems(path: Path, data: bytes, trusted: TrustedKey | None) -> list[str]:
    """An input report counts as the lab's only when its signature verifies."""
    envelope = path.with_name(attestation.ENVELOPE_NAME)
    if not envelope.exists():
        return [
            f"{path} is not signed: its content hash shows it unchanged since it was sealed, "
            "not who sealed it (merge its results folders, or sign it with the lab's key)"
        ]
    if trusted is None:
        return [f"{path} is signed, but no --key was given to check its signature"]
    try:
        statement = attestation.open_statement(envelope, trusted)
    except SignatureInvalid as e:
        raise ReportAltered(f"{envelope}: {e.message}", fix=e.fix) from e
    if attestation.subject_digest(statement, attestation.REPORT_JSON) != bytes_sha256(data):
        raise ReportAltered(
            f"{path} is not the report.json its signature vouches for ({envelope})",
            fix="merge the report as it was signed, or its results folders",
        )
    return []


# -- shared ---------------------------------------------------------------------------------


def program_and_runner_evidence(rows: Sequence[Row]) -> list[Evidence]:
    """Each .pte the rows ran and each runner binary they ran on, once each."""
    found: dict[str, Evidence] = {}
    for row in rows:
        artifact = row.get("artifact") or {}
        sha = artifact.get("sha256") if isinstance(artifact, Mapping) else None
        if sha and f"program {sha}" not in found:
            found[f"program {sha}"] = Evidence(
                "program",
                f"program {row['recipe']} {sha[:16]}.pte",
                str(artifact.get("path") or ""),
                str(sha),
            )
        info = row.get("target_info") or {}
        runner = info.get("runner_sha256")
        if runner and f"runner {runner}" not in found:
            found[f"runner {runner}"] = Evidence(
                "runner",
                f"runner of {row['target']} build {info.get('build_id', '?')}",
                str(info.get("runner_path") or ""),
                str(runner),
            )
    return list(found.values())


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from e
