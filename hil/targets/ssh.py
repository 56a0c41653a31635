"""SshTarget (kind "ssh"): hil's runner on a Linux board, a Raspberry Pi 5, over SSH.

A login (OpenSSH; the host key must already be in the device's known-hosts file) and the runner
process it starts (RemoteRunner, the site of a RunnerTarget: hil/targets/runner_target.py).
Models go by LOAD_FILE: the runner loads the .pte's content-addressed file from the device's
disk, checking size and sha256, and the driver copies it by SFTP only when it is missing or
damaged there. What is this kind's own:

* provisioning builds the aarch64 runner bundle and copies the files whose hash differs, then
  starts the runner once per session, pinned to the device's cores (`taskset -c`) and under its
  runner_prefix (qemu-aarch64 on the emulated Pi, nothing on a real one);
* a dropped connection is reconnected once (new connection, new runner, model reloaded from
  the device's disk) and the step done again; a device that stays away is an
  InfrastructureError naming the host, and the session keeps the target out of service (a
  device that left mid-run is a lab failure, never a quiet skip of the cases after it).

Connection keys: hil/settings/ssh.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import IO

from hil.artifacts.store import Artifact
from hil.devices import DeviceSpec
from hil.errors import (
    DeviceSpecError,
    HilError,
    InfrastructureError,
    LinkLost,
    TargetUnavailable,
)
from hil.resources.emulated_pi import EmulatedPi
from hil.resources.logs import board_log_dir, tail
from hil.resources.ssh_remote import RemoteFacts, RemoteTree
from hil.runner import messages as m
from hil.runner.driver import Files, RunnerRun
from hil.sdk import firmware
from hil.sdk.aarch64 import RunnerBundle, runner_bundle
from hil.settings.ssh import SshSettings
from hil.targets.runner_target import RunnerFile, RunnerTarget
from hil.transports.ssh import SshConnection, SshEndpoint, quote
from hil.transports.ssh_link import ProcessLink


class ConnectionLost(LinkLost):
    """The SSH connection went away under a step (the target reconnects once)."""


class RemoteRunner:
    """The runner process on the device, as a runner site: its stderr log, how it ended, and
    the one cause only an SSH login can tell (the connection dropped)."""

    restart_note = "the next case starts the runner again"
    log_label = "runner log"

    def __init__(
        self, name: str, connection: SshConnection, process: subprocess.Popen[bytes], log_path: Path
    ) -> None:
        self.name = name
        self.connection = connection
        self.process = process
        self._log_path = log_path

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def log_tail(self, lines: int = 30) -> str:
        return tail(self._log_path, lines)

    def gone(self) -> str | None:
        try:
            self.process.wait(timeout=1.0)  # a runner that just died takes a moment to go
        except subprocess.TimeoutExpired:
            return None
        code = self.process.returncode
        return (
            "killed by a signal" if code in (255, -signal.SIGKILL) else f"exited with status {code}"
        )

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None:
        if self.connection.alive():
            return None
        host = self.connection.endpoint.host
        return ConnectionLost(
            f"{self.name}: lost the SSH connection to {host} while {doing}: {error.message}"
        )


def ssh_settings(spec: DeviceSpec) -> SshSettings:
    if not isinstance(spec.settings, SshSettings):
        raise DeviceSpecError(f"{spec.source}: {spec.name} is a {spec.kind} device, not ssh")
    return spec.settings


class SshTarget(RunnerTarget):
    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self._settings = ssh_settings(spec)
        self._log_path = board_log_dir().resolve() / f"{spec.name}.log"
        self.runner_bytes_sent = 0
        # None until provisioning reaches them: a failed provision tears down what it reached
        self._emulator: EmulatedPi | None = None
        self._endpoint: SshEndpoint | None = None
        self._connection: SshConnection | None = None
        self._tree: RemoteTree | None = None
        self._bundle: RunnerBundle | None = None
        self._build_id = ""
        self._facts: RemoteFacts | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def _provision(self) -> None:
        virtual = self._settings.virtual
        if not virtual:  # an unconfigured device is reported before any build
            self._endpoint = real_endpoint(self.spec, self._settings)
        built = firmware.build(firmware.firmware_config(self.spec))
        self._bundle, self._build_id = runner_bundle(built.binary), built.build_id
        self._expect_runner(built.build_id, runner_file(self._bundle))
        emulator = self._settings.runner_prefix[:1]
        if virtual and emulator and shutil.which(emulator[0]) is None:
            raise TargetUnavailable(
                f"{self.spec.name}: {emulator[0]} is not installed",
                fix="apt-get install qemu-user (make setup does it)",
            )
        if virtual:
            self._emulator = EmulatedPi(self.spec.name)
            self._endpoint = self._emulator.start()
        self._open_reconnecting()

    def _open_reconnecting(self) -> None:
        """Open; a connection that drops while it opens (copying the runner, the handshake) is
        opened again once, as one that drops under a step is: a network blip is as likely at
        provisioning as later."""
        try:
            self._open()
        except InfrastructureError as e:
            if self._connection is None or self._connection.alive():
                raise  # not the link: the device or its runner
            self.log.warning(
                "%s: the SSH connection dropped (%s); reconnecting once", self.spec.name, e.message
            )
            self._disconnect_runner()
            self._connection.close()
            self._open()
            self.reconnects += 1

    def _open(self) -> None:
        """Connect, put the runner in place, start it and shake hands."""
        self._connection = SshConnection(self.endpoint, self.spec.name, board_log_dir())
        self._connection.connect()
        remote_dir = self._settings.remote_dir or (
            self._emulator.remote_dir if self._emulator is not None else ".hil"
        )
        self._tree = RemoteTree(self._connection, remote_dir, self.spec.name)
        self._tree.prepare()
        self._stop_stale_runner()
        self.runner_bytes_sent += self._tree.sync_runner(self.bundle)
        if self._facts is None:
            self._facts = self._tree.facts()
        self._start_runner()

    @property
    def _pid_file(self) -> str:
        return f"{self.remote.root}/runner-{os.getpid()}-{id(self)}.pid"

    def runner_command(self) -> str:
        """The remote shell command that starts the runner (pinned, under the prefix)."""
        s = self._settings
        words = (["taskset", "-c", s.cpus] if s.cpus else []) + list(s.runner_prefix)
        words += [f"./{self.bundle.runner}", "--stdio", *s.runner_args]
        return (
            f"cd {quote(self.remote.runner_dir)} && echo $$ > {quote(self._pid_file)} && "
            "exec " + " ".join(quote(w) for w in words)
        )

    def _start_runner(self) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file: IO[bytes]
        with self._log_path.open("ab") as log_file:
            log_file.write(
                f"--- starting on {self.endpoint.address}: {self.runner_command()}\n".encode()
            )
            log_file.flush()
            process = self.connection.spawn(self.runner_command(), stderr=log_file)
        site = RemoteRunner(self.spec.name, self.connection, process, self._log_path)
        tree = self.remote
        files = Files(
            lambda artifact: tree.model_path(artifact.sha256),
            lambda artifact: tree.put_model(artifact.pte_path, artifact.sha256),
            required=True,
        )
        link = ProcessLink(process, f"{self.spec.name} runner")
        info = self._connect_runner(link, site, self._settings.policy, files)
        fix = "rebuild it: hil firmware build --target " + self.spec.name
        self._require_engine(info, m.ENGINE_EXECUTORCH, fix)
        if not info.file_load:
            raise TargetUnavailable(
                f"{self.spec.name}: the runner ({info.build_id}, protocol {info.protocol}) "
                "cannot run models from files",
                fix=fix,
            )
        if info.build_id != self._build_id:
            self.log.warning(
                "the runner reports build %s, expected %s", info.build_id, self._build_id
            )
        self.log.info(
            "runner %s on %s (%s, ExecuTorch %s), pinned to %s",
            info.build_id,
            self.endpoint.address,
            info.platform,
            info.runtime_version,
            self._settings.cpus or "all cores",
        )

    def _stop_stale_runner(self) -> None:
        """Kill a runner this target started before (hung when its connection dropped)."""
        path = quote(self._pid_file)
        self.connection.run(
            f"p=$(cat {path} 2>/dev/null) && grep -q hil-runner /proc/$p/cmdline 2>/dev/null "
            f"&& kill -9 $p; rm -f {path}; true"
        )

    def _teardown(self) -> None:
        self._disconnect_runner()
        if self._connection is not None:
            if self._connection.alive() and self._tree is not None:
                self._stop_stale_runner()
            self._connection.close()
            self._connection = None
        if self._emulator is not None:
            self._emulator.stop()

    # -- facts -------------------------------------------------------------------------------

    @property
    def endpoint(self) -> SshEndpoint:
        if self._endpoint is None:
            raise InfrastructureError(f"{self.spec.name}: no SSH endpoint yet (not provisioned)")
        return self._endpoint

    @property
    def connection(self) -> SshConnection:
        if self._connection is None:
            raise InfrastructureError(f"{self.spec.name}: not connected over SSH")
        return self._connection

    @property
    def bundle(self) -> RunnerBundle:
        if self._bundle is None:
            raise InfrastructureError(f"{self.spec.name}: the runner bundle is not built yet")
        return self._bundle

    @property
    def emulator(self) -> EmulatedPi | None:
        return self._emulator

    @property
    def remote(self) -> RemoteTree:
        """The device's hil folder (the bench times its copies)."""
        if self._tree is None:
            raise InfrastructureError(f"{self.spec.name}: the device's folder is not prepared")
        return self._tree

    def remote_runner_pid(self) -> int | None:
        """The runner's process id on the device (fault tests kill it)."""
        done = self.connection.run(f"cat {quote(self._pid_file)}")
        text = done.stdout.decode().strip()
        return int(text) if text.isdigit() else None

    def describe(self) -> dict[str, str]:
        facts = super().describe()
        if self._endpoint is not None:
            facts["address"] = self._endpoint.address
        if self._connection is not None and self._connection.host_key_fingerprint:
            facts["host_key"] = self._connection.host_key_fingerprint
        if self._facts is not None:
            facts.update(self._facts.as_dict())
        facts["pinned_cpus"] = self._settings.cpus or "all"
        facts["reconnects"] = str(self.reconnects)  # links that dropped and came back
        if self._settings.runner_prefix:
            facts["emulator"] = " ".join(self._settings.runner_prefix)
        facts["timing"] = str(self.spec.latency.timing)
        return facts

    # -- reconnecting ------------------------------------------------------------------------

    def _stayed_away(self, doing: str, again: HilError) -> InfrastructureError:
        return InfrastructureError(
            f"{self.spec.name}: lost the SSH connection to {self.endpoint.host} "
            f"(port {self.endpoint.port}) while {doing}, and could not get it back: "
            f"{again.message}",
            fix=f"check that {self.endpoint.host} is powered, on the network and "
            "running sshd; the target stays out of service for the rest of this session",
        )

    def _reconnect(self) -> None:
        """A new connection and a new runner; _open() first stops the old runner if it hangs
        on (its pid file is this target's)."""
        self._disconnect_runner()
        self.connection.close()
        self._open()

    # -- what only this kind measures ----------------------------------------------------------

    def _counters(self, artifact: Artifact, run: RunnerRun) -> dict[str, float]:
        counters = run.counters()
        if self._facts is not None and self._facts.temperature_c is not None:
            temperature = self.remote.temperature_c()
            if temperature is not None:
                counters["soc_temperature_c"] = temperature
        return counters


def runner_file(bundle: RunnerBundle) -> RunnerFile:
    """The runner the device runs: the bundle's copy, by the hash the device's copy was checked
    against (RemoteTree.sync_runner copies it whenever the device's differs)."""
    (entry,) = [f for f in bundle.files if f.name == bundle.runner]
    return RunnerFile(bundle.folder / entry.name, entry.sha256)


def real_endpoint(spec: DeviceSpec, settings: SshSettings) -> SshEndpoint:
    """The login a real device's file describes; unavailable (with the fix) when incomplete."""
    values: dict[str, str] = {}
    for key in ("host", "user", "identity", "known_hosts"):
        raw = getattr(settings, key)
        if not raw:
            raise DeviceSpecError(
                f"{spec.source}: an ssh device needs connection.{key} (or connection.virtual)"
            )
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
                "(see docs/targets/pi5.md)",
            )
    return SshEndpoint(
        host=values["host"],
        port=settings.port,
        user=values["user"],
        identity=Path(values["identity"]),
        known_hosts=Path(values["known_hosts"]),
        options=settings.ssh_options,
    )
