"""SshTarget (kind "ssh"): hil's runner on a Linux board, a Raspberry Pi 5, over SSH.

A login (OpenSSH; the host key must already be in the device's known-hosts file) and the runner
process it starts (RemoteRunner, a runner site) composed with the runner driver
(hil.runner.driver). Models go by LOAD_FILE: the runner loads the .pte's content-addressed file
from the device's disk, checking size and sha256, and the driver copies it by SFTP only when it
is missing or damaged there. What is this kind's own:

* provisioning builds the aarch64 runner bundle and copies the files whose hash differs, then
  starts the runner once per session, pinned to the device's cores (`taskset -c`) and under its
  runner_prefix (qemu-aarch64 on the emulated Pi, nothing on a real one);
* a dropped connection is reconnected once (new connection, new runner, model reloaded from
  the device's disk) and the step done again; a device that stays away is TargetUnavailable
  naming the host, for the rest of the session.

Connection keys: hil/settings/ssh.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceSpec, TimingPolicy
from hil.errors import (
    DeviceSpecError,
    HilError,
    InfrastructureError,
    TargetUnavailable,
)
from hil.resources.emulated_pi import EmulatedPi
from hil.resources.logs import board_log_dir, tail
from hil.resources.ssh_remote import RemoteFacts, RemoteTree
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.runner.driver import Files, RunnerDriver
from hil.sdk import firmware
from hil.sdk.aarch64 import RunnerBundle, runner_bundle
from hil.settings.ssh import SshSettings
from hil.targets.base import Deployment, RunResult, Target
from hil.transports.ssh import SshConnection, SshEndpoint, quote
from hil.transports.ssh_link import ProcessLink

R = TypeVar("R")


class ConnectionLost(InfrastructureError):
    """The SSH connection went away under a step (the target reconnects once)."""


class RemoteRunner:
    """The runner process on the device, as a runner site: its stderr log, how it ended, and
    the one cause only an SSH login can tell (the connection dropped)."""

    restart_note = "the next case starts the runner again"
    log_label = "runner log"

    def __init__(self, name: str, connection: SshConnection, process: subprocess.Popen[bytes],
                 log_path: Path) -> None:  # fmt: skip
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
        return ("killed by a signal" if code in (255, -signal.SIGKILL)
                else f"exited with status {code}")  # fmt: skip

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


class SshTarget(Target):
    _settings: SshSettings
    _endpoint: SshEndpoint
    _connection: SshConnection
    _tree: RemoteTree
    _bundle: RunnerBundle
    _build_id: str
    # None until provisioning starts them: a failed provision tears down what it reached
    _emulator: EmulatedPi | None = None
    _driver: RunnerDriver | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def _provision(self) -> None:
        self._settings = ssh_settings(self.spec)
        self._emulator = EmulatedPi(self.spec.name) if self._settings.virtual else None
        self._lost: TargetUnavailable | None = None
        self._facts: RemoteFacts | None = None
        self.reconnects = 0
        self.runner_bytes_sent = 0
        self._log_path = board_log_dir().resolve() / f"{self.spec.name}.log"
        if self._emulator is None:  # an unconfigured device is reported before any build
            self._endpoint = real_endpoint(self.spec, self._settings)
        built = firmware.build(firmware.firmware_config(self.spec))
        self._bundle, self._build_id = runner_bundle(built.binary), built.build_id
        emulator = self._settings.runner_prefix[:1]
        if self._emulator is not None and emulator and shutil.which(emulator[0]) is None:
            raise TargetUnavailable(
                f"{self.spec.name}: {emulator[0]} is not installed",
                fix="apt-get install qemu-user (make setup does it)",
            )
        if self._emulator is not None:
            self._endpoint = self._emulator.start()
        self._open()

    def _open(self) -> None:
        """Connect, put the runner in place, start it and shake hands."""
        self._connection = SshConnection(self._endpoint, self.spec.name, board_log_dir())
        self._connection.connect()
        remote_dir = self._settings.remote_dir or (
            self._emulator.remote_dir if self._emulator is not None else ".hil")  # fmt: skip
        self._tree = RemoteTree(self._connection, remote_dir, self.spec.name)
        self._tree.prepare()
        self._stop_stale_runner()
        self.runner_bytes_sent += self._tree.sync_runner(self._bundle)
        if self._facts is None:
            self._facts = self._tree.facts()
        self._start_runner()

    @property
    def _pid_file(self) -> str:
        return f"{self._tree.root}/runner-{os.getpid()}-{id(self)}.pid"

    def runner_command(self) -> str:
        """The remote shell command that starts the runner (pinned, under the prefix)."""
        s = self._settings
        words = (["taskset", "-c", s.cpus] if s.cpus else []) + list(s.runner_prefix)
        words += [f"./{self._bundle.runner}", "--stdio", *s.runner_args]
        return (f"cd {quote(self._tree.runner_dir)} && echo $$ > {quote(self._pid_file)} && "
                "exec " + " ".join(quote(w) for w in words))  # fmt: skip

    def _start_runner(self) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file: IO[bytes]
        with self._log_path.open("ab") as log_file:
            log_file.write(f"--- starting on {self._endpoint.address}: "
                           f"{self.runner_command()}\n".encode())  # fmt: skip
            log_file.flush()
            process = self._connection.spawn(self.runner_command(), stderr=log_file)
        site = RemoteRunner(self.spec.name, self._connection, process, self._log_path)
        files = Files(lambda artifact: self._tree.model_path(artifact.sha256),
                      lambda artifact: self._tree.put_model(artifact.pte_path, artifact.sha256),
                      required=True)  # fmt: skip
        link = ProcessLink(process, f"{self.spec.name} runner")
        self._driver = RunnerDriver(self.spec.name, link, site, self._settings.policy, files)
        info = self._driver.hello()
        if info.engine != m.ENGINE_EXECUTORCH or not info.file_load:
            raise TargetUnavailable(
                f"{self.spec.name}: the runner ({info.build_id}, protocol {info.protocol}) "
                "cannot run models from files",
                fix="rebuild it: hil firmware build --target " + self.spec.name,
            )
        if info.build_id != self._build_id:
            self.log.warning("the runner reports build %s, expected %s", info.build_id,
                             self._build_id)  # fmt: skip
        self.log.info("runner %s on %s (%s, ExecuTorch %s), pinned to %s", info.build_id,
                      self._endpoint.address, info.platform, info.runtime_version,
                      self._settings.cpus or "all cores")  # fmt: skip

    def _stop_stale_runner(self) -> None:
        """Kill a runner this target started before (hung when its connection dropped)."""
        path = quote(self._pid_file)
        self._connection.run(
            f"p=$(cat {path} 2>/dev/null) && grep -q hil-runner /proc/$p/cmdline 2>/dev/null "
            f"&& kill -9 $p; rm -f {path}; true")  # fmt: skip

    def _close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()
        connection: SshConnection | None = getattr(self, "_connection", None)
        if connection is not None and connection.alive() and hasattr(self, "_tree"):
            self._stop_stale_runner()
        if connection is not None:
            connection.close()
        if self._emulator is not None:
            self._emulator.stop()

    def _teardown(self) -> None:
        self._close()

    # -- facts -------------------------------------------------------------------------------

    @property
    def connection(self) -> SshConnection:
        return self._connection

    @property
    def emulator(self) -> EmulatedPi | None:
        return self._emulator

    @property
    def remote(self) -> RemoteTree:
        """The device's hil folder (the bench times its copies)."""
        return self._tree

    @property
    def driver(self) -> RunnerDriver:
        if self._driver is None:
            raise TargetUnavailable(f"{self.spec.name}: the runner is not running")
        return self._driver

    @property
    def client(self) -> RunnerClient:
        """The runner protocol client (diagnostics and the bench)."""
        return self.driver.client

    def remote_runner_pid(self) -> int | None:
        """The runner's process id on the device (fault tests kill it)."""
        done = self._connection.run(f"cat {quote(self._pid_file)}")
        text = done.stdout.decode().strip()
        return int(text) if text.isdigit() else None

    def describe(self) -> dict[str, str]:
        facts = dict(super().describe())
        driver: RunnerDriver | None = getattr(self, "_driver", None)
        if driver is not None:
            facts.update(driver.describe())
        if hasattr(self, "_endpoint"):
            facts["address"] = self._endpoint.address
            if self._connection.host_key_fingerprint:
                facts["host_key"] = self._connection.host_key_fingerprint
        if self._facts is not None:
            facts.update(self._facts.as_dict())
        if hasattr(self, "_settings"):
            facts["pinned_cpus"] = self._settings.cpus or "all"
            if self._settings.runner_prefix:
                facts["emulator"] = " ".join(self._settings.runner_prefix)
        facts["timing"] = str(self.spec.latency.timing)
        return facts

    # -- reconnecting ------------------------------------------------------------------------

    def _step(self, doing: str, fn: Callable[[], R]) -> R:
        """Do a step; after a dropped connection, reconnect once and do it again."""
        if self._lost is not None:
            raise self._lost
        try:
            return fn()
        except ConnectionLost as lost:
            self.log.warning("%s; reconnecting once", lost.message)
            try:
                self._reconnect()
                self.reconnects += 1
                return fn()
            except HilError as again:
                self._lost = TargetUnavailable(
                    f"{self.spec.name}: lost the SSH connection to {self._endpoint.host} "
                    f"(port {self._endpoint.port}) while {doing}, and could not get it back: "
                    f"{again.message}",
                    fix=f"check that {self._endpoint.host} is powered, on the network and "
                    "running sshd; the target stays unavailable for the rest of this session",
                )
                raise self._lost from again

    def _reconnect(self) -> None:
        """A new connection and a new runner; _open() first stops the old runner if it hangs
        on (its pid file is this target's)."""
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()
        self._connection.close()
        self._open()

    # -- deploy and run ----------------------------------------------------------------------

    def _deploy(self, artifact: Artifact) -> Deployment:
        sent = self._step(f"deploying {artifact.pte_path.name}",
                          lambda: self.driver.deploy(artifact))  # fmt: skip
        if sent:
            self.log.info("copied %d bytes of %s to %s", sent, artifact.pte_path.name,
                          self._endpoint.host)  # fmt: skip
        return Deployment(artifact.sha256, handle=artifact, bytes_sent=sent)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        return self._step("running the model", lambda: self._run_once(deployment, inputs, policy))

    def _run_once(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy
                  ) -> RunResult:  # fmt: skip
        run = self.driver.run(deployment.handle, inputs, policy)
        counters = run.counters()
        if self._facts is not None and self._facts.temperature_c is not None:
            temperature = self._tree.temperature_c()
            if temperature is not None:
                counters["soc_temperature_c"] = temperature
        return RunResult(outputs=run.outputs, timings_us=run.times.micros,
                         timing=self.spec.latency.timing, counters=counters,
                         log="\n".join(run.log_lines))  # fmt: skip


def real_endpoint(spec: DeviceSpec, settings: SshSettings) -> SshEndpoint:
    """The login a real device's file describes; unavailable (with the fix) when incomplete."""
    values: dict[str, str] = {}
    for key in ("host", "user", "identity", "known_hosts"):
        raw = getattr(settings, key)
        if not raw:
            raise DeviceSpecError(f"{spec.source}: an ssh device needs connection.{key} "
                                  "(or connection.virtual)")  # fmt: skip
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
    return SshEndpoint(host=values["host"], port=settings.port, user=values["user"],
                       identity=Path(values["identity"]), known_hosts=Path(values["known_hosts"]),
                       options=settings.ssh_options)  # fmt: skip
