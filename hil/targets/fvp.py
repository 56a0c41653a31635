"""FvpTarget (kind "fvp"): the hil runner on a Corstone FVP (SSE-300 + Ethos-U55, SSE-320 +
Ethos-U85), one FVP process serving many cases.

Provisioning checks, in order, and refuses before any work: the device file (the NPU the FVP
models must be the one the recipes compile for), the FVP binary (missing: TargetUnavailable
with the install steps, so every case skips with that one reason), the ExecuTorch install
the runner links, the runner build; then it boots the FVP once and speaks the runner protocol
over the FVP's UART0 (telnet terminal 0 in raw mode, a TCP port on this machine).

A run reports what the FVP measured: the Ethos-U PMU cycle counts the runner logs per NPU
invocation (hil/fvp/pmu.py), the CPU cycles of each execution (the runner's SysTick, at the
model's CPU clock), the memory pools' high-water marks, and Vela's estimate for the same
artifact beside them (vela_npu_cycles), so the summary can set one against the other.

Failure classes: a runner fault or assert is a TargetCrash (the next case boots a fresh FVP);
the FVP stopping at its --timelimit (FvpTimeLimit), a silent runner (LinkTimeout) or an FVP
that dies (FvpExited) are infrastructure errors that take the target out of service; a
licence refusal is TargetUnavailable. Every message names the FVP log.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import CaseError, InfrastructureError, TargetCrash, TargetUnavailable
from hil.fvp import locate, output, pmu
from hil.fvp.command import build_command
from hil.fvp.config import FvpConfig, fvp_config, runner_firmware
from hil.fvp.errors import FvpExited, FvpLicenceError, FvpTimeLimit
from hil.fvp.process import FvpProcess
from hil.runner import firmware
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.runner.file_load import load_file
from hil.runner.pools import pool_counters
from hil.targets.base import Deployment, RunResult, Target
from hil.targets.board import board_log_dir
from hil.targets.serial import open_client
from hil.transports.serial_link import SerialLink

R = TypeVar("R")
RECYCLE_AT = 0.8  # boot a fresh FVP once this share of its --timelimit has passed
ECHO_OUTPUTS = (
    "the runner has the echo engine (connection.engine: echo): its outputs are its inputs, not "
    "the model's; build it with EXECUTORCH_ROOT for model verdicts"
)


@dataclass(frozen=True)
class _Held:
    """A model the runner was given: its method and what the PMU report is read against."""

    method: m.MethodInfo
    delegates: int
    vela_npu_cycles: float | None


class FvpTarget(Target):
    _config: FvpConfig
    _binary: Path
    _version: str
    _runner: firmware.BuiltRunner
    _fvp: FvpProcess | None
    _link: SerialLink | None
    _client: RunnerClient | None
    _info: m.RunnerInfo | None
    _started: float

    # -- lifecycle -------------------------------------------------------------------------

    def _provision(self) -> None:
        self._fvp, self._link, self._client, self._info = None, None, None, None
        self._held: dict[str, _Held] = {}
        self._current: str | None = None
        self._config = fvp_config(self.spec)  # DeviceSpecError: refused before any work
        self._binary = locate.find_fvp(self._config)
        self._version = locate.fvp_version(self._binary)
        self._runner = firmware.build(self._firmware_config())
        self._boot()

    def _firmware_config(self) -> firmware.FirmwareConfig:
        """The runner of connection.firmware (what `hil firmware build` makes too); the
        ExecuTorch install it links is checked first, so a missing one is a clear skip."""
        locate.executorch_install(self._config)
        return runner_firmware(self.spec, self._config)

    def _boot(self) -> None:
        """Start an FVP on the runner and handshake with it."""
        workdir = self._workdir()
        command = build_command(
            self._config, self._binary, self._runner.binary, workdir, _free_port()
        )
        fvp = FvpProcess(self.spec.name, command, board_log_dir() / f"{self.spec.name}.log",
                         workdir)  # fmt: skip
        self._fvp = fvp
        self._started = time.monotonic()
        port = fvp.start(self._config.boot_timeout_s)
        try:
            self._link, client = open_client(self.spec, f"socket://127.0.0.1:{port}")
            self._client = client
            info = self._call("the handshake", client.hello)
        except BaseException:
            self._shutdown()
            raise
        self._info = info
        self._current = info.held_sha256 if info.holds_model else None
        self.log.info(
            "%s %s on port %d: runner %s (%s, engine %s, ExecuTorch %s); log %s",
            self._config.platform.binary, self._version, port, info.build_id, info.platform,
            info.engine_name, info.runtime_version, fvp.log_path,
        )  # fmt: skip
        self._check_engine(info)

    def _check_engine(self, info: m.RunnerInfo) -> None:
        wanted = m.ENGINE_ECHO if self._config.engine == "echo" else m.ENGINE_EXECUTORCH
        if info.engine == wanted:
            return
        self._shutdown()
        raise TargetUnavailable(
            f"{self.spec.name}: the runner ({info.build_id}) has the {info.engine_name} engine, "
            f"the device file asks for {self._config.engine}",
            fix=f"rebuild the runner (hil firmware build --target {self.spec.name} --force) "
            "with EXECUTORCH_ROOT set, or set connection.engine: echo for link bring-up only",
        )

    def _workdir(self) -> Path:
        """The runner's semihosting folder (short: relative paths keep the command line short)."""
        return (board_log_dir() / f"{self.spec.name}-semihosting").resolve()

    def _shutdown(self) -> None:
        link, self._link, self._client = self._link, None, None
        if link is not None:
            link.close()
        fvp, self._fvp = self._fvp, None
        if fvp is not None:
            fvp.stop()
            stats = output.stats(fvp.text())
            if stats is not None:
                self.log.info("FVP statistics: %s", stats.describe())

    def _teardown(self) -> None:
        self._shutdown()

    def _recycle_if_old(self) -> None:
        """A long suite must not run into the FVP's --timelimit: boot a fresh one in time."""
        if time.monotonic() - self._started < RECYCLE_AT * self._config.time_limit_s:
            return
        self.log.info("the FVP has run %.0f s of its %.0f s time limit: starting a fresh one",
                      time.monotonic() - self._started, self._config.time_limit_s)
        self._shutdown()
        self._current = None
        self._boot()

    @property
    def client(self) -> RunnerClient:
        """The runner's protocol client (tools and fault-injection tests use it)."""
        if self._client is None:
            raise InfrastructureError(f"{self.spec.name}: no FVP is running")
        return self._client

    @property
    def fvp(self) -> FvpProcess | None:
        return self._fvp

    def describe(self) -> Mapping[str, str]:
        facts = dict(super().describe())
        config = getattr(self, "_config", None)
        if config is not None:
            facts.update(platform=config.platform.name, npu=config.npu,
                         num_macs=str(config.num_macs), mode=config.mode)  # fmt: skip
        if getattr(self, "_version", None):
            facts.update(fvp=config.platform.binary if config else "", fvp_version=self._version)
        info = getattr(self, "_info", None)
        if info is not None:
            facts.update(build_id=info.build_id, engine=info.engine_name,
                         executorch=info.runtime_version, runner_platform=info.platform)
        return facts

    # -- failures --------------------------------------------------------------------------

    def _call(self, doing: str, fn: Callable[..., R], *args: Any) -> R:
        """One protocol call; its failure classified by what became of the FVP."""
        try:
            return fn(*args)
        except TargetCrash as e:
            raise self._crash(doing, e.message.removeprefix(f"{self.spec.name}: ")) from e
        except InfrastructureError as e:
            raise self._classify(doing, e) from e

    def _classify(self, doing: str, cause: InfrastructureError) -> Exception:
        fvp = self._fvp
        if fvp is None:
            return cause
        ended = fvp.wait_exit(3.0)  # a link that broke because the FVP ended: let it finish
        text = fvp.text()
        where = f"FVP log: {fvp.log_path}"
        if not ended:  # the FVP runs on: the runner is silent or the link is broken
            return type(cause)(f"{cause.message} (while {doing}; the FVP still runs; {where})",
                               fix=cause.fix)  # fmt: skip
        if output.hit_time_limit(text):
            return FvpTimeLimit(
                f"{self.spec.name}: the FVP stopped at its --timelimit of "
                f"{self._config.time_limit_s:.0f} s while {doing}; {where}",
                fix="raise connection.time_limit_s, or find what hangs (the runner's last "
                "log lines are in the FVP log)",
            )
        problem = output.licence_problem(text)
        if problem:
            return FvpLicenceError(f"{self.spec.name}: the FVP lost its licence: {problem}",
                                   fix=locate.LICENCE_FIX)  # fmt: skip
        if output.simulation_ended(text) and fvp.returncode == 0:
            # the runner ended the simulation itself (semihosting exit: abort, assert, exit)
            return self._crash(doing, "the runner ended the simulation (semihosting exit)")
        return FvpExited(
            f"{self.spec.name}: the FVP {fvp.exit_description()} while {doing}; {where}\n"
            + fvp.tail(8),
            fix="run the command at the top of the FVP log by hand to see why",
        )

    def _crash(self, doing: str, reason: str) -> TargetCrash:
        fvp = self._fvp
        where = f"; FVP log: {fvp.log_path}" if fvp else ""
        runner_lines = "\n".join(self._client.log_lines) if self._client else ""
        return TargetCrash(
            f"{self.spec.name}: the runner crashed while {doing}: {reason}",
            fix="the next case boots a fresh FVP; the lines below are the runner's last words"
            + where,
            log_tail=(fvp.tail(20) if fvp else "") or runner_lines,
        )

    # -- deploy and run --------------------------------------------------------------------

    def _deploy(self, artifact: Artifact) -> Deployment:
        self._recycle_if_old()
        sha = artifact.sha256
        if sha in self._held and self._current == sha:
            return Deployment(sha, handle=artifact, bytes_sent=0)
        sent = self._load(artifact)
        return Deployment(sha, handle=artifact, bytes_sent=sent)

    def _load(self, artifact: Artifact) -> int:
        client = self.client
        doing = f"loading {artifact.pte_path.name}"
        # The FVP serves semihosting from this machine: a runner that offers LOAD_FILE reads
        # the .pte from the disk instead of the simulated UART (connection.model_load: link
        # keeps the UART).
        by_file = (client.info is not None and client.info.file_load
                   and self.spec.connection.get("model_load", "auto") != "link")
        if by_file:
            size = artifact.pte_path.stat().st_size
            outcome = self._call(doing, load_file, client, str(artifact.pte_path.resolve()),
                                 artifact.sha256, size)
        else:
            outcome = self._call(doing, client.load, artifact.pte_path.read_bytes(),
                                 artifact.sha256)
        details = artifact.details
        vela = details.get("vela") or {}
        self._held[artifact.sha256] = _Held(
            method=outcome.method,
            delegates=len(details.get("delegates", ())),
            vela_npu_cycles=float(vela["npu_cycles"]) if "npu_cycles" in vela else None,
        )
        self._current = artifact.sha256
        if outcome.bytes_sent:
            self.log.info("sent %d bytes of %s", outcome.bytes_sent, artifact.pte_path.name)
        return outcome.bytes_sent

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        artifact: Artifact = deployment.handle
        if self._current != deployment.sha256 or deployment.sha256 not in self._held:
            self._load(artifact)  # another model was deployed since
        held = self._held[deployment.sha256]
        client = self.client
        echo = self._info is not None and self._info.engine == m.ENGINE_ECHO
        if not echo and len(inputs) != len(held.method.inputs):
            raise CaseError(
                f"the case gives {len(inputs)} inputs, the model on {self.spec.name} takes "
                f"{len(held.method.inputs)}"
            )
        client.take_log()
        for index, tensor in enumerate(inputs):
            order = held.method.inputs[index].dim_order if index < len(held.method.inputs) else None
            spec, data = m.from_numpy(tensor.detach().cpu().numpy(), order)
            self._call(f"setting input {index}", client.set_input, index, spec, data)
        times = self._call("running the model", client.run, policy.warmup, policy.min_runs,
                           policy.max_runs, policy.min_time_s, policy.max_time_s)  # fmt: skip
        n_outputs = len(inputs) if echo else len(held.method.outputs)
        outputs = tuple(
            to_array(self._call(f"reading output {i}", client.get_output, i))
            for i in range(n_outputs)
        )
        pools = self._call("reading memory statistics", client.mem_stats)
        log_lines = client.take_log()
        counters = self._counters(held, times, pools, log_lines)
        return RunResult(
            outputs=outputs, timings_us=times.micros, timing=self.spec.latency.timing,
            counters=counters, log="\n".join(log_lines),
            not_the_model=ECHO_OUTPUTS if echo else "",
        )  # fmt: skip

    def _counters(
        self, held: _Held, times: m.RunTimes, pools: tuple[m.PoolStat, ...], lines: list[str]
    ) -> dict[str, float]:
        counters: dict[str, float] = {"runner_clock_hz": float(times.clock_hz)}
        if times.clock_kind == m.CLOCK_CYCLES and times.ticks:
            counters["cpu_cycles"] = float(statistics.median(times.ticks))
        counters.update(pool_counters(pools))
        if held.vela_npu_cycles is not None:
            counters["vela_npu_cycles"] = held.vela_npu_cycles
        report = pmu.summarize(pmu.invocations(lines), held.delegates, times.warmup,
                               len(times.ticks))  # fmt: skip
        if report.problem:
            self.log.warning("%s", report.problem)
        for name, value in report.counters.items():
            # Arm's --fast NPU model is functional only: its cycle counts are kept apart and
            # no npu_cycles budget is judged on them.
            counters[f"{name}_fast" if self._config.fast else name] = value
        return counters


def _free_port() -> int:
    """A TCP port free right now, as the FVP's terminal start port (it moves up if taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
