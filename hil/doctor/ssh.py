"""`hil doctor` for ssh devices (the Pi 5 and the emulated one): the same checks, in the same
order, as SshTarget's provisioning makes before it connects, so the verdict is pytest's."""

from __future__ import annotations

import os
from collections.abc import Iterator

from hil.devices import DeviceSpec
from hil.doctor import Finding, finding_from
from hil.doctor.checks import compiler, runner_build, tool
from hil.errors import TargetUnavailable
from hil.resources.emulated_pi import SSHD
from hil.sdk import firmware
from hil.sdk.aarch64 import executorch_root
from hil.targets.ssh import real_endpoint, ssh_settings


def check_ssh(spec: DeviceSpec) -> Iterator[Finding]:
    settings = ssh_settings(spec)
    yield tool("ssh", "apt-get install openssh-client", what="ssh client")
    if settings.virtual is None:
        yield finding_from("login", lambda: real_endpoint(spec, settings).address)
    config = firmware.firmware_config(spec, "linux-aarch64")
    yield compiler(config.compiler)
    yield finding_from("aarch64 executorch SDK", lambda: str(executorch_root()))
    yield runner_build(config, spec.name)
    if settings.virtual is not None:
        yield finding_from("sshd (the emulated Pi)", _sshd)
        if settings.runner_prefix:
            yield tool(
                settings.runner_prefix[0],
                "apt-get install qemu-user",
                what="emulator " + settings.runner_prefix[0],
            )


def _sshd() -> str:
    if not os.path.exists(SSHD):
        raise TargetUnavailable(
            f"OpenSSH sshd is not installed ({SSHD})", fix="apt-get install openssh-server"
        )
    if os.geteuid() != 0:
        raise TargetUnavailable(
            "the emulated Pi's sshd needs root (/run/sshd, logging in as this user)",
            fix="run as root (CI does)",
        )
    return SSHD
