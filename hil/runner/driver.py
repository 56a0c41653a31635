"""RunnerDriver: the runner protocol for every target that runs hil's runner, in one place.

A target composes a *site* (where the runner lives: a board on a port, a runner process on a
pty, QEMU, an FVP, a login over SSH; hil/resources) with this driver, which speaks
firmware/PROTOCOL.md over the site's link: handshake, deploy with hash-skip (by the link, or by
a file the runner reads itself), inputs, run, outputs, memory statistics. It is also the one
place that classifies failures:

    the runner faulted or asserted              TargetCrash, with the site's last log lines
    the link failed and the runner has ended    TargetCrash, saying how it ended
    a cause only the site can tell              the site's own error (an FVP at its time limit
                                                or without a licence, a dropped SSH login)
    the link failed, the runner still runs      the InfrastructureError, with where to look

so a fix here reaches serial boards, virtual boards, QEMU, FVPs, Pis and lab racks at once.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hil.arrays import Array, to_array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import (
    CaseError,
    DeployError,
    HilError,
    InfrastructureError,
    RunRefused,
    TargetCrash,
)
from hil.runner import messages as m
from hil.runner.client import LoadOutcome, RunnerClient
from hil.runner.file_load import StaleModelFile, load_file
from hil.runner.kernels import KernelList
from hil.runner.pools import check_fits, pool_counters
from hil.runner.pte_plan import read_plans
from hil.settings.common import LinkPolicy
from hil.transports import Link

R = TypeVar("R")

ECHO_OUTPUTS = (
    "the runner has the echo engine: its outputs are its inputs, not the model's; build it "
    "with EXECUTORCH_ROOT for model verdicts"
)


class RunnerSite(Protocol):
    """Where a runner lives, as the driver needs to know it when something fails."""

    name: str

    @property
    def log_path(self) -> Path | None:
        """The runner's own log (stderr, semihosting console), if the site keeps one."""
        ...

    def gone(self) -> str | None:
        """How the runner ended ("exited with status 1"), once it has; None while it runs
        or when the site cannot tell (a real board)."""
        ...

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None:
        """A cause of `error` only this site can tell, or None."""
        ...

    def log_tail(self, lines: int = 30) -> str: ...

    @property
    def restart_note(self) -> str:
        """What happens after a crash ("the next case starts the runner again")."""
        ...

    @property
    def log_label(self) -> str:
        """What messages call the log: "board log", "FVP log", "runner log"."""
        ...


@dataclass(frozen=True)
class Files:
    """Models go by LOAD_FILE: `path` says where the runner finds an artifact's file (this
    machine's path through semihosting, or a path on the device); `put` copies it there when
    the runner finds it missing or stale (None: nothing can be copied, a stale file is an
    error); `required`: refuse a runner that cannot load files, instead of using the link."""

    path: Callable[[Artifact], str]
    put: Callable[[Artifact], int] | None = None
    required: bool = False


def local_files(required: bool = False) -> Files:
    """The runner reads this machine's file itself (QEMU or an FVP serving semihosting)."""
    return Files(lambda artifact: str(artifact.pte_path.resolve()), None, required)


@dataclass(frozen=True)
class RunnerRun:
    """What one RUN gave back, before a target adds its own counters."""

    outputs: tuple[Array, ...]
    times: m.RunTimes
    pools: tuple[m.PoolStat, ...]
    log_lines: list[str] = field(default_factory=list)
    echo: bool = False  # the echo engine: the outputs are the inputs

    def counters(self) -> dict[str, float]:
        """The runner's clock, its median CPU cycles per run, and its memory pools."""
        counters: dict[str, float] = {"runner_clock_hz": float(self.times.clock_hz)}
        if self.times.clock_kind == m.CLOCK_CYCLES and self.times.ticks:
            counters["cpu_cycles"] = float(statistics.median(self.times.ticks))
        counters.update(pool_counters(self.pools))
        return counters

    @property
    def not_the_model(self) -> str:
        return ECHO_OUTPUTS if self.echo else ""


@dataclass(frozen=True)
class DeviceTrace:
    """ExecuTorch's ETDump of one explaining run on the device, and the debug buffer holding
    its intermediate outputs (empty when none were asked for). `clock_hz` and `clock_kind`
    (messages.CLOCK_*) say what the ETDump's timestamps count: nanoseconds or CPU cycles."""

    etdump: bytes
    debug: bytes
    clock_hz: int
    clock_kind: int

    @property
    def clock(self) -> str:
        return "CPU cycles" if self.clock_kind == m.CLOCK_CYCLES else "ns"


class RunnerDriver:
    """One runner on one link: call hello() first, then deploy and run."""

    def __init__(
        self,
        name: str,
        link: Link,
        site: RunnerSite,
        policy: LinkPolicy,
        files: Files | None = None,
    ) -> None:
        self.name = name
        self.link = link
        self.site = site
        self.files = files
        self.client = RunnerClient(link, name=name, policy=policy)
        self.info: m.RunnerInfo | None = None
        self._held: str | None = None
        self._methods: dict[str, m.MethodInfo] = {}
        # The kernels the runner's ExecuTorch registers, where its SDK lists them: a program
        # calling another operator is refused before any byte is sent (else the runner's own
        # MISSING_OPERATOR at load decides).
        self.kernels: KernelList | None = None

    # -- handshake ---------------------------------------------------------------------------

    def hello(self) -> m.RunnerInfo:
        info = self.call("the handshake", self.client.hello)
        self.info = info
        self._held = info.held_sha256 if info.holds_model else None
        self._methods = {}
        return info

    @property
    def echo(self) -> bool:
        return self.info is not None and self.info.engine == m.ENGINE_ECHO

    def describe(self) -> dict[str, str]:
        """What the runner said of itself in the handshake (and only that: what hil expected
        of it is the target's to add)."""
        info = self.info
        if info is None:
            return {}
        facts = {
            "build_id": info.build_id,
            "platform": info.platform,
            "executorch": info.runtime_version,
            "engine": info.engine_name,
            "protocol": f"{info.protocol[0]}.{info.protocol[1]}",
            # a release runner refuses DEBUG (hang or fault on purpose): a test build accepts it
            "debug_commands": "accepted" if info.debug_commands else "refused",
            "etdump": "yes" if info.trace else "no",
            "build": info.build,  # release, test, or unknown (a runner older than 1.4)
        }
        if info.planted_fault:  # the runner's own word: a kernel wrong on purpose
            facts["planted_fault"] = info.planted_fault
        return facts

    # -- failures: the one place they are classified -------------------------------------------

    def call(self, doing: str, fn: Callable[..., R], *args: Any) -> R:
        """One protocol step; its failure becomes what the session needs to know."""
        try:
            return fn(*args)
        except TargetCrash as e:
            raise self.crashed(doing, e.message.removeprefix(f"{self.name}: ")) from e
        except RunRefused as e:
            if e.log_tail:
                raise
            # the runtime's reason went to the site's console (semihosting, stderr), not the
            # link: its last lines, and where the rest is
            where = f"; {self.site.log_label}: {self.site.log_path}" if self.site.log_path else ""
            raise RunRefused(e.message + where, fix=e.fix, log_tail=self.site.log_tail(20)) from e
        except InfrastructureError as e:
            raise self.classify(doing, e) from e

    def classify(self, doing: str, error: InfrastructureError) -> HilError:
        own = self.site.explain(doing, error)
        if own is not None:
            return own
        ended = self.site.gone()
        if ended is not None:
            return self.crashed(doing, f"{type(error).__name__}: {error.message}", ended)
        where = f"; {self.site.log_label}: {self.site.log_path}" if self.site.log_path else ""
        return type(error)(f"{error.message} (while {doing}{where})", fix=error.fix)

    def crashed(self, doing: str, reason: str, ended: str | None = None) -> TargetCrash:
        state = ended or self.site.gone() or "it reported a fault"
        where = f"; {self.site.log_label}: {self.site.log_path}" if self.site.log_path else ""
        return TargetCrash(
            f"{self.name}: the runner crashed while {doing} ({state}): {reason}",
            fix=f"{self.site.restart_note}; the log lines below are the runner's last words"
            + where,
            log_tail=self.site.log_tail(20) or "\n".join(self.client.log_lines),
        )

    # -- deploy --------------------------------------------------------------------------------

    def holds(self, sha256: str) -> bool:
        return self._held == sha256 and sha256 in self._methods

    def deploy(self, artifact: Artifact) -> int:
        """Make the runner hold the artifact's model; the bytes that crossed the link (0 when
        it held the model already, or read it from a file)."""
        if self.holds(artifact.sha256):
            return 0
        outcome, sent = self._load(artifact)
        self._methods[artifact.sha256] = outcome.method
        self._held = artifact.sha256
        return sent

    def _load(self, artifact: Artifact) -> tuple[LoadOutcome, int]:
        info = self._info()
        data = artifact.pte_path.read_bytes()
        # planned memory and inputs are refused here, with the sizes; the model pool by the
        # load itself (the client checks first, the runner too)
        if not self.echo:
            if self.kernels is not None:
                used = {op for plan in read_plans(data) for op in plan.operators}
                missing = self.kernels.missing_for(self.name, artifact.pte_path, used)
                if missing is not None:
                    raise missing
            check_fits(self.name, data, {k: v for k, v in info.pools.items() if k != "model"})
        doing = f"loading {artifact.pte_path.name}"
        files = self.files
        if files is not None and files.required and not info.file_load:
            raise DeployError(
                f"{self.name}: models are to be loaded from files, but the runner "
                f"({info.build_id}) does not offer LOAD_FILE",
                fix="build it with semihosting (HIL_SEMIHOSTING=ON) and serve semihosting "
                "(QEMU -semihosting-config, an FVP, a debugger), or use model_load: link",
            )
        if files is None or not info.file_load:
            outcome = self.call(doing, self.client.load, data, artifact.sha256)
            return outcome, outcome.bytes_sent
        path = files.path(artifact)
        try:
            return self.call(doing, load_file, self.client, path, artifact.sha256, len(data)), 0
        except StaleModelFile:
            if files.put is None:
                raise
            sent = self.call(f"copying {artifact.pte_path.name}", files.put, artifact)
            return self.call(doing, load_file, self.client, path, artifact.sha256, len(data)), sent

    def forget(self) -> None:
        """A fresh runner holds nothing (after a reconnect or a reboot)."""
        self._held, self._methods = None, {}

    # -- run -----------------------------------------------------------------------------------

    def run(self, artifact: Artifact, inputs: Inputs, policy: TimingPolicy) -> RunnerRun:
        if not self.holds(artifact.sha256):  # another model was deployed since: put it back
            self.deploy(artifact)
        method = self._methods[artifact.sha256]
        echo = self.echo
        if not echo and len(inputs) != len(method.inputs):
            raise CaseError(
                f"the case gives {len(inputs)} inputs, the model on {self.name} "
                f"takes {len(method.inputs)}"
            )
        client = self.client
        client.take_log()
        self._set_inputs(method, inputs)
        times = self.call(
            "running the model",
            client.run,
            policy.warmup,
            policy.min_runs,
            policy.max_runs,
            policy.min_time_s,
            policy.max_time_s,
        )
        count = len(inputs) if echo else len(method.outputs)
        outputs = tuple(
            to_array(self.call(f"reading output {i}", client.get_output, i)) for i in range(count)
        )
        pools = self.call("reading memory statistics", client.mem_stats)
        return RunnerRun(outputs, times, pools, client.take_log(), echo)

    def _set_inputs(self, method: m.MethodInfo, inputs: Inputs) -> None:
        for index, tensor in enumerate(inputs):
            order = method.inputs[index].dim_order if index < len(method.inputs) else None
            spec, data = m.from_numpy(tensor.detach().cpu().numpy(), order)
            self.call(f"setting input {index}", self.client.set_input, index, spec, data)

    def trace(
        self, artifact: Artifact, inputs: Inputs, debug_bytes: int, runs: int = 1
    ) -> DeviceTrace:
        """`runs` runs with ExecuTorch's ETDump recorder on (and every intermediate output in
        a debug buffer of `debug_bytes`, when > 0), apart from the judged runs: the runner
        loads the model again with the recorder, runs it, and loads it again without it, as
        the judged runs had it. TraceUnavailable when the runner cannot record."""
        if not self.holds(artifact.sha256):
            self.deploy(artifact)
        method, client = self._methods[artifact.sha256], self.client
        self.call("starting an ETDump trace", client.trace, True, debug_bytes)
        try:
            self._set_inputs(method, inputs)
            times = self.call("running the model with ETDump", client.run, 0, runs, runs, 0.0, 0.0)
            etdump = self.call("reading the ETDump", client.get_trace, m.TRACE_ETDUMP)
            debug = (
                self.call("reading the debug buffer", client.get_trace, m.TRACE_DEBUG)
                if debug_bytes
                else b""
            )
        finally:
            self.call("stopping the ETDump trace", client.trace, False)
        return DeviceTrace(etdump, debug, times.clock_hz, times.clock_kind)

    def _info(self) -> m.RunnerInfo:
        if self.info is None:
            raise InfrastructureError(f"{self.name}: no handshake with the runner yet")
        return self.info

    def close(self) -> None:
        self.link.close()
