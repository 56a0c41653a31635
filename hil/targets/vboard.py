"""The virtual board: the host build of the runner with its link on a pseudo-terminal.

The runner gets the pty's master side as stdin/stdout; SerialTarget opens the slave path
(/dev/pts/N) with pyserial exactly as it opens a board's /dev/ttyACM0. This object keeps a
slave descriptor open for the board's whole life, so the pty survives the port being closed
and reopened, and the runner's stderr in a log file, which becomes the crash report's tail.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import tty
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from hil.errors import TransportError
from hil.targets.board import board_log_dir, tail


class HostRunnerBoard:
    def __init__(self, name: str, runner: Path, args: Sequence[str] = ()) -> None:
        self.name = name
        self.runner = runner
        self.args = list(args)
        self._process: subprocess.Popen[bytes] | None = None
        self._slave: int | None = None
        self._log_file: IO[bytes] | None = None
        self._log_path: Path | None = None
        self.log = logging.getLogger(f"hil.board.HostRunnerBoard({name})")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def start(self) -> str:
        self.stop()
        folder = board_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self._log_path = (folder / f"{self.name}.log").resolve()
        self._log_file = self._log_path.open("ab")
        self._log_file.write(f"--- {time.strftime('%H:%M:%S')} starting {self.runner}\n".encode())
        self._log_file.flush()
        master, slave = os.openpty()
        try:
            tty.setraw(slave)  # no echo, no line editing: the link must carry bytes untouched
            path = os.ttyname(slave)
            self._process = subprocess.Popen(
                [str(self.runner), "--stdio", *self.args],
                stdin=master, stdout=master, stderr=self._log_file, close_fds=True,
                start_new_session=True,
            )
        except OSError as e:
            os.close(slave)
            raise TransportError(
                f"{self.name}: cannot start the host runner {self.runner}: {e}"
            ) from e
        finally:
            os.close(master)  # the runner holds it now; its death then hangs up the pty
        self._slave = slave
        self.log.info("runner pid %d on %s; log %s", self._process.pid, path, self._log_path)
        return path

    def alive(self) -> bool | None:
        return self._process is not None and self._process.poll() is None

    def wait_exit(self, timeout: float) -> bool:
        """True when the runner has ended within `timeout` s."""
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def exit_description(self) -> str:
        if self._process is None or self._process.returncode is None:
            return "still running"
        code = self._process.returncode
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def log_tail(self, lines: int = 30) -> str:
        return tail(self._log_path, lines)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=3)
        if self._slave is not None:
            os.close(self._slave)
            self._slave = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
