"""The signed certificate: an in-toto attestation (Statement v1) in a DSSE envelope, signed with
the lab's key (hil.signing), written beside the report as `report.intoto.jsonl`.

Its subjects are the exact bytes the report vouches for, by sha256: report.json, report.html,
each input's run.json and records.jsonl (or input report), each .pte and each runner binary.
Its predicate is what was certified: certifiable or not and why, the summary, the runs'
provenance, the exit code the report gates with. Supply-chain tools read this format as it is
(`securesystemslib.dsse.Envelope.from_dict(...).verify([key], 1)`, in-toto's and Sigstore's
verifiers); hil adds nothing they would have to learn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.errors import ReportAltered, ReportError, SignatureInvalid
from hil.hashing import bytes_sha256, file_sha256
from hil.report import document
from hil.signing import LabKey, TrustedKey, open_envelope, seal_envelope

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
# A type URI of hil's own: what the predicate means is documented in hil/report/SCHEMA.md
PREDICATE_TYPE = "https://hil.invalid/attestation/certification-report/v1"
ENVELOPE_NAME = "report.intoto.jsonl"  # beside report.json: one DSSE envelope, one line
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"


def statement(report: Mapping[str, Any], json_bytes: bytes, html_bytes: bytes) -> dict[str, Any]:
    """The in-toto Statement for a written report: its files and evidence as subjects."""
    from hil.report import gate

    subjects = [
        _subject(REPORT_JSON, bytes_sha256(json_bytes)),
        _subject(REPORT_HTML, bytes_sha256(html_bytes)),
        *(_subject(e["name"], e["sha256"]) for e in report.get("evidence") or []),
    ]
    runs = [
        {
            key: run.get(key)
            for key in ("run_id", "started", "finished", "exit_status", "git", "tools", "machine")
        }
        | {"command": (run.get("command") or {}).get("line")}
        for run in report["runs"]
    ]
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "title": report["title"],
            "generated": report["generated"],
            "generator": report["generator"],
            "content_hash": report["digest"],
            "certification": report["certification"],
            "exit_code": int(gate.exit_code(report)),
            "summary": report["summary"],
            "runs": runs,
            "evidence": report.get("evidence") or [],
        },
    }


def sign(folder: Path, key: LabKey) -> Path:
    """Sign the report in `folder` (written and certifiable) and write its envelope."""
    json_bytes = (folder / REPORT_JSON).read_bytes()
    report = document.read_report_bytes(json_bytes, folder / REPORT_JSON)
    payload = json.dumps(
        statement(report, json_bytes, (folder / REPORT_HTML).read_bytes()),
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    envelope = seal_envelope(payload, PAYLOAD_TYPE, key)
    path = folder / ENVELOPE_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(envelope, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def open_statement(envelope_path: Path, key: TrustedKey) -> dict[str, Any]:
    """The Statement in an envelope file, once its signature verifies with `key`."""
    try:
        lines = [line for line in envelope_path.read_text("utf-8").splitlines() if line.strip()]
    except OSError as e:
        raise ReportError(f"cannot read {envelope_path}: {e.strerror}") from e
    if len(lines) != 1:
        raise SignatureInvalid(
            f"{envelope_path} holds {len(lines)} envelopes; hil writes one",
            fix="give the report.intoto.jsonl `hil report --sign` wrote",
        )
    envelope = document.parse_json(lines[0].encode(), envelope_path)
    if not isinstance(envelope, dict):
        raise SignatureInvalid(f"{envelope_path} is not a DSSE envelope")
    payload = open_envelope(envelope, key, PAYLOAD_TYPE)
    found = document.parse_json(payload, envelope_path)
    if (
        not isinstance(found, dict)
        or found.get("_type") != STATEMENT_TYPE
        or found.get("predicateType") != PREDICATE_TYPE
    ):
        raise SignatureInvalid(
            f"{envelope_path} is signed, but is not a hil certification attestation",
            fix="give the report.intoto.jsonl `hil report --sign` wrote",
        )
    return found


def subject_digest(found: Mapping[str, Any], name: str) -> str | None:
    for subject in found.get("subject") or []:
        if subject.get("name") == name:
            return str((subject.get("digest") or {}).get("sha256"))
    return None


@dataclass(frozen=True)
class Verified:
    """What `hil report --verify --key` found: who signed, what was checked, what was not."""

    signer: str
    certifiable: bool
    reasons: tuple[str, ...]
    exit_code: int
    checked: tuple[str, ...]
    not_at_hand: tuple[str, ...] = field(default=())

    def lines(self) -> list[str]:
        out = [
            f"signature verified: signed by {self.signer}",
            f"{len(self.checked)} subject(s) checked by sha256: "
            + ", ".join(self.checked[:6])
            + (" ..." if len(self.checked) > 6 else ""),
        ]
        if self.not_at_hand:
            out.append(
                f"{len(self.not_at_hand)} subject(s) not on this machine, not checked "
                "(give them with --evidence): "
                + ", ".join(self.not_at_hand[:4])
                + (" ..." if len(self.not_at_hand) > 4 else "")
            )
        return out


def verify(folder: Path, key: TrustedKey, given: Sequence[Path] = ()) -> Verified:
    """Signature first; then report.json and report.html beside it (always), each other
    subject whose file is where it was, and each file given (it must be one of the subjects).
    Any difference raises ReportAltered naming the file."""
    envelope = folder / ENVELOPE_NAME
    if not envelope.exists():
        raise SignatureInvalid(
            f"{folder} holds no {ENVELOPE_NAME}: the report was never signed",
            fix="sign it with `hil report --sign KEY` when it is written",
        )
    found = open_statement(envelope, key)
    wanted = {s["name"]: str(s["digest"]["sha256"]) for s in found["subject"]}
    checked = []
    for name in (REPORT_JSON, REPORT_HTML):
        _compare(folder / name, wanted.get(name), name)
        checked.append(name)
    predicate = found["predicate"]
    not_at_hand = []
    for item in predicate.get("evidence") or []:
        path = _where(item)
        if path is None:
            not_at_hand.append(item["name"])
            continue
        _compare(path, wanted.get(item["name"]), item["name"])
        checked.append(item["name"])
    digests = {digest: name for name, digest in wanted.items()}
    for path in given:
        match = digests.get(file_sha256(path))
        if match is None:
            raise ReportAltered(
                f"{path} is none of the files this report vouches for (no subject has its sha256)",
                fix="give the .pte, runner or results file the report was made from",
            )
        checked.append(f"{match} ({path})")
    certification = predicate.get("certification") or {}
    return Verified(
        signer=key.describe(),
        certifiable=bool(certification.get("certifiable")),
        reasons=tuple(certification.get("reasons") or ()),
        exit_code=int(predicate.get("exit_code", 3)),
        checked=tuple(checked),
        not_at_hand=tuple(not_at_hand),
    )


def _where(item: Mapping[str, Any]) -> Path | None:
    """Where a subject's file is now: its results folder's copy of an earlier run first (a
    folder that moved on keeps the run it held in earlier/<run_id>/), then where it was."""
    if not item.get("path"):
        return None
    path = Path(item["path"])
    if item.get("run"):
        moved = path.parent / "earlier" / str(item["run"]) / path.name
        if moved.is_file():
            return moved
    return path if path.is_file() else None


def _compare(path: Path, wanted: str | None, name: str) -> None:
    if wanted is None:
        raise ReportAltered(f"the attestation has no subject {name}")
    try:
        actual = file_sha256(path)
    except OSError as e:
        raise ReportAltered(f"{name}: cannot read {path}: {e.strerror}") from e
    if actual != wanted:
        raise ReportAltered(
            f"{path} is not the {name} that was signed (sha256 {actual[:16]}..., signed "
            f"{wanted[:16]}...): it changed after signing",
            fix="a report or run that changed must be made and signed again",
        )


def _subject(name: str, sha256: str) -> dict[str, Any]:
    return {"name": name, "digest": {"sha256": sha256}}
