"""Taking back places that a hard-killed hil process left acquired.

labgrid ties an acquired place to a "host/user" name, not to a connection: when the process
holding it dies without releasing (SIGKILL, the machine lost power), the coordinator keeps
the place acquired, and its reservation in state "acquired", with no timeout, until someone
releases it (`labgrid-client -p PLACE release --kick`). Every other job waits for it.

So each lease hil takes is noted in a small file on this host (pid and start time of the
holder, the place, hil's reservation token), and removed when released. Before leasing, hil
looks at the notes for the same coordinator: a place whose holder process is gone and that
the coordinator still shows acquired by this same host/user is released (and the stale
reservation cancelled). Only this host's own notes are trusted: a place held from another
host, or by another user, is never touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from hil.lab.client import LabClient
from hil.lab.errors import LabError
from hil.lab.lease import Lease, matches

log = logging.getLogger("hil.lab.stale")


def lease_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hil" / "labgrid-leases"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


class LeaseBook:
    """The notes of one coordinator's leases held from this host."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def for_coordinator(cls, address: str, root: Path | None = None) -> LeaseBook:
        return cls((root or lease_dir()) / re.sub(r"[^A-Za-z0-9_.-]+", "_", address))

    def _path(self, place: str) -> Path:
        return self.folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', place)}.json"

    def note(self, lease: Lease) -> None:
        note = {
            "place": lease.place,
            "token": lease.token,
            "pid": os.getpid(),
            "start": _start_time(os.getpid()),
        }
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._path(lease.place).write_text(json.dumps(note))
        except OSError as e:  # a note that cannot be written only loses the clean-up
            log.warning("cannot note the lease of %s in %s: %s", lease.place, self.folder, e)

    def forget(self, lease: Lease) -> None:
        path = self._path(lease.place)
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # only when no other lease of this coordinator is noted

    def reclaim(self, client: LabClient, filters: Mapping[str, str]) -> list[str]:
        """Release the pool's places whose noted holder on this host is gone; their names."""
        if not self.folder.is_dir():
            return []
        identity = client.identity
        places = client.places()
        taken_back = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                note = json.loads(path.read_text())
                pid, place_name = int(note["pid"]), str(note["place"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if _start_time(pid) is not None and _start_time(pid) == note.get("start"):
                continue  # its holder still runs
            place = places.get(place_name)
            ours = place is not None and place.acquired == identity
            if ours and place is not None and not matches(place, filters):
                continue  # another pool's: left for a run that uses it
            if ours:
                try:
                    client.release(place_name)
                    if note.get("token"):
                        with contextlib.suppress(LabError):
                            client.cancel(str(note["token"]))
                except LabError as e:
                    log.warning("could not take back %s: %s", place_name, e.message)
                    continue
                log.warning(
                    "took back place %s, left acquired by process %d, which is gone",
                    place_name,
                    pid,
                )
                taken_back.append(place_name)
            with contextlib.suppress(OSError):
                path.unlink()
        return taken_back
