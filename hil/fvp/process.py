"""One running FVP: started on a pseudo-terminal, its output kept in a log file, stopped gently.

The FVP's standard output and error go to a pty (so the C library line-buffers them: a line
such as "telnetterminal0: Listening ..." is seen when printed, not when a 4 KiB buffer fills);
a pump thread copies them into the log file and keeps this run's text for the parsers in
hil.fvp.output. `start()` waits for telnet terminal 0's port line and classifies an FVP that
ends first: licence failure (FvpLicenceError, a skip) or any other refusal (FvpStartError).
`stop()` interrupts the simulation (SIGINT: the FVP prints its --stat block) and kills it
only if it lingers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
import tty
from pathlib import Path
from typing import IO

from hil.fvp import output
from hil.fvp.command import FvpCommand
from hil.fvp.errors import FvpLicenceError, FvpStartError
from hil.fvp.locate import LICENCE_FIX

STOP_WAIT_S = 10.0


class FvpProcess:
    """An FVP process and its log; nothing starts in the constructor."""

    def __init__(self, name: str, command: FvpCommand, log_path: Path, cwd: Path) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.cwd = cwd
        self._process: subprocess.Popen[bytes] | None = None
        self._text: list[str] = []
        self._changed = threading.Condition()
        self._pump: threading.Thread | None = None
        self._log_file: IO[bytes] | None = None
        self.log = logging.getLogger(f"hil.fvp.FvpProcess({name})")

    # -- start -----------------------------------------------------------------------------

    def start(self, timeout_s: float) -> int:
        """Start the FVP; return the TCP port of its telnet terminal 0."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("ab")
        self._log_file.write(f"--- {time.strftime('%H:%M:%S')} {self.command.render()}\n".encode())
        self._log_file.flush()
        master, slave = os.openpty()
        tty.setraw(slave)  # no \n -> \r\n translation, no echo
        try:
            self._process = subprocess.Popen(
                list(self.command.argv),
                stdin=subprocess.DEVNULL,
                stdout=slave,
                stderr=slave,
                cwd=self.cwd,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as e:
            os.close(master)
            raise FvpStartError(
                f"{self.name}: cannot start {self.command.argv[0]}: {e}",
                fix="check that the FVP binary runs by hand (`hil doctor`)",
            ) from e
        finally:
            os.close(slave)
        self._pump = threading.Thread(
            target=self._copy, args=(master,), name=f"fvp-output-{self.name}", daemon=True
        )
        self._pump.start()
        self.log.info("FVP pid %s; log %s", self._process.pid, self.log_path)
        return self._wait_for_port(timeout_s)

    def _wait_for_port(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                text = "".join(self._text)
                port = output.terminal_port(text)
                if port is not None:
                    return port
                if not self.alive() and (self._pump is None or not self._pump.is_alive()):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, 0.5))
        raise self._start_failure(timeout_s)

    def _start_failure(self, timeout_s: float) -> Exception:
        alive = self.alive()
        if not alive:
            self.wait_exit(2.0)
        text = self.text()
        tail = "\n".join(text.strip().splitlines()[-12:])
        problem = output.licence_problem(text)
        if problem:
            self.stop()
            return FvpLicenceError(
                f"{self.name}: {self.command.argv[0]} refused to run: {problem}",
                fix=LICENCE_FIX,
            )
        what = (
            f"did not offer its UART (telnetterminal0) within {timeout_s:.0f} s"
            if alive
            else f"ended before offering its UART ({self.exit_description()})"
        )
        self.stop()
        return FvpStartError(
            f"{self.name}: the FVP {what}; its last words:\n{tail}\n  command: "
            f"{self.command.render()}",
            fix=f"run the command by hand; check connection.params against the FVP's "
            f"`--list-params`; full log: {self.log_path}",
        )

    def _copy(self, master: int) -> None:
        try:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer has gone
                    break
                if not data:
                    break
                with self._changed:
                    if self._log_file is not None:
                        self._log_file.write(data)
                        self._log_file.flush()
                    self._text.append(data.decode("utf-8", "replace"))
                    self._changed.notify_all()
        finally:
            os.close(master)
            with self._changed:
                self._changed.notify_all()

    # -- state -----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def wait_exit(self, timeout_s: float) -> bool:
        """True when the FVP has ended within `timeout_s` (its output then read to the end)."""
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        return True

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process else None

    def exit_description(self) -> str:
        code = self.returncode
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exited with status {code}"

    def text(self) -> str:
        """Everything this FVP printed since it started."""
        with self._changed:
            return "".join(self._text)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.text().strip().splitlines()[-lines:])

    # -- stop ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Interrupt the simulation (the FVP prints its statistics), kill it if it lingers."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)  # as Ctrl-C: the FVP stops the simulation
            if not self.wait_exit(STOP_WAIT_S):
                self.log.warning(
                    "FVP pid %s ignored SIGINT for %.0f s; killing it", process.pid, STOP_WAIT_S
                )
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # and anything it started
            self.wait_exit(5.0)
        if self._pump is not None:
            self._pump.join(timeout=2.0)
        with self._changed:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None
