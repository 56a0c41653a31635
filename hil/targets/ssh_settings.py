"""The `connection` keys of an ssh device file, checked once at the boundary.

    connection:
      host: $HIL_PI5_HOST          # $VARS and ~ are expanded; unset -> the target is unavailable
      port: 22
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
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError, TargetUnavailable
from hil.runner.channel import LinkPolicy
from hil.targets.board import string_list
from hil.targets.serial import link_policy
from hil.transports.ssh import SshEndpoint

VIRTUAL_KINDS = ("emulated-pi",)


@dataclass(frozen=True)
class SshSettings:
    virtual: str | None
    remote_dir: str | None  # None: the emulated Pi's own folder, or ".hil" on a real device
    cpus: str
    runner_prefix: tuple[str, ...]
    runner_args: tuple[str, ...]
    ssh_options: tuple[str, ...]
    policy: LinkPolicy

    @classmethod
    def from_spec(cls, spec: DeviceSpec) -> SshSettings:
        c = spec.connection
        virtual = c.get("virtual")
        if virtual is not None and virtual not in VIRTUAL_KINDS:
            raise DeviceSpecError(f"{spec.source}: connection.virtual is {virtual!r}; known: "
                                  + ", ".join(VIRTUAL_KINDS))
        remote_dir = c.get("remote_dir")
        cpus = c.get("cpus", "")
        if not isinstance(cpus, (str, int)) or (remote_dir is not None
                                                and not isinstance(remote_dir, str)):
            raise DeviceSpecError(f"{spec.source}: connection.cpus and remote_dir must be strings")
        return cls(
            virtual=virtual, remote_dir=remote_dir, cpus=str(cpus),
            runner_prefix=tuple(string_list(spec, "runner_prefix")),
            runner_args=tuple(string_list(spec, "runner_args")),
            ssh_options=tuple(string_list(spec, "ssh_options")),
            policy=link_policy(c),
        )


def real_endpoint(spec: DeviceSpec, settings: SshSettings) -> SshEndpoint:
    """The login a real device's file describes; unavailable (with the fix) when incomplete."""
    c = spec.connection
    values = {}
    for key in ("host", "user", "identity", "known_hosts"):
        raw = c.get(key)
        if not isinstance(raw, str) or not raw:
            raise DeviceSpecError(f"{spec.source}: an ssh device needs connection.{key} "
                                  "(or connection.virtual)")
        value = os.path.expanduser(os.path.expandvars(raw))
        if "$" in value or not value:
            raise TargetUnavailable(
                f"{spec.name}: connection.{key} is {raw!r}, and that variable is not set",
                fix=f"export it (e.g. export HIL_PI5_HOST=pi5.lab.example) or edit {spec.source}",
            )
        values[key] = value
    for key in ("identity", "known_hosts"):
        if not Path(values[key]).is_file():
            raise TargetUnavailable(
                f"{spec.name}: connection.{key} names {values[key]}, which does not exist",
                fix="identity: the private key whose public half is in the device's "
                "authorized_keys; known_hosts: a file holding the device's verified host key "
                "(see README, 'A real Raspberry Pi 5')",
            )
    try:
        port = int(c.get("port", 22))
    except (TypeError, ValueError) as e:
        raise DeviceSpecError(f"{spec.source}: connection.port must be a number") from e
    return SshEndpoint(host=values["host"], port=port, user=values["user"],
                       identity=Path(values["identity"]), known_hosts=Path(values["known_hosts"]),
                       options=settings.ssh_options)
