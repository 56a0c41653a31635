"""The `connection` of a serial device: a board on a UART, or a local stand-in for one.

port: /dev/ttyACM0        a device node, a pty, socket://HOST:PORT, rfc2217://HOST:PORT,
                          telnet://HOST:PORT (ser2net's telnet port, as labgrid exports it)
virtual: host-runner      or qemu-mps3-an547: a local stand-in instead of a port
baudrate: 115200
firmware: host            preset in firmware/CMakePresets.json, or {preset, defines}
flash: {command: [pyocd, flash, "{image}"]}   or {labgrid: {config, target, driver}}
reset_command: [...]      how to reset a real board after flashing
port_return_s: 15         how long a port device that disappeared (a USB serial adapter
                          re-enumerating) is waited for before the target is out of service
runner_args: [...]        extra arguments for a virtual board's runner
reply_timeout_s, bytes_per_s, run_timeout_s, retries    waits and repeats
model_load: auto          link (LOAD chunks over the line), file (LOAD_FILE: the runner
                          reads this machine's file, through semihosting on bare metal),
                          auto (file when the runner offers it and is QEMU here; else link)
semihosting: true         QEMU: serve semihosting (false: as a board without a debugger)
labgrid: {...}            lease the board from a labgrid lab (hil/settings/lab.py)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from hil.settings.common import LINK_KEYS, FirmwareChoice, FlashStep, LinkPolicy
from hil.settings.lab import LabSettings
from hil.settings.reader import Section


class VirtualBoard(enum.StrEnum):
    HOST_RUNNER = "host-runner"  # the host build of the runner on a pseudo-terminal
    QEMU_MPS3_AN547 = "qemu-mps3-an547"  # the bare-metal runner in QEMU's Corstone-300 map


class ModelLoad(enum.StrEnum):
    AUTO = "auto"
    FILE = "file"
    LINK = "link"


KEYS = (
    "port",
    "virtual",
    "baudrate",
    "firmware",
    "flash",
    "reset_command",
    "port_return_s",
    "runner_args",
    *LINK_KEYS,
    "model_load",
    "semihosting",
    "labgrid",
)


@dataclass(frozen=True)
class SerialSettings:
    port: str | None = None
    virtual: VirtualBoard | None = None
    baudrate: int = 115200
    firmware: FirmwareChoice = field(default_factory=FirmwareChoice)
    flash: FlashStep | None = None
    reset_command: tuple[str, ...] = ()
    port_return_s: float = 15.0
    runner_args: tuple[str, ...] = ()
    policy: LinkPolicy = field(default_factory=LinkPolicy)
    model_load: ModelLoad = ModelLoad.AUTO
    semihosting: bool = True
    labgrid: LabSettings | None = None

    @property
    def default_preset(self) -> str:
        return "cortex-m55" if self.virtual is VirtualBoard.QEMU_MPS3_AN547 else "host"

    @classmethod
    def parse(cls, section: Section) -> SerialSettings:
        section.reject_unknown(KEYS)
        labgrid = LabSettings.parse(section)
        virtual = section.choice("virtual", tuple(VirtualBoard), None)
        port = section.text("port")
        if labgrid is None and (port is None) == (virtual is None):
            section.fail(
                section.path,
                "exactly one of port (a device node or URL), virtual ("
                + ", ".join(VirtualBoard)
                + ") or labgrid",
                dict(section.data),
            )
        return cls(
            port=port,
            virtual=VirtualBoard(virtual) if virtual else None,
            baudrate=int(section.positive("baudrate", 115200, integer=True)),
            firmware=FirmwareChoice.parse(section),
            flash=FlashStep.parse(section),
            reset_command=section.strings("reset_command"),
            port_return_s=float(section.positive("port_return_s", 15.0)),
            runner_args=section.strings("runner_args"),
            policy=LinkPolicy.parse(section),
            model_load=ModelLoad(section.choice("model_load", tuple(ModelLoad), "auto")),
            semihosting=section.flag("semihosting", True),
            labgrid=labgrid,
        )
