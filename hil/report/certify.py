"""Writing and checking a certification report: results folders in, report.json + report.html
out (and, with the lab's key, the signed attestation beside them).

This is what `hil report` and `pytest --hil-report DIR` both call.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hil.errors import ReportError, SigningError
from hil.report import attestation, document, gate, inputs, model, regression
from hil.report.gate import ReportExit
from hil.results.files import now_iso
from hil.signing import LabKey, TrustedKey

log = logging.getLogger("hil.report")

JSON_NAME = attestation.REPORT_JSON
HTML_NAME = attestation.REPORT_HTML
ENVELOPE_NAME = attestation.ENVELOPE_NAME
DEFAULT_TITLE = "hil certification report"


class NotCertifiable(SigningError):
    """`--sign` on a report that is not certifiable: it is written, to be studied, not signed."""


@dataclass(frozen=True)
class Written:
    folder: Path
    json_path: Path
    html_path: Path
    digest: str
    summary: dict[str, Any]
    regression: dict[str, Any] | None
    certification: dict[str, Any]
    exit_code: ReportExit
    envelope_path: Path | None = None


def write_report(
    results: Sequence[Path],
    out: Path,
    *,
    baseline: Path | None = None,
    title: str = DEFAULT_TITLE,
    latency_threshold: float = regression.DEFAULT_LATENCY_THRESHOLD,
    command: Sequence[str] = (),
    trusted: TrustedKey | None = None,
    sign_with: LabKey | None = None,
) -> Written:
    """Merge the inputs, compare with the baseline, judge, seal, validate, render both files,
    then put them in place together; with `sign_with`, sign a certifiable report (a report
    that is not is still written, and NotCertifiable names its reasons)."""
    from hil.report import html  # matplotlib and jinja only when a report is written

    sources = [inputs.load_source(path, trusted) for path in results]
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
    json_text = json.dumps(report, sort_keys=True, indent=2, allow_nan=False) + "\n"
    html_text = html.render(report)  # rendered before anything is replaced
    json_path, html_path = out / JSON_NAME, out / HTML_NAME
    _put_in_place(out, {json_path: json_text, html_path: html_text})
    log.info("wrote %s and %s", json_path, html_path)
    written = Written(
        out,
        json_path,
        html_path,
        report["digest"]["value"],
        report["summary"],
        report["regression"],
        report["certification"],
        gate.exit_code(report),
    )
    if sign_with is None:
        return written
    if not report["certification"]["certifiable"]:
        raise NotCertifiable(
            "the report is not certifiable, so it was written but not signed:\n  - "
            + "\n  - ".join(report["certification"]["reasons"]),
            fix="run again from a clean checkout to the end, with release runners, then sign",
        )
    envelope = attestation.sign(out, sign_with)
    return replace(written, envelope_path=envelope)


def _put_in_place(out: Path, files: dict[Path, str]) -> None:
    """Both files written beside their places first, then moved in: a failure leaves the
    earlier pair as it was, and an earlier signature never stands beside a new report."""
    out.mkdir(parents=True, exist_ok=True)
    staged = []
    try:
        for path, text in files.items():
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            staged.append((tmp, path))
    except OSError as e:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise ReportError(f"cannot write the report into {out}: {e.strerror}") from e
    (out / ENVELOPE_NAME).unlink(missing_ok=True)
    for tmp, path in staged:
        tmp.replace(path)


def verify_file(path: Path) -> document.Verification:
    """Schema first (a malformed file is an error), then the content hash (a changed one is a
    finding)."""
    return document.verify(document.read_report(path))
