"""One run at a time writes a results folder: `<folder>/.lock`, held from the run's start to
its end.

An exclusive, non-blocking flock, not a pid file: the kernel drops it when the holding process
ends, however it ends (a SIGKILL, an OOM kill), so a dead run never keeps a folder busy and
nothing guesses whether a recorded pid is still alive. Non-blocking, because a second run that
waited would start long after it was asked to and its user would not know why; refused at once,
it is told who holds the folder and what to do. The file stays after release (deleting it would
let two runs lock two inodes of one name); its text names the last holder and is read only to
say who holds the folder when it is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from hil.errors import ResultsBusy

LOCK_FILE = ".lock"

FREE_FOLDER = (
    "give this run a folder of its own (pytest --hil-results-dir DIR, "
    "hil.Session(results_dir=DIR), hil check --results-dir DIR), or wait until that run ends "
    "(the folder is free the moment its process exits)"
)


@dataclass
class FolderLock:
    """A held lock: the open file whose flock it is (closing the file releases it)."""

    path: Path
    handle: IO[str]

    def release(self) -> None:
        if not self.handle.closed:
            self.handle.close()


def holder_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a run writes into the lock, so a refused run can name it."""
    command = run.get("command") or {}
    return {
        "run_id": run.get("run_id"),
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command.get("line") if isinstance(command, Mapping) else None,
        "started": run.get("started"),
    }


def hold(folder: Path, holder: Mapping[str, Any]) -> FolderLock:
    """The folder's lock, with `holder` written into it; ResultsBusy if a live run holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    # "a+", not "w": opening must not erase the holder's words before the lock is ours
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        text = handle.read()
        handle.close()
        raise _busy(folder, text) from None
    except BaseException:
        handle.close()
        raise
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(dict(holder), sort_keys=True) + "\n")
    handle.flush()
    return FolderLock(path, handle)


def _busy(folder: Path, text: str) -> ResultsBusy:
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:  # the holder has the lock and is still writing its name
        holder = None
    if not isinstance(holder, dict):
        return ResultsBusy(
            f"results folder {folder} is being written by another run (its .lock is held)",
            fix=FREE_FOLDER,
        )
    here = holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname()
    who = (
        f"run {holder.get('run_id')} (pid {holder.get('pid')} on {holder.get('host')}"
        f"{', this very process' if here else ''}, started {holder.get('started')})"
    )
    command = f": {holder['command']}" if holder.get("command") else ""
    return ResultsBusy(
        f"results folder {folder} is being written by {who}{command}",
        fix=FREE_FOLDER,
        holder=holder,
    )
