"""Exclusive file locks: two processes (xdist workers, CI jobs) never build the same thing."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: Path, unwritable: Callable[[OSError], Exception]) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created with its folder) for the block's duration.

    If the lock file cannot be created, `unwritable(error)` is raised instead, so each store
    says in its own words which folder is not writable; errors inside the block pass untouched.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("w")
    except OSError as e:
        raise unwritable(e) from e
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
