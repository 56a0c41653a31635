"""The one writer of a results folder (hil.results): the plugin, the library and `hil check`
each hold a ResultsFolder and nothing else writes run.json or records.jsonl."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hil.results.files import RECORDS_FILE, RUN_FILE, now_iso, write_json
from hil.results.provenance import note_identities


class ResultsFolder:
    """run.json, written when the run starts (a run killed half-way still says what it was)
    and again when it ends; records.jsonl, a line appended as each check ends (a Ctrl-C loses
    nothing)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.records_path = folder / RECORDS_FILE
        self.run_path = folder / RUN_FILE

    def begin(self) -> None:
        """A new run: the folder made, its records emptied."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.records_path.write_text("")

    def append(self, record: Mapping[str, Any]) -> None:
        with self.records_path.open("a") as f:
            f.write(json.dumps(record, default=str) + "\n")

    def write_run(self, run: Mapping[str, Any]) -> None:
        write_json(self.run_path, run)

    def finish(
        self,
        run: dict[str, Any],
        *,
        exit_status: int,
        records: Iterable[Mapping[str, Any]],
        items: list[dict[str, Any]] | None = None,
    ) -> None:
        """The run's end: finish time, exit status, pytest's outcomes (when there are any)
        and the identities the targets reported, written."""
        run.update(finished=now_iso(), exit_status=int(exit_status))
        if items is not None:
            run["items"] = items
        note_identities(run, records)
        self.write_run(run)
