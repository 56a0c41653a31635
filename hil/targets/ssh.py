"""SshTarget (kind "ssh"): the hil runner on a Linux board, a Raspberry Pi 5, over SSH.

Provisioning connects (OpenSSH; the host key must already be in the device's known-hosts
file), builds the aarch64 runner bundle and copies the files whose hash differs, then starts
the runner once per session, pinned to the device's cores (`taskset -c`) and under its
runner_prefix (qemu-aarch64 on the emulated Pi, nothing on a real one); the runner protocol
runs over that SSH channel. Deploy asks the runner to load the .pte's content-addressed file
from the device's disk (LOAD_FILE, which checks size and sha256) and copies it by SFTP only
when it is missing or damaged there.

Failures, as the session needs them:
  connection dropped   reconnect once (new connection, new runner, model reloaded from the
                       device's disk) and do the step again; else TargetUnavailable naming
                       the host, and the target stays unavailable for the session
  runner died          TargetCrash with the tail of the runner's stderr (the session starts
                       a fresh runner for the next case)
  runner silent        LinkTimeout (infrastructure: the target goes out of service)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import (
    CaseError,
    HilError,
    InfrastructureError,
    TargetCrash,
    TargetUnavailable,
)
from hil.runner import firmware
from hil.runner import messages as m
from hil.runner.aarch64_sdk import RunnerBundle, runner_bundle
from hil.runner.client import RunnerClient
from hil.runner.file_load import StaleModelFile, load_file
from hil.runner.pools import pool_counters
from hil.targets.base import Deployment, RunResult, Target
from hil.targets.board import board_log_dir, tail
from hil.targets.emulated_pi import EmulatedPi
from hil.targets.ssh_remote import RemoteFacts, RemoteTree
from hil.targets.ssh_settings import SshSettings, real_endpoint
from hil.transports.ssh import SshConnection, SshEndpoint, quote
from hil.transports.ssh_link import ProcessLink

R = TypeVar("R")


class SshTarget(Target):
    _settings: SshSettings
    _endpoint: SshEndpoint
    _connection: SshConnection
    _tree: RemoteTree
    _bundle: RunnerBundle
    _build_id: str

    # -- lifecycle -------------------------------------------------------------------------

    def _provision(self) -> None:
        self._settings = SshSettings.from_spec(self.spec)
        self._emulator = EmulatedPi(self.spec.name) if self._settings.virtual else None
        self._process: subprocess.Popen[bytes] | None = None
        self._link: ProcessLink | None = None
        self._lost: TargetUnavailable | None = None
        self._facts: RemoteFacts | None = None
        self._methods: dict[str, m.MethodInfo] = {}
        self._held: str | None = None
        self.reconnects = 0
        self.runner_bytes_sent = 0
        self._log_path = board_log_dir().resolve() / f"{self.spec.name}.log"
        if self._emulator is None:  # an unconfigured device is reported before any build
            self._endpoint = real_endpoint(self.spec, self._settings)
        built = firmware.build(firmware.firmware_config(self.spec, "linux-aarch64"))
        self._bundle, self._build_id = runner_bundle(built.binary), built.build_id
        emulator = self._settings.runner_prefix[:1]
        if self._emulator is not None and emulator and shutil.which(emulator[0]) is None:
            raise TargetUnavailable(f"{self.spec.name}: {emulator[0]} is not installed",
                                    fix="apt-get install qemu-user (make setup does it)")
        try:
            if self._emulator is not None:
                self._endpoint = self._emulator.start()
            self._open()
        except BaseException:
            self._close()
            raise

    def _open(self) -> None:
        """Connect, put the runner in place, start it and shake hands."""
        self._connection = SshConnection(self._endpoint, self.spec.name, board_log_dir())
        self._connection.connect()
        remote_dir = self._settings.remote_dir or (
            self._emulator.remote_dir if self._emulator is not None else ".hil")
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
                "exec " + " ".join(quote(w) for w in words))

    def _start_runner(self) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file: IO[bytes]
        with self._log_path.open("ab") as log_file:
            log_file.write(f"--- starting on {self._endpoint.address}: "
                           f"{self.runner_command()}\n".encode())
            log_file.flush()
            self._process = self._connection.spawn(self.runner_command(), stderr=log_file)
        self._link = ProcessLink(self._process, f"{self.spec.name} runner")
        self._client = RunnerClient(self._link, name=self.spec.name, policy=self._settings.policy)
        self._methods, self._held = {}, None
        info = self._call("the handshake", self._client.hello)
        if info.engine != m.ENGINE_EXECUTORCH or not info.file_load:
            raise TargetUnavailable(
                f"{self.spec.name}: the runner ({info.build_id}, protocol {info.protocol}) "
                "cannot run models from files", fix="rebuild it: hil firmware build --target "
                + self.spec.name)
        if info.build_id != self._build_id:
            self.log.warning("the runner reports build %s, expected %s", info.build_id,
                             self._build_id)
        self.log.info("runner %s on %s (%s, ExecuTorch %s), pinned to %s", info.build_id,
                      self._endpoint.address, info.platform, info.runtime_version,
                      self._settings.cpus or "all cores")

    def _stop_stale_runner(self) -> None:
        """Kill a runner this target started before (hung when its connection dropped)."""
        path = quote(self._pid_file)
        self._connection.run(
            f"p=$(cat {path} 2>/dev/null) && grep -q hil-runner /proc/$p/cmdline 2>/dev/null "
            f"&& kill -9 $p; rm -f {path}; true")

    def _close(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            link.close()
        connection = getattr(self, "_connection", None)
        if connection is not None and connection.alive() and hasattr(self, "_tree"):
            self._stop_stale_runner()
        if connection is not None:
            connection.close()
        if self._emulator is not None:
            self._emulator.stop()

    def _teardown(self) -> None:
        self._close()

    # -- facts -----------------------------------------------------------------------------

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
    def client(self) -> RunnerClient:
        """The runner protocol client (diagnostics and the bench)."""
        return self._client

    def remote_runner_pid(self) -> int | None:
        """The runner's process id on the device (fault tests kill it)."""
        done = self._connection.run(f"cat {quote(self._pid_file)}")
        text = done.stdout.decode().strip()
        return int(text) if text.isdigit() else None

    def describe(self) -> dict[str, str]:
        facts = dict(super().describe())
        info = getattr(getattr(self, "_client", None), "info", None)
        if info is not None:
            facts.update(build_id=info.build_id, platform=info.platform,
                         executorch=info.runtime_version, engine=info.engine_name)
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
        facts["timing"] = self.spec.latency.timing
        return facts

    # -- failures --------------------------------------------------------------------------

    def _call(self, doing: str, fn: Callable[..., R], *args: object) -> R:
        """One step; a failure becomes a crash, a lost connection or a link problem."""
        try:
            return fn(*args)
        except TargetCrash as e:
            raise self._crashed(doing, e) from e
        except InfrastructureError as e:
            if not self._connection.alive():
                raise ConnectionLost(f"{self.spec.name}: lost the SSH connection to "
                                     f"{self._endpoint.host} while {doing}: {e.message}") from e
            if self._runner_exited():
                raise self._crashed(doing, e) from e
            raise type(e)(f"{e.message} (while {doing}; runner log: {self._log_path})",
                          fix=e.fix) from e

    def _runner_exited(self) -> bool:
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=1.0)  # a runner that just died takes a moment to go
        except subprocess.TimeoutExpired:
            return False
        return True

    def _crashed(self, doing: str, cause: HilError) -> TargetCrash:
        self._runner_exited()
        code = self._process.returncode if self._process is not None else None
        state = ("still running" if code is None else f"exited with status {code}" if
                 code not in (255, -signal.SIGKILL) else "killed by a signal")
        return TargetCrash(
            f"{self.spec.name}: the runner on {self._endpoint.host} crashed while {doing} "
            f"({state}): {cause.message}",
            fix=f"the next case starts the runner again; its stderr is in {self._log_path}",
            log_tail=tail(self._log_path, 20) or "\n".join(self._client.log_lines),
        )

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
        if self._link is not None:
            self._link.close()
            self._link = None
        self._connection.close()
        self._open()

    # -- deploy and run --------------------------------------------------------------------

    def _deploy(self, artifact: Artifact) -> Deployment:
        return self._step(f"deploying {artifact.pte_path.name}",
                          lambda: self._load(artifact.pte_path, artifact.sha256))

    def _load(self, pte: Path, sha: str) -> Deployment:
        """The runner loads the device's copy (checking its size and sha256); only a missing
        or damaged copy is copied, by SFTP, and loaded again."""
        if self._held == sha and sha in self._methods:
            return Deployment(sha, handle=pte, bytes_sent=0)
        size, path = pte.stat().st_size, self._tree.model_path(sha)
        sent = 0
        try:
            outcome = self._call(f"loading {path}", load_file, self._client, path, sha, size)
        except StaleModelFile as missing:
            self.log.info("%s: copying %s", missing.message, pte.name)
            sent = self._call("copying the model", self._tree.put_model, pte, sha)
            outcome = self._call(f"loading {path}", load_file, self._client, path, sha, size)
        self._methods[sha] = outcome.method
        self._held = sha
        if sent:
            self.log.info("copied %d bytes of %s to %s", sent, pte.name, self._endpoint.host)
        return Deployment(sha, handle=pte, bytes_sent=sent)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        return self._step("running the model", lambda: self._run_once(deployment, inputs, policy))

    def _run_once(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy
                  ) -> RunResult:
        sha = deployment.sha256
        if self._held != sha:  # another model since, or a fresh runner after a reconnect
            self._load(deployment.handle, sha)
        method = self._methods[sha]
        if len(inputs) != len(method.inputs):
            raise CaseError(f"the case gives {len(inputs)} inputs, the model on "
                            f"{self.spec.name} takes {len(method.inputs)}")
        client = self._client
        client.take_log()
        for index, (tensor, expected) in enumerate(zip(inputs, method.inputs, strict=True)):
            spec, data = m.from_numpy(tensor.detach().cpu().numpy(), expected.dim_order)
            self._call(f"setting input {index}", client.set_input, index, spec, data)
        times = self._call("running the model", client.run, policy.warmup, policy.min_runs,
                           policy.max_runs, policy.min_time_s, policy.max_time_s)
        outputs = tuple(to_array(self._call(f"reading output {i}", client.get_output, i))
                        for i in range(len(method.outputs)))
        pools = self._call("reading memory statistics", client.mem_stats)
        counters: dict[str, float] = {"runner_clock_hz": float(times.clock_hz)}
        counters.update(pool_counters(pools))
        if self._facts is not None and self._facts.temperature_c is not None:
            temperature = self._tree.temperature_c()
            if temperature is not None:
                counters["soc_temperature_c"] = temperature
        return RunResult(outputs=outputs, timings_us=times.micros,
                         timing=self.spec.latency.timing, counters=counters,
                         log="\n".join(client.take_log()))


class ConnectionLost(InfrastructureError):
    """The SSH connection went away under a step (the target reconnects once)."""
