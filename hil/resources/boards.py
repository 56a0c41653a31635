"""Boards: what is on the other end of a serial target's link, and how to (re)start it.

A board only knows how to come up and give a port URL, whether its runner has ended, what it
logged, and how to stop. It is a runner site (hil.runner.driver.RunnerSite); the driver speaks
the protocol over the URL the same way whatever the board is:

    connection: {port: /dev/ttyACM0, ...}   PortBoard: a real board on a port URL
    connection: {virtual: host-runner}      HostRunnerBoard: the host runner on a pty
    connection: {virtual: qemu-mps3-an547}  QemuBoard: the bare-metal runner in QEMU
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path
from typing import Protocol

from hil.errors import (
    DeviceSpecError,
    HilError,
    InfrastructureError,
    LinkLost,
    TargetUnavailable,
    TransportError,
)
from hil.settings.serial import SerialSettings, VirtualBoard


class Board(Protocol):
    name: str

    def start(self) -> str:
        """Bring the board up (start a process, reset it); return the serial port URL."""
        ...

    def gone(self) -> str | None:
        """How the runner ended, once it has; None while it runs or when the board cannot
        tell (a real board)."""
        ...

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None: ...

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the board logged outside the protocol (stderr, semihosting)."""
        ...

    @property
    def log_path(self) -> Path | None: ...

    @property
    def restart_note(self) -> str: ...

    @property
    def log_label(self) -> str: ...

    def stop(self) -> None:
        """Shut down; safe to call twice."""
        ...


class PortLost(LinkLost):
    """A board's port went away under a step (unplugged, or a USB re-enumeration)."""


class PortBoard:
    """A real board on a port URL; it can be reset by a command, and cannot tell if it is alive."""

    restart_note = "the next case starts the runner again (resetting the board if it can)"
    log_label = "board log"

    def __init__(self, name: str, url: str, reset_command: tuple[str, ...] = ()) -> None:
        self.name = name
        self.url = url
        self.reset_command = reset_command
        self.log = logging.getLogger(f"hil.board.PortBoard({name})")

    def start(self) -> str:
        """The port; a device path that does not exist is a board that is not connected
        (a URL, socket:// or rfc2217://, is tried when the link opens)."""
        if "://" not in self.url and not Path(self.url).exists():
            raise TargetUnavailable(
                f"{self.name}: no board at {self.url} (the port does not exist: the board is "
                "not connected, or has another name)",
                fix="plug the board in, or set connection.port to its port "
                "(ls /dev/serial/by-id/ names them by board)",
            )
        return self.url

    def reset(self) -> None:
        """Hardware reset through connection.reset_command, if the device file gives one."""
        if not self.reset_command:
            return
        self.log.info("resetting: %s", " ".join(self.reset_command))
        try:
            subprocess.run(self.reset_command, check=True, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise TransportError(
                f"{self.name}: the reset command failed: {e}",
                fix="check connection.reset_command in the device file",
            ) from e

    def gone(self) -> str | None:
        return None  # a real board does not say

    @property
    def is_device_node(self) -> bool:
        """A port that is a path (/dev/ttyACM0, /dev/serial/by-id/...), not a URL."""
        return "://" not in self.url

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None:
        """A device node that failed to move bytes was unplugged or re-enumerated (USB serial
        adapters do both): the link is lost, and the target waits for the port to come back."""
        if self.is_device_node and type(error) is TransportError:
            return PortLost(
                f"{self.name}: the port {self.url} went away while {doing} ({error.message})",
                fix="check the board's USB cable and hub; hil waits connection.port_return_s "
                "for the port to come back",
            )
        return None

    def wait_for_port(self, timeout_s: float, whole_s: float | None = None) -> None:
        """Until the port's device node is back (a USB re-enumeration), or TransportError.
        `whole_s`: the whole wait this one is the rest of, as the message gives it (the
        remainder of a deadline reads 4.99999 s)."""
        deadline = time.monotonic() + timeout_s
        while self.is_device_node and not Path(self.url).exists():
            if time.monotonic() >= deadline:
                waited = timeout_s if whole_s is None else whole_s
                raise TransportError(
                    f"{self.name}: the port {self.url} did not come back within {waited:g} s",
                    fix="plug the board in again (ls /dev/serial/by-id/ names the ports by board)",
                )
            time.sleep(0.1)

    def log_tail(self, lines: int = 30) -> str:
        return ""

    @property
    def log_path(self) -> Path | None:
        return None

    def stop(self) -> None:
        pass


def make_board(name: str, settings: SerialSettings, runner: Path | None, source: Path) -> Board:
    """The board a serial device's settings describe; `runner` is the built runner for
    virtual boards."""
    if settings.virtual is None:
        if settings.port is None:
            raise DeviceSpecError(
                f"{source}: a serial device needs connection.port or connection.virtual"
            )
        return PortBoard(name, settings.port, settings.reset_command)
    if runner is None:
        raise DeviceSpecError(f"{source}: the virtual board {settings.virtual} needs a runner")
    from hil.resources.virtual_boards import HostRunnerBoard, QemuBoard

    if settings.virtual is VirtualBoard.HOST_RUNNER:
        return HostRunnerBoard(name, runner, settings.runner_args)
    return QemuBoard(name, runner, settings.runner_args, semihosting=settings.semihosting)
