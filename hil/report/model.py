"""The certification report's content, built from its inputs (hil.report.inputs) and merged.

Input is what a run leaves behind: `records.jsonl` (one line per check) and `run.json` (command,
commit, tools, machine, targets, and each test's pytest outcome). Each result row keeps the id of
the run it came from; when several inputs hold the same (case, target, recipe), the later run
wins and the earlier verdicts stay listed under `superseded`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

from hil.errors import ReportError
from hil.report import certification, document, regression, verdicts
from hil.report.inputs import Run, Source, program_and_runner_evidence
from hil.report.regression import Baseline
from hil.report.rows import Row


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
        "quarantined": [
            f"{row['case']} on {row['target']} [{row['recipe']}]"
            for row in rows
            if row["category"] == verdicts.QUARANTINED
        ],
        "skips": skip_causes(rows),
        # results of an altered run (hil.verdict.altered): the report certifies none of the run
        "altered": [
            f"{row['case']} on {row['target']} [{row['recipe']}]: {'; '.join(row['altered'])}"
            for row in rows
            if row.get("altered")
        ],
        # a pass that needed another attempt (a lost link, another board): shown, not hidden
        "passed_after_retry": [
            f"{row['case']} on {row['target']} [{row['recipe']}] after {len(row['attempts'])} "
            f"attempts on {', '.join(row.get('boards') or [row['target']])}"
            for row in rows
            if row["category"] == verdicts.PASS and len(row.get("attempts") or []) > 1
        ],
    }


def skip_causes(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """The skipped results by cause, most first: what a signer reads beside a green headline
    ("86 skipped: fvp-u55, fvp-u85: no FVP on this machine")."""
    causes: dict[str, tuple[set[str], list[int]]] = {}
    for row in rows:
        if row["category"] != "skipped":
            continue
        reason = str(row.get("reason") or "no reason given").split("\n")[0]
        targets, count = causes.setdefault(reason[:200], (set(), [0]))
        targets.add(row["target"])
        count[0] += 1
    ordered = sorted(causes.items(), key=lambda item: -item[1][1][0])
    return [
        {"reason": reason, "targets": sorted(targets), "count": count[0]}
        for reason, (targets, count) in ordered
    ]


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
        "certification": certification.judge(sources, rows),
        "evidence": [
            e.to_json()
            for e in [*(e for s in sources for e in s.evidence), *program_and_runner_evidence(rows)]
        ],
    }
