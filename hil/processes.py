"""Ending child processes (runners, emulators, sshd, exporters) politely, then firmly."""

from __future__ import annotations

import subprocess
from typing import Any


def stop_process(process: subprocess.Popen[Any], grace_s: float = 5.0, *, ask: bool = True) -> None:
    """End `process`: SIGTERM, wait `grace_s`, then SIGKILL and reap it.

    With `ask=False` the process is first given `grace_s` to end on its own (it was told to
    by other means, such as its stdin closing) before it is terminated.
    """
    if process.poll() is not None:
        return
    if not ask:
        try:
            process.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            pass
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)
