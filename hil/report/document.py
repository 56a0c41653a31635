"""report.json as a document: canonical form, content hash, schema validation, reading, writing.

The content hash (the `digest` member) is the SHA-256 of the report's canonical JSON with the
`digest` member left out (keys sorted, no whitespace, ASCII only, no NaN). Any edit to any value
changes it; re-serialising the same content never does. It says the file is unchanged since it
was sealed, not who sealed it: anyone can seal an edited report again. Who wrote a report is
what its signature says (hil.report.attestation).

Every JSON hil reads here refuses a member given twice: two parsers may keep different ones.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from hil.errors import ReportError

SCHEMA_NAME = "hil-certification-report"
# 3 added the 'quarantined' category, 4 the 'lowering' and 'device' questions, 5 the
# `certification` (certifiable, reasons) and the `evidence` a signature covers; a version 2 to 4
# report reads as it is (and is not certifiable: nothing judged its completeness)
SCHEMA_VERSION = 5
DIGEST_ALGORITHM = "sha256"
CANONICAL_FORM = "json: keys sorted, separators ',' ':', ASCII, no NaN, digest member excluded"


def finite(value: Any) -> Any:
    """JSON has no infinities or NaN: write them as the strings 'inf', '-inf', 'nan'."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def canonical_bytes(report: Mapping[str, Any]) -> bytes:
    content = {k: v for k, v in report.items() if k != "digest"}
    try:
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError as e:
        raise ReportError(
            f"the report holds a value JSON cannot carry: {e}",
            fix="pass every number through hil.report.document.finite() before sealing",
        ) from e
    return text.encode("ascii")


def compute_digest(report: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(report)).hexdigest()


def seal(report: dict[str, Any]) -> dict[str, Any]:
    """Set the report's digest over everything else in it."""
    report["digest"] = {
        "algorithm": DIGEST_ALGORITHM,
        "canonical_form": CANONICAL_FORM,
        "value": compute_digest(report),
    }
    return report


@dataclass(frozen=True)
class Verification:
    ok: bool
    recorded: str
    computed: str

    def __str__(self) -> str:
        if self.ok:
            return f"content hash verified: sha256 {self.computed} (unchanged since sealed)"
        return (
            f"content hash MISMATCH: the report records sha256 {self.recorded or '(none)'}, "
            f"its content hashes to {self.computed}; it was changed after it was written"
        )


def verify(report: Mapping[str, Any]) -> Verification:
    """Recompute the digest and compare it with the recorded one."""
    digest = report.get("digest")
    recorded = str(digest.get("value", "")) if isinstance(digest, Mapping) else ""
    computed = compute_digest(report)
    return Verification(recorded == computed, recorded, computed)


@functools.lru_cache(maxsize=1)
def schema() -> Mapping[str, Any]:
    text = resources.files("hil.report").joinpath("schema.json").read_text(encoding="utf-8")
    loaded: Mapping[str, Any] = json.loads(text)
    return loaded


def validate(report: Mapping[str, Any], source: str = "report") -> None:
    """Raise ReportError naming every place (up to ten) where the report breaks its schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    lines = [
        f"  at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}" for e in errors[:10]
    ]
    more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
    raise ReportError(
        f"{source} does not follow {SCHEMA_NAME} schema version {SCHEMA_VERSION}:\n"
        + "\n".join(lines)
        + more,
        fix="see hil/report/SCHEMA.md; a report from another hil version may need that version",
    )


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a member named twice is refused (readers disagree on which wins)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise json.JSONDecodeError(f"member {key!r} given twice", key, 0)
        found[key] = value
    return found


def parse_json(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicate_keys)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"{path} is not valid JSON: {e}") from e


def read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from e
    return parse_json(data, path)


def read_report(path: Path) -> dict[str, Any]:
    """A report.json, checked against the schema (its content hash is checked by `verify`)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ReportError(f"cannot read {path}: {e.strerror}") from e
    return read_report_bytes(data, path)


def read_report_bytes(data_bytes: bytes, path: Path) -> dict[str, Any]:
    """The report these bytes hold, checked against the schema."""
    data = parse_json(data_bytes, path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise ReportError(
            f'{path} is not a hil certification report (no "schema": "{SCHEMA_NAME}")',
            fix="pass a report.json written by `hil report`, or a results folder",
        )
    validate(data, str(path))
    return data
