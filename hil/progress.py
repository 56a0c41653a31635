"""Progress lines for long work: a callable that takes one line, and a heartbeat."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

Progress = Callable[[str], None]


@contextlib.contextmanager
def heartbeat(progress: Progress, what: str, every_s: float = 5.0) -> Iterator[None]:
    """Say `what` is still going every few seconds, so a long export is never silent."""
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(every_s):
            progress(f"{what} ({time.monotonic() - started:.0f} s so far)")

    thread = threading.Thread(target=beat, name="hil-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
