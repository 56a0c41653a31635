"""A new run never overwrites the one a results folder held: it moves it aside first.

Under the folder's lock (hil.results.lock), a run that finds another run's `run.json` or a
non-empty `records.jsonl` moves both, as they are, into `earlier/<that run_id>/` before it
writes its own. The two files of one run stay together and byte for byte (a report made from
the earlier run still verifies), and `hil report --results <folder>/earlier/<run_id>` reads
it like any results folder. Arrays (`arrays/*.npz`) stay where they are: a check that writes
the same name replaces them, and each record's `arrays_sha256` tells whose file is there.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
from pathlib import Path

from hil.results.files import RECORDS_FILE, RUN_FILE

EARLIER = "earlier"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")


def put_aside(folder: Path) -> Path | None:
    """Move the folder's earlier run into `earlier/<run_id>/` (a fresh folder: never one that
    exists); its path, or None when there was nothing to keep (an empty records.jsonl and no
    run.json is nothing)."""
    run_path, records_path = folder / RUN_FILE, folder / RECORDS_FILE
    records = records_path.is_file() and records_path.stat().st_size > 0
    if not run_path.is_file() and not records:
        return None
    target = _fresh(folder / EARLIER, _run_id(run_path) or _unknown_name(records_path))
    if records_path.is_file():
        os.replace(records_path, target / RECORDS_FILE)
    if run_path.is_file():
        os.replace(run_path, target / RUN_FILE)
    return target


def _run_id(run_path: Path) -> str | None:
    """The earlier run's id, if its run.json names one that is a safe folder name."""
    try:
        run = json.loads(run_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    run_id = run.get("run_id") if isinstance(run, dict) else None
    return run_id if isinstance(run_id, str) and _SAFE_NAME.fullmatch(run_id) else None


def _unknown_name(records_path: Path) -> str:
    """A folder with records and no (readable) run.json: named by when its records were last
    written, and a random part."""
    try:
        written = dt.datetime.fromtimestamp(records_path.stat().st_mtime, dt.UTC)
        stamp = written.strftime("%Y%m%dT%H%M%S")
    except OSError:
        stamp = "undated"
    return f"unknown-{stamp}-{secrets.token_hex(3)}"


def _fresh(parent: Path, name: str) -> Path:
    """`parent/name`, made now; `name-2`, `name-3`... if it exists (a copied-back run)."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        path = parent / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent}: no free name for {name}")
