"""Writing and checking a certification report: results folders in, report.json + report.html out.

This is what `hil report` and `pytest --hil-report DIR` both call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.report import document, model, regression
from hil.results.files import now_iso, write_json

log = logging.getLogger("hil.report")

JSON_NAME = "report.json"
HTML_NAME = "report.html"
DEFAULT_TITLE = "hil certification report"


@dataclass(frozen=True)
class Written:
    folder: Path
    json_path: Path
    html_path: Path
    digest: str
    summary: dict[str, Any]
    regression: dict[str, Any] | None


def write_report(
    results: Sequence[Path],
    out: Path,
    *,
    baseline: Path | None = None,
    title: str = DEFAULT_TITLE,
    latency_threshold: float = regression.DEFAULT_LATENCY_THRESHOLD,
    command: Sequence[str] = (),
) -> Written:
    """Merge the inputs, compare with the baseline, seal, validate, and write both files."""
    from hil.report import html  # matplotlib and jinja only when a report is written

    sources = [model.load_source(path) for path in results]
    report = model.build(
        sources,
        title=title,
        generated=now_iso(),
        command=command,
        baseline=regression.load_baseline(baseline) if baseline else None,
        latency_threshold=latency_threshold,
    )
    report = document.seal(document.finite(report))
    document.validate(report, "the report just built")
    out.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out / JSON_NAME, out / HTML_NAME
    write_json(json_path, report)
    html_path.write_text(html.render(report), encoding="utf-8")
    log.info("wrote %s and %s", json_path, html_path)
    return Written(
        out,
        json_path,
        html_path,
        report["digest"]["value"],
        report["summary"],
        report["regression"],
    )


def verify_file(path: Path) -> document.Verification:
    """Schema first (a malformed file is an error), then the digest (a changed one is a finding)."""
    return document.verify(document.read_report(path))
