"""Signal a virtual board's runner from a watcher thread once its log shows a case running, so
a test can kill (crash) or stop (silence) the runner in the middle of that case."""

from __future__ import annotations

import os
import signal
import threading
import time

from hil.resources.virtual_boards import HostRunnerBoard


def signal_when_logged(
    board: HostRunnerBoard, marker: bytes, sig: signal.Signals, timeout: float = 60.0
) -> threading.Thread:
    """Send `sig` to the runner 0.2 s after its log, from now on, shows `marker`."""
    log = board.log_path
    assert log is not None
    start = log.stat().st_size

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with log.open("rb") as f:
                f.seek(start)
                if marker in f.read():
                    time.sleep(0.2)
                    os.kill(board.pid, sig)  # type: ignore[arg-type]
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread
