"""The one writer of a results folder (hil.results): the plugin, the library and `hil check`
each hold a ResultsFolder and nothing else writes run.json or records.jsonl."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hil.results.earlier import put_aside
from hil.results.files import RECORDS_FILE, RUN_FILE, now_iso, write_json
from hil.results.lock import FolderLock, hold, holder_of
from hil.results.provenance import note_identities


class ResultsFolder:
    """One run's hold on a results folder, from begin() to release().

    begin() takes the folder's lock (a second run is refused with ResultsBusy, not mixed in),
    moves an earlier run's files into `earlier/<run_id>/` (never deleted), and writes run.json
    (a run killed half-way still says what it was). Each check's record is appended to
    records.jsonl as it ends (a Ctrl-C loses nothing), counted and hashed as written, so
    finish() can put into run.json how many lines are the run's and the sha256 of their bytes:
    a record dropped, added or edited later no longer matches. release() (or the process's
    end) frees the folder for the next run.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.records_path = folder / RECORDS_FILE
        self.run_path = folder / RUN_FILE
        self._lock: FolderLock | None = None
        self._count = 0
        self._digest = hashlib.sha256()

    @property
    def holding(self) -> bool:
        """Whether this run holds the folder (only then may it write there)."""
        return self._lock is not None

    def begin(self, run: Mapping[str, Any]) -> Path | None:
        """A new run: the folder held (ResultsBusy if another run holds it), the earlier run
        moved aside, records.jsonl started empty, run.json written. Returns where the earlier
        run went (None: there was none)."""
        if self._lock is not None:
            raise RuntimeError(f"{self.folder}: begin() twice without release()")
        self._lock = hold(self.folder, holder_of(run))
        try:
            moved = put_aside(self.folder)
            self.records_path.write_bytes(b"")
            self._count, self._digest = 0, hashlib.sha256()
            self.write_run(run)
        except BaseException:
            self.release()
            raise
        return moved

    def append(self, record: Mapping[str, Any]) -> None:
        line = (json.dumps(record, default=str) + "\n").encode("utf-8")
        with self.records_path.open("ab") as f:
            f.write(line)
        self._count += 1
        self._digest.update(line)

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
        """The run's end: finish time, exit status, pytest's outcomes (when there are any),
        the identities the targets reported, and what records.jsonl holds (`records`: the
        number of lines this run appended and the sha256 of their bytes), written. The
        folder stays held until release(): a report made at the end still reads this run."""
        run.update(
            finished=now_iso(),
            exit_status=int(exit_status),
            records={"count": self._count, "sha256": self._digest.hexdigest()},
        )
        if items is not None:
            run["items"] = items
        note_identities(run, records)
        self.write_run(run)

    def release(self) -> None:
        """Free the folder for the next run (the kernel does it too if the process dies)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
