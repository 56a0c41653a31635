"""A board that can be flashed, for testing the flash step: a supervisor that keeps running
whatever runner image `STATE/image` names on its own stdin/stdout (the pty a HostRunnerBoard
gives it), restarting it when it exits, as a board reboots into freshly flashed firmware.

    python fake_board.py STATE_DIR -- [runner args]
    python fake_board.py --flash STATE_DIR IMAGE     (the device file's flash command)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def supervise(state: Path, args: list[str]) -> None:
    while True:
        image = (state / "image").read_text().strip()
        child = subprocess.Popen([image, *args], stdin=0, stdout=1, stderr=2)
        (state / "pid").write_text(str(child.pid))
        if child.wait() == 0:
            return  # the link closed: the host is gone
        time.sleep(0.05)


def flash(state: Path, image: str) -> None:
    (state / "image").write_text(image)
    with (state / "flashed").open("a") as log:
        log.write(image + "\n")
    os.kill(int((state / "pid").read_text()), signal.SIGTERM)  # "reboot" into the new image


if __name__ == "__main__":
    if sys.argv[1] == "--flash":
        flash(Path(sys.argv[2]), sys.argv[3])
    else:
        supervise(Path(sys.argv[1]), sys.argv[3:])
