"""FvpTarget (kind "fvp"): hil's runner on a Corstone FVP (SSE-300 + Ethos-U55, SSE-320 +
Ethos-U85), one FVP process serving many cases.

An FVP (hil.resources.fvp: the process, its time limit, licence and exit) as the site of a
RunnerTarget (hil/targets/runner_target.py), over the FVP's UART0 (telnet terminal 0 in raw
mode, a TCP port on this machine); models go by LOAD_FILE through the FVP's semihosting when
the runner offers it (connection.model_load: link keeps the UART). What is this kind's own:

* provisioning refuses before any work: the device file (the NPU the FVP models must be the one
  the recipes compile for; checked when it loads), the FVP binary (missing: TargetUnavailable
  with the install steps, so every case skips with that one reason), the ExecuTorch install
  the runner links, the runner build; then one FVP boots for many cases, and a fresh one before
  a long suite reaches the FVP's --timelimit;
* a run reports what the FVP measured: the Ethos-U PMU cycles the runner logs per NPU
  invocation (hil/fvp/pmu.py), the CPU cycles of each execution, the memory pools, and Vela's
  estimate for the same artifact beside them (vela_npu_cycles);
* an echo runner (connection.engine: echo, for link bring-up) is allowed, and its outputs are
  never judged as a model's.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from hil.artifacts.store import Artifact
from hil.devices import DeviceSpec
from hil.fvp import locate, output, pmu
from hil.fvp.command import build_command
from hil.fvp.config import fvp_config, runner_firmware
from hil.fvp.process import FvpProcess
from hil.resources.fvp import FvpSite
from hil.resources.logs import board_log_dir
from hil.runner import messages as m
from hil.runner.driver import RunnerRun, local_files
from hil.sdk import firmware
from hil.settings.fvp import Engine
from hil.settings.serial import ModelLoad
from hil.targets.base import Deployment
from hil.targets.runner_target import RunnerTarget
from hil.transports.serial_link import SerialLink

RECYCLE_AT = 0.8  # boot a fresh FVP once this share of its --timelimit has passed


class FvpTarget(RunnerTarget):
    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self._config = fvp_config(spec)
        # found and built at provisioning; a failed provision tears down what it reached
        self._binary: Path | None = None
        self._version = ""
        self._runner: firmware.BuiltRunner | None = None
        self._fvp: FvpProcess | None = None
        self._started = 0.0

    # -- lifecycle ---------------------------------------------------------------------------

    def _provision(self) -> None:
        self._binary = locate.find_fvp(self._config)
        self._version = locate.fvp_version(self._binary)
        self._runner = firmware.build(self._firmware_config())
        self._expect_runner(self._runner.build_id, self._runner.binary)  # the FVP's application
        self._boot()

    def _firmware_config(self) -> firmware.FirmwareConfig:
        """The runner of connection.firmware (what `hil firmware build` makes too); the
        ExecuTorch install it links is checked first, so a missing one is a clear skip."""
        runner = runner_firmware(self.spec, self._config)
        locate.executorch_install(self._config, runner)
        return runner

    def _boot(self) -> None:
        """Start an FVP on the runner and handshake with it."""
        assert self._binary is not None and self._runner is not None, "provision boots"
        workdir = self._workdir()
        command = build_command(
            self._config, self._binary, self._runner.binary, workdir, _free_port()
        )
        fvp = FvpProcess(
            self.spec.name, command, board_log_dir() / f"{self.spec.name}.log", workdir
        )
        self._fvp = fvp
        self._started = time.monotonic()
        port = fvp.start(self._config.boot_timeout_s)
        files = (
            None
            if self._config.model_load is ModelLoad.LINK
            else local_files(required=self._config.model_load is ModelLoad.FILE)
        )
        try:
            link = SerialLink(f"socket://127.0.0.1:{port}", baudrate=self._config.baudrate).open()
            info = self._connect_runner(
                link, FvpSite(fvp, self._config), self._config.policy, files
            )
            self.log.info(
                "%s %s on port %d: runner %s (%s, engine %s, ExecuTorch %s); log %s",
                self._config.platform.binary,
                self._version,
                port,
                info.build_id,
                info.platform,
                info.engine_name,
                info.runtime_version,
                fvp.log_path,
            )
            echo = self._config.engine is Engine.ECHO
            self._require_engine(
                info,
                m.ENGINE_ECHO if echo else m.ENGINE_EXECUTORCH,
                fix=f"rebuild the runner (hil firmware build --target {self.spec.name} --force) "
                "with EXECUTORCH_ROOT set, or set connection.engine: echo for link bring-up only",
            )
        except BaseException:
            self._shutdown()
            raise
        self.driver.kernels = firmware.registered_kernels(self._runner.config)

    def _workdir(self) -> Path:
        """The runner's semihosting folder (short: relative paths keep the command line short)."""
        return (board_log_dir() / f"{self.spec.name}-semihosting").resolve()

    def _shutdown(self) -> None:
        self._disconnect_runner()
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
        self.log.info(
            "the FVP has run %.0f s of its %.0f s time limit: starting a fresh one",
            time.monotonic() - self._started,
            self._config.time_limit_s,
        )
        self._shutdown()
        self._boot()

    @property
    def fvp(self) -> FvpProcess | None:
        return self._fvp

    def describe(self) -> dict[str, str]:
        facts = super().describe()  # the runner's platform is kept apart from the FVP's
        if "platform" in facts:
            facts["runner_platform"] = facts.pop("platform")
        config = self._config
        facts.update(
            platform=config.platform.name,
            npu=config.npu,
            num_macs=str(config.num_macs),
            mode=str(config.mode),
        )
        if self._version:
            facts.update(fvp=config.platform.binary, fvp_version=self._version)
        return facts

    # -- deploy and run ----------------------------------------------------------------------

    def _deploy(self, artifact: Artifact) -> Deployment:
        self._recycle_if_old()
        return super()._deploy(artifact)

    def _counters(self, artifact: Artifact, run: RunnerRun) -> dict[str, float]:
        counters = run.counters()
        part = artifact.parts.ethos_u
        if part is not None and part.vela is not None:
            counters["vela_npu_cycles"] = float(part.vela.npu_cycles)
        delegates = len(part.delegates) if part is not None else 0
        report = pmu.summarize(
            pmu.invocations(run.log_lines), delegates, run.times.warmup, len(run.times.ticks)
        )
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
