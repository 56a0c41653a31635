"""A results folder's file names and the JSON and clock conventions its writer and its reader
share (no torch here: `hil report` imports this)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"
RECORDS_FILE = "records.jsonl"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Indented for people; replaced whole, so a reader never sees half a document."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, sort_keys=True, indent=2, allow_nan=False)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
