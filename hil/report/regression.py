"""What changed since a previous report: new failures, fixed cases, latency that moved.

Results are matched by key (case/target/recipe). Latency is compared on the median, and only
between numbers of the same kind (measured with measured, estimated with estimated): a Vela
estimate against a wall-clock time says nothing about a regression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.report import document, verdicts

DEFAULT_LATENCY_THRESHOLD = 0.10  # relative change of the median that counts as "moved"


@dataclass(frozen=True)
class Baseline:
    path: str
    report: Mapping[str, Any]


def load_baseline(path: Path) -> Baseline:
    return Baseline(str(path), document.read_report(path))


def _entry(
    key: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, Any]:
    some = after or before
    assert some is not None
    return {
        "key": key,
        "case": some["case"],
        "target": some["target"],
        "recipe": some["recipe"],
        "before": before["verdict"] if before else None,
        "after": after["verdict"] if after else None,
        "reason": (after or {}).get("reason"),
    }


def _failing(row: Mapping[str, Any] | None) -> bool:
    return row is not None and verdicts.is_failing(row["category"])


def _median(row: Mapping[str, Any]) -> tuple[float, str] | None:
    latency = row.get("latency")
    if not isinstance(latency, Mapping):
        return None
    value = latency.get("median_us")
    if not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value), str(latency.get("timing", "measured"))


def latency_change(
    key: str, before: Mapping[str, Any], after: Mapping[str, Any], threshold: float
) -> dict[str, Any] | None:
    old, new = _median(before), _median(after)
    if old is None or new is None or old[1] != new[1]:
        return None
    change = new[0] / old[0] - 1.0
    if abs(change) <= threshold:
        return None
    old_sha = (before.get("artifact") or {}).get("sha256")
    new_sha = (after.get("artifact") or {}).get("sha256")
    return {
        **_entry(key, before, after),
        "before_us": old[0],
        "after_us": new[0],
        "change": change,
        "timing": new[1],
        "direction": "slower" if change > 0 else "faster",
        "artifact_changed": bool(old_sha and new_sha and old_sha != new_sha),
    }


def compare(
    rows: Sequence[Mapping[str, Any]], baseline: Baseline, threshold: float
) -> dict[str, Any]:
    """The regression section of a report."""
    before = {r["key"]: r for r in baseline.report["results"]}
    after = {r["key"]: r for r in rows}
    new_failures, fixed, changed, latency = [], [], [], []
    for key, now in after.items():
        then = before.get(key)
        if _failing(now) and not _failing(then):
            new_failures.append(_entry(key, then, now))
        elif _failing(then) and not _failing(now) and now["category"] == verdicts.PASS:
            fixed.append(_entry(key, then, now))
        elif then is not None and _failing(now) and then["verdict"] != now["verdict"]:
            changed.append(_entry(key, then, now))
        if then is not None:
            moved = latency_change(key, then, now, threshold)
            if moved is not None:
                latency.append(moved)
    latency.sort(key=lambda e: -abs(e["change"]))
    check = document.verify(baseline.report)
    digest = baseline.report.get("digest") or {}
    section: dict[str, Any] = document.finite(
        {
            "baseline": {
                "path": baseline.path,
                "title": baseline.report.get("title", ""),
                "generated": baseline.report.get("generated", ""),
                "digest": digest.get("value", ""),
                "digest_ok": check.ok,
            },
            "latency_threshold": threshold,
            "new_failures": new_failures,
            "fixed": fixed,
            "changed_failures": changed,
            "latency": latency,
            "added": [k for k in after if k not in before],
            "removed": [k for k in before if k not in after],
        }
    )
    return section
