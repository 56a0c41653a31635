"""Virtual boards: a runner in a local process, reached over a serial port URL like a board.

    HostRunnerBoard  the host build of the runner with its link on a pseudo-terminal: the
                     runner gets the pty's master side as stdin/stdout, the SerialTarget opens
                     the slave path (/dev/pts/N) exactly as it opens a board's /dev/ttyACM0.
    QemuBoard        the bare-metal runner in QEMU's mps3-an547 (the Corstone-300 FPGA map),
                     its UART0 on a pty QEMU creates, semihosting as its console.

Each keeps its process's output in a log file under the results folder; its tail becomes a
crash report's last words. A slave descriptor of the host runner's pty stays open for the
board's life, so the pty survives the port being closed and reopened.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import time
import tty
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from hil.errors import HilError, InfrastructureError, TargetUnavailable, TransportError
from hil.processes import stop_process
from hil.resources.logs import board_log_dir, tail

QEMU_BOOT_S = 15.0


class ProcessBoard:
    """Process, log file and shutdown shared by the virtual boards."""

    restart_note = "the next case starts the runner again"
    log_label = "board log"

    def __init__(self, name: str) -> None:
        self.name = name
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._log_path: Path | None = None
        self.log = logging.getLogger(f"hil.board.{type(self).__name__}({name})")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def _open_log(self, what: str) -> IO[bytes]:
        folder = board_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        # one file per board and test process: parallel workers do not mix their logs
        self._log_path = (folder / f"{self.name}-{os.getpid()}.log").resolve()
        self._log_file = self._log_path.open("ab")
        self._log_file.write(f"--- {time.strftime('%H:%M:%S')} starting {what}\n".encode())
        self._log_file.flush()
        return self._log_file

    def _spawn(self, argv: list[str], **popen: Any) -> None:
        try:
            self._process = subprocess.Popen(argv, close_fds=True, start_new_session=True, **popen)
        except OSError as e:
            raise TransportError(f"{self.name}: cannot start {argv[0]}: {e}") from e

    def alive(self) -> bool | None:
        return self._process is not None and self._process.poll() is None

    def wait_exit(self, timeout: float) -> bool:
        """True when the process has ended within `timeout` s."""
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def gone(self) -> str | None:
        """How the runner ended (a runner that just faulted takes a moment to die)."""
        if not self.wait_exit(1.0):
            return None
        return self.exit_description()

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None:
        return None

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
        if process is not None:
            stop_process(process, grace_s=3)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


class HostRunnerBoard(ProcessBoard):
    def __init__(self, name: str, runner: Path, args: Sequence[str] = ()) -> None:
        super().__init__(name)
        self.runner = runner
        self.args = list(args)
        self._slave: int | None = None

    def start(self) -> str:
        self.stop()
        log_file = self._open_log(str(self.runner))
        master, slave = os.openpty()
        try:
            tty.setraw(slave)  # no echo, no line editing: the link must carry bytes untouched
            path = os.ttyname(slave)
            self._spawn(
                [str(self.runner), "--stdio", *self.args],
                stdin=master,
                stdout=master,
                stderr=log_file,
            )
        except BaseException:
            os.close(slave)
            raise
        finally:
            os.close(master)  # the runner holds it now; its death then hangs up the pty
        self._slave = slave
        self.log.info("runner pid %s on %s; log %s", self.pid, path, self._log_path)
        return path

    def stop(self) -> None:
        super().stop()
        if self._slave is not None:
            os.close(self._slave)
            self._slave = None


class QemuBoard(ProcessBoard):
    """QEMU mps3-an547 with `-icount shift=0`, so cycle counts are deterministic.

    `semihosting=False` starts QEMU without it, as a board without a debugger: a runner that
    still made a semihosting call would take a HardFault (the guard's test)."""

    def __init__(
        self, name: str, image: Path, args: Sequence[str] = (), *, semihosting: bool = True
    ) -> None:
        super().__init__(name)
        self.image = image
        self.args = list(args)
        self.semihosting = semihosting

    def command(self, qemu: str) -> list[str]:
        served = ["-semihosting-config", "enable=on,target=native"] if self.semihosting else []
        return [
            qemu,
            "-M",
            "mps3-an547",
            "-m",
            "2G",
            "-nographic",
            "-icount",
            "shift=0",
            *served,
            "-kernel",
            str(self.image),
            "-serial",
            "pty",
            "-monitor",
            "none",
            *self.args,
        ]

    def start(self) -> str:
        self.stop()
        qemu = shutil.which("qemu-system-arm")
        if qemu is None:
            raise TargetUnavailable(
                "qemu-system-arm is not installed", fix="apt-get install qemu-system-arm"
            )
        log_file = self._open_log(" ".join(self.command(qemu)))
        assert self._log_path is not None
        start = self._log_path.stat().st_size
        self._spawn(self.command(qemu), stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file)
        deadline = time.monotonic() + QEMU_BOOT_S
        while time.monotonic() < deadline:
            with self._log_path.open("rb") as f:
                f.seek(start)
                found = re.search(rb"char device redirected to (\S+) \(label serial0\)", f.read())
            if found:
                path = found.group(1).decode()
                self.log.info("qemu pid %s, UART0 on %s; log %s", self.pid, path, self._log_path)
                return path
            if not self.alive():
                break
            time.sleep(0.02)
        tail_text = self.log_tail(10)
        self.stop()
        raise TransportError(
            f"{self.name}: QEMU did not offer its UART within {QEMU_BOOT_S:.0f} s:\n{tail_text}",
            fix=f"run the command at the top of {self._log_path} by hand to see why",
        )
