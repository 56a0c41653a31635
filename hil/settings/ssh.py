"""The `connection` of an ssh device (a Raspberry Pi 5), checked once at the boundary.

host: $HIL_PI5_HOST          # $VARS and ~ are expanded when the target starts; unset ->
port: 22                     #   the target is unavailable, with the fix
user: pi
identity: ~/.ssh/id_ed25519  # a private key file (passphrase: load it into ssh-agent)
known_hosts: ~/.ssh/known_hosts  # the device's host key must already be here
remote_dir: .hil             # on the device, relative to the login's home
cpus: "1-3"                  # taskset -c: the cores the runner is pinned to
runner_prefix: []            # e.g. [qemu-aarch64, -cpu, cortex-a76]: how to launch it
runner_args: []              # e.g. [--pool, model=2G]
ssh_options: []              # extra `ssh -o` options, e.g. [ProxyJump=gateway]
virtual: emulated-pi         # instead of host/user/...: a throwaway sshd here
firmware: linux-aarch64
reply_timeout_s / bytes_per_s / run_timeout_s / retries: as for serial devices
labgrid: {...}               # the place's NetworkService gives host, port and user
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from hil.settings.common import LINK_KEYS, FirmwareChoice, LinkPolicy
from hil.settings.lab import LabSettings
from hil.settings.reader import Section


class VirtualPi(enum.StrEnum):
    EMULATED_PI = "emulated-pi"  # OpenSSH sshd on loopback, the runner under qemu-aarch64


LOGIN = ("host", "user", "identity", "known_hosts")
KEYS = (
    *LOGIN,
    "port",
    "remote_dir",
    "cpus",
    "runner_prefix",
    "runner_args",
    "ssh_options",
    "virtual",
    "firmware",
    *LINK_KEYS,
    "labgrid",
)


@dataclass(frozen=True)
class SshSettings:
    host: str | None = None  # as written: expanded when the target starts
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    virtual: VirtualPi | None = None
    remote_dir: str | None = None  # None: the emulated Pi's own folder, or ".hil" on a device
    cpus: str = ""
    runner_prefix: tuple[str, ...] = ()
    runner_args: tuple[str, ...] = ()
    ssh_options: tuple[str, ...] = ()
    firmware: FirmwareChoice = field(default_factory=FirmwareChoice)
    policy: LinkPolicy = field(default_factory=LinkPolicy)
    labgrid: LabSettings | None = None

    @classmethod
    def parse(cls, section: Section) -> SshSettings:
        section.reject_unknown(KEYS)
        labgrid = LabSettings.parse(section)
        virtual = section.choice("virtual", tuple(VirtualPi), None)
        if labgrid is None and virtual is None:
            for key in LOGIN:
                if not section.has(key):
                    section.missing(
                        key,
                        "a string (an ssh device needs host, user, identity "
                        "and known_hosts, or virtual: emulated-pi, or labgrid)",
                    )
        return cls(
            host=section.text("host"),
            port=int(section.positive("port", 22, integer=True)),
            user=section.text("user"),
            identity=section.text("identity"),
            known_hosts=section.text("known_hosts"),
            virtual=VirtualPi(virtual) if virtual else None,
            remote_dir=section.text("remote_dir"),
            cpus=section.text("cpus", "") or "",
            runner_prefix=section.strings("runner_prefix"),
            runner_args=section.strings("runner_args"),
            ssh_options=section.strings("ssh_options"),
            firmware=FirmwareChoice.parse(section),
            policy=LinkPolicy.parse(section),
            labgrid=labgrid,
        )
