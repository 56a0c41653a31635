"""Flashing a runner onto a board: a pluggable step named in the device file.

    connection:
      flash: {command: [pyocd, flash, -t, corstone300, "{image}"]}       # any command line
      flash: {labgrid: {config: lab.yaml, target: main, driver: OpenOCDDriver}}

SerialTarget flashes only when the runner on the board reports another build id than the
one built for this device file, so a board is flashed once and then reused.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any, Protocol

from hil.errors import DeployError, TargetUnavailable
from hil.settings.common import FlashStep


class Flasher(Protocol):
    def flash(self, image: Path) -> None: ...

    def describe(self) -> str: ...


class CommandFlasher:
    """Runs a command line with `{image}` replaced by the runner's path (pyOCD, OpenOCD, ...)."""

    def __init__(self, argv: list[str], timeout_s: float = 300.0) -> None:
        self.argv = argv
        self.timeout_s = timeout_s
        self.log = logging.getLogger("hil.flash.CommandFlasher")

    def describe(self) -> str:
        return " ".join(self.argv)

    def flash(self, image: Path) -> None:
        command = [part.replace("{image}", str(image)) for part in self.argv]
        self.log.info("flashing: %s", " ".join(command))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout_s)
        except FileNotFoundError as e:
            raise TargetUnavailable(
                f"the flash command {command[0]!r} is not installed",
                fix="install it, or change connection.flash in the device file",
            ) from e
        except subprocess.TimeoutExpired as e:
            raise DeployError(
                f"flashing took over {self.timeout_s:.0f} s: {' '.join(command)}"
            ) from e
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip().splitlines()[-15:]
            raise DeployError(
                f"flashing failed (exit {done.returncode}): {' '.join(command)}\n"
                + "\n".join(output),
                fix="check the probe connection and connection.flash in the device file",
            )


class LabgridFlasher:
    """Flashes through a labgrid target's driver: a BootstrapProtocol one (OpenOCDDriver and
    the like) or a FlashScriptDriver."""

    def __init__(self, config: str, target: str, driver: str) -> None:
        self.config = config
        self.target = target
        self.driver = driver

    def describe(self) -> str:
        return f"labgrid {self.config} target {self.target} driver {self.driver}"

    def flash(self, image: Path) -> None:
        try:
            from labgrid import Environment
        except ImportError as e:
            raise TargetUnavailable("labgrid is not installed", fix="pip install labgrid") from e
        try:
            target = Environment(self.config).get_target(self.target)
            driver: Any = target.get_driver(self.driver)  # bound and activated
            if hasattr(driver, "load"):  # BootstrapProtocol: OpenOCDDriver and kin
                driver.load(str(image))
            else:  # FlashScriptDriver
                driver.flash(image=str(image))
        except Exception as e:  # labgrid raises its own exception types from many places
            raise DeployError(
                f"labgrid could not flash {image} with {self.driver}: {type(e).__name__}: {e}",
                fix=f"check {self.config} and that the place is acquired",
            ) from e


def make_flasher(step: FlashStep | None) -> Flasher | None:
    """The flash step a device's settings name, if any."""
    if step is None:
        return None
    if step.labgrid_config is not None:
        return LabgridFlasher(step.labgrid_config, step.labgrid_target, step.labgrid_driver)
    return CommandFlasher(list(step.command), step.timeout_s)
