"""Boards: what is on the other end of a SerialTarget's serial link, and how to (re)start it.

A board only knows how to come up and give a port URL, whether its runner is still alive,
what it logged, and how to stop. The SerialTarget speaks the protocol over the URL the same
way whatever the board is:

    connection: {port: /dev/ttyACM0, ...}   PortBoard: a real board on a port URL
    connection: {virtual: host-runner}      HostRunnerBoard: the host runner on a pty
    connection: {virtual: qemu-mps3-an547}  QemuBoard: the bare-metal runner in QEMU
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError, TransportError

VIRTUAL_KINDS = ("host-runner", "qemu-mps3-an547")


class Board(Protocol):
    name: str

    def start(self) -> str:
        """Bring the board up (start a process, reset it); return the serial port URL."""
        ...

    def alive(self) -> bool | None:
        """Whether the runner still runs; None when the board cannot tell (a real board)."""
        ...

    def exit_description(self) -> str:
        """How the runner ended ("killed by SIGKILL"), for crash messages."""
        ...

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the board logged outside the protocol (stderr, semihosting)."""
        ...

    @property
    def log_path(self) -> Path | None: ...

    def stop(self) -> None:
        """Shut down; safe to call twice."""
        ...


def board_log_dir() -> Path:
    return Path(os.environ.get("HIL_RESULTS_DIR", ".hil/results")) / "boards"


def tail(path: Path | None, lines: int) -> str:
    if path is None or not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 16384))
        text = f.read().decode("utf-8", "replace")
    return "\n".join(text.splitlines()[-lines:])


def string_list(spec: DeviceSpec, key: str) -> list[str]:
    value = spec.connection.get(key, ())
    if isinstance(value, str) or not all(isinstance(v, (str, int, float)) for v in value):
        raise DeviceSpecError(
            f"{spec.source}: connection.{key} must be a list of strings, got {value!r}"
        )
    return [str(v) for v in value]


class PortBoard:
    """A real board on a port URL; it can be reset by a command, and cannot tell if it is alive."""

    def __init__(self, spec: DeviceSpec) -> None:
        self.name = spec.name
        self.url = str(spec.connection["port"])
        self.reset_command = string_list(spec, "reset_command")
        self.log = logging.getLogger(f"hil.board.PortBoard({spec.name})")

    def start(self) -> str:
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

    def alive(self) -> bool | None:
        return None

    def exit_description(self) -> str:
        return "unknown (a real board does not say)"

    def log_tail(self, lines: int = 30) -> str:
        return ""

    @property
    def log_path(self) -> Path | None:
        return None

    def stop(self) -> None:
        pass


def make_board(spec: DeviceSpec, runner: Path | None, args: Sequence[str] = ()) -> Board:
    """The board a device file describes; `runner` is the built runner for virtual boards."""
    connection: Mapping[str, Any] = spec.connection
    virtual = connection.get("virtual")
    if virtual is None:
        if "port" not in connection:
            raise DeviceSpecError(
                f"{spec.source}: a serial device needs connection.port (a device node or URL) "
                "or connection.virtual (" + ", ".join(VIRTUAL_KINDS) + ")"
            )
        return PortBoard(spec)
    if runner is None:
        raise DeviceSpecError(f"{spec.source}: the virtual board {virtual!r} needs a built runner")
    if virtual == "host-runner":
        from hil.targets.virtual_boards import HostRunnerBoard

        return HostRunnerBoard(spec.name, runner, args)
    if virtual == "qemu-mps3-an547":
        from hil.targets.virtual_boards import QemuBoard

        return QemuBoard(spec.name, runner, args,
                         semihosting=bool(connection.get("semihosting", True)))
    raise DeviceSpecError(
        f"{spec.source}: connection.virtual is {virtual!r}; known: " + ", ".join(VIRTUAL_KINDS)
    )
