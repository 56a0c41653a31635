"""RunnerTarget: the base of the targets whose models run in hil's runner (serial boards, SSH
boards, Corstone FVPs), reached through one RunnerDriver.

What the three share lives here once: the driver and what its absence means, the engine check
after the handshake, deploy and run through the driver, the RunResult, the identity facts.
A kind keeps only its resource: how the runner is started and reached (a board on a port, a
login over SSH, an FVP process), when a step may be tried again, and the counters only it can
add.

Which failure is which class, on every kind alike (the driver classifies what the runner and
its site did: hil/runner/driver.py):

    the runner faulted, asserted or ended     TargetCrash with its last log lines: it died on
    while working on the model                this model, so trying again would hide a bug
    the runner went silent, or the link or    InfrastructureError (LinkTimeout, TransportError,
    the site (FVP, SSH login) failed under it the site's own cause): the lab failed, not the
                                              model; the session retires the target and the
                                              retry gets a fresh one
    no runner is connected while the target   InfrastructureError: in service the target had a
    is in service                             runner, so it was lost (an FVP that did not boot
                                              again, a link closed under the session), never
                                              "unavailable", which means this machine cannot
                                              run the target at all
    the runner cannot run models (the echo    TargetUnavailable at provisioning: the cases skip
    engine, no LOAD_FILE where files are      with the rebuild that fixes it
    required)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceAllowance, DeviceSpec, TimingPolicy
from hil.errors import HilError, InfrastructureError, LinkLost, TargetUnavailable
from hil.hashing import file_sha256
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.runner.driver import DeviceTrace, Files, RunnerDriver, RunnerRun, RunnerSite
from hil.settings.common import LinkPolicy
from hil.targets.base import Capabilities, Deployment, RunResult, Target
from hil.transports import Link

R = TypeVar("R")


@dataclass(frozen=True)
class RunnerFile:
    """The runner binary hil started, copied, flashed or gave to an emulator, and its sha256:
    the bytes that ran, which a build id (a hash of the configuration) does not pin."""

    path: Path
    sha256: str

    @classmethod
    def of(cls, path: Path) -> RunnerFile:
        """Hashed here, once per provisioning (a check only reads the facts)."""
        return cls(path, file_sha256(path))


class RunnerTarget(Target):
    """A target whose runner is reached through a RunnerDriver (None while none is connected)."""

    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        records_etdump=True,
        own_runtime=True,
        # An Ethos-U program on an FVP or a board, against its TOSA graphs in the reference
        # model. Not measured here (no FVP binary on these machines): Vela compiles some
        # operators' rounding otherwise than TOSA's reference (ExecuTorch's own FVP tests allow
        # one output step against the quantized model, qtol=1): one step until a measured figure
        # replaces it.
        device_allowance=DeviceAllowance(
            steps=1.0,
            float_ulps=0.0,
            basis="one output step for an NPU's rounding (ExecuTorch's FVP tests allow the "
            "same); not yet measured on an FVP",
        ),
    )

    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self._driver: RunnerDriver | None = None
        self.reconnects = 0  # links that dropped under a step or a handshake and came back
        self._lost: InfrastructureError | None = None  # the link stayed away after a reconnect
        # What hil knows of the runner apart from what it says (set at provisioning): the build
        # it made or expects for this device file, and the binary it ran; None where it cannot
        # know (a board flashed by someone else: no file; no preset or flasher: no build).
        self._expected_build_id: str | None = None
        self._runner_file: RunnerFile | None = None

    # -- the runner connection -----------------------------------------------------------------

    def _connect_runner(
        self, link: Link, site: RunnerSite, policy: LinkPolicy, files: Files | None
    ) -> m.RunnerInfo:
        """A driver on `link` to the runner at `site`, after its handshake."""
        self._driver = RunnerDriver(self.spec.name, link, site, policy, files)
        return self._driver.hello()

    def _disconnect_runner(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            driver.close()

    @property
    def driver(self) -> RunnerDriver:
        if self._driver is None:
            raise InfrastructureError(
                f"{self.spec.name}: no runner is connected (the target lost it, or was never "
                "provisioned)",
                fix="the session takes the target out of service and provisions it afresh "
                "for the next attempt; the target's log says what ended the runner",
            )
        return self._driver

    @property
    def client(self) -> RunnerClient:
        """The runner's protocol client: its stats and log (diagnostics, fault tests)."""
        return self.driver.client

    def _require_engine(self, info: m.RunnerInfo, wanted: int, fix: str) -> None:
        """A runner without the engine the device file needs cannot serve its cases."""
        if info.engine == wanted:
            return
        raise TargetUnavailable(
            f"{self.spec.name}: its runner ({info.build_id}) has the {info.engine_name} engine"
            + (
                ", which links no ExecuTorch and cannot run models"
                if info.engine == m.ENGINE_ECHO
                else ""
            ),
            fix=fix,
        )

    def _expect_runner(self, build_id: str | None, runner: RunnerFile | Path | None) -> None:
        """Record what hil expects of the runner: the build id made (or to be made) for this
        device file, and the binary it hands over (a path is hashed now)."""
        self._expected_build_id = build_id
        self._runner_file = RunnerFile.of(runner) if isinstance(runner, Path) else runner

    def describe(self) -> dict[str, str]:
        """The runner's own account (build_id, build, planted_fault, ...: RunnerDriver) beside
        what hil expected: a certificate needs both, and that they agree."""
        facts = dict(super().describe())
        if self._driver is not None:
            facts.update(self._driver.describe())
        if self._expected_build_id is not None:
            facts["expected_build_id"] = self._expected_build_id
        if self._runner_file is not None:
            facts["runner_sha256"] = self._runner_file.sha256
            facts["runner_path"] = str(self._runner_file.path)
        return facts

    # -- deploy and run ----------------------------------------------------------------------

    def _step(self, doing: str, fn: Callable[[], R]) -> R:
        """One deploy or run. After a lost link (LinkLost: only kinds that can tell raise it)
        the target reconnects once and does the step again; a link that stays away keeps the
        target out of service, naming what was lost."""
        if self._lost is not None:
            raise self._lost
        try:
            return fn()
        except LinkLost as lost:
            self.log.warning("%s; reconnecting once", lost.message)
            try:
                self._reconnect()
                self.reconnects += 1
                return fn()
            except HilError as again:
                self._lost = self._stayed_away(doing, again)
                raise self._lost from again

    def _reconnect(self) -> None:
        """Get the runner back after a lost link (kinds that raise LinkLost give this)."""
        raise InfrastructureError(f"{self.spec.name}: a {self.spec.kind} target cannot reconnect")

    def _stayed_away(self, doing: str, again: HilError) -> InfrastructureError:
        """The error that keeps the target out of service when the link did not come back."""
        return InfrastructureError(
            f"{self.spec.name}: lost the link to the runner while {doing}, and could not get it "
            f"back: {again.message}",
            fix="check the device; the target stays out of service for the rest of this session",
        )

    def _deploy(self, artifact: Artifact) -> Deployment:
        sent = self._step(
            f"deploying {artifact.pte_path.name}", lambda: self.driver.deploy(artifact)
        )
        if sent:
            self.log.info("sent %d bytes of %s", sent, artifact.pte_path.name)
        return Deployment(artifact.sha256, handle=artifact, bytes_sent=sent)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        artifact: Artifact = deployment.handle
        run = self._step("running the model", lambda: self.driver.run(artifact, inputs, policy))
        return RunResult(
            outputs=run.outputs,
            timings_us=run.times.micros,
            timing=self.spec.latency.timing,
            counters=self._counters(artifact, run),
            log="\n".join(run.log_lines),
            not_the_model=run.not_the_model,
        )

    def _trace(
        self, deployment: Deployment, inputs: Inputs, debug_bytes: int, runs: int
    ) -> DeviceTrace:
        artifact: Artifact = deployment.handle
        return self._step(
            "tracing the model", lambda: self.driver.trace(artifact, inputs, debug_bytes, runs)
        )

    def _counters(self, artifact: Artifact, run: RunnerRun) -> dict[str, float]:
        """The runner's counters; a kind adds what only it measures."""
        return run.counters()
