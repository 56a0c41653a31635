"""The host target: .pte files on the ExecuTorch runtime, in this process.

XNNPACK's thread pool is set to `connection.threads` (default 1) at provisioning, and torch's
intra-op threads are held at that count while a program runs (ExecuTorch 1.4.1 runs some
portable kernels in torch's pool, hil.threads): eager PyTorch is timed on one thread too, so a
budget relative to eager means the same on a 2-core and on a 64-core machine. Measured without
the hold: on a busy CI machine under 1.4.1, tiny_opt's portable program took 225 times eager's
time (budget 10; about 4 here), its kernels waiting on a pool thread the machine had no core for.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

from hil.arrays import Array, to_array
from hil.artifacts.store import Artifact
from hil.call import fresh
from hil.capture import captured_output
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import (
    DeployError,
    MissingKernel,
    RunRefused,
    TargetUnavailable,
)
from hil.quiet import runtime_start_quietly
from hil.settings import HostSettings
from hil.targets.base import Deployment, RunResult, Target
from hil.threads import intra_op_threads
from hil.timing import timed_runs

# Programs held loaded at once: a case deploys its program and runs it at once, and a session
# over ExecuTorch's 156 operator files deploys thousands.
HELD_PROGRAMS = 8


class HeldPrograms:
    """Programs loaded in this process's ExecuTorch runtime, each with its forward method, by
    sha256; the least recently used is let go beyond HELD_PROGRAMS."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[Any, Any]] = {}

    def held(self, sha256: str) -> Any:
        """The method of a program loaded by `method` (and not let go since)."""
        return self._held[sha256][1]

    def method(self, sha256: str, pte_path: Path) -> Any:
        """The program's method, loaded now unless it is held (RuntimeError: the runtime's
        refusal, for the caller to name)."""
        if sha256 in self._held:
            self._held[sha256] = self._held.pop(sha256)  # the most recent now
            return self._held[sha256][1]
        while len(self._held) >= HELD_PROGRAMS:
            del self._held[next(iter(self._held))]
        from executorch.runtime import Runtime

        program = Runtime.get().load_program(pte_path)
        self._held[sha256] = (program, program.load_method("forward"))
        return self._held[sha256][1]

    def clear(self) -> None:
        self._held.clear()


# the programs run_on_this_runtime judged devices against (a runner device's checks of one
# model share its program)
_REFERENCE_PROGRAMS = HeldPrograms()


class HostTarget(Target):
    """Loads each program once (keyed by its sha256) and keeps its method for later cases."""

    _programs: HeldPrograms
    _threads: int

    def _provision(self) -> None:
        try:
            from executorch.runtime import Runtime
        except ImportError as e:
            raise TargetUnavailable(
                f"the ExecuTorch runtime cannot be imported: {e}",
                fix="install executorch>=1.4 (make suites does this)",
            ) from e
        self._programs = HeldPrograms()
        settings = self.spec.settings
        self._threads = settings.threads if isinstance(settings, HostSettings) else 1
        from executorch.extension.pybindings import portable_lib

        with runtime_start_quietly():
            Runtime.get()
            portable_lib._unsafe_reset_threadpool(self._threads)

    def _deploy(self, artifact: Artifact) -> Deployment:
        try:
            self._programs.method(artifact.sha256, artifact.pte_path)
        except RuntimeError as e:
            if "Missing operator" in str(e) or "missing operator" in str(e).lower():
                raise MissingKernel(
                    f"the ExecuTorch runtime has no kernel for an operator of "
                    f"{artifact.pte_path}: {e}",
                    fix="restrict the case to recipes that delegate the operator, or build the "
                    "runtime with a kernel for it",
                ) from e
            raise DeployError(
                f"the ExecuTorch runtime refused {artifact.pte_path}: {e}",
                fix="delete the cache entry to re-export, or check the recipe's backend is "
                "registered in this runtime",
            ) from e
        return Deployment(artifact.sha256)  # in this process: nothing crosses a link

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        method = self._programs.held(deployment.sha256)  # loaded by its deploy, just before
        values = list(fresh(inputs))  # a program that writes its inputs writes these copies

        def once() -> Any:
            return method.execute(values)

        try:
            with intra_op_threads(self._threads):
                outputs, timings = timed_runs(once, policy)
        except RuntimeError as e:
            raise self._refusal(method, inputs, e) from e
        return RunResult(outputs=tuple(to_array(o) for o in outputs), timings_us=timings)

    @staticmethod
    def _refusal(method: Any, inputs: Inputs, error: RuntimeError) -> RunRefused:
        """execute() returned an error: a kernel refused its arguments, in this very process
        (a crash would have ended it). Run once more with the runtime's log captured, so the
        message names the operator and the kernel's own check."""
        with captured_output() as text, contextlib.suppress(RuntimeError):
            method.execute(list(fresh(inputs)))
        lines = [line for line in "".join(text).splitlines() if line.strip()]
        checks = [line for line in lines if "Check failed" in line or "failed at" in line]
        named = (re.search(r" in operator (\S+): ", line) for line in lines)
        operator = next((m.group(1) for m in named if m), None)
        where = f" in {operator}" if operator else ""
        return RunRefused(
            f"the ExecuTorch runtime refused to run the model{where}: {error}",
            fix="the kernel's own check is in the log lines: this runtime's kernel does not take "
            "these arguments (a rank, dtype or layout); restrict the case to other recipes or "
            "targets, or mark it xfail with that reason",
            log_tail="\n".join(checks or lines[-10:]),
        )

    def _teardown(self) -> None:
        self._programs.clear()


def run_on_this_runtime(artifact: Artifact, inputs: Inputs) -> tuple[Array, ...]:
    """The program on this process's ExecuTorch runtime, once, on one thread: the reference a
    runner device's outputs are judged against where its device file gives an allowance."""
    pte_path = artifact.pte_path
    try:
        method = _REFERENCE_PROGRAMS.method(artifact.sha256, pte_path)
        with intra_op_threads(1):
            outputs = method.execute(list(fresh(inputs)))
    except (ImportError, RuntimeError) as e:
        raise RunRefused(
            f"this machine's ExecuTorch runtime cannot run {pte_path}: {e}",
            fix="the device is then judged with its program as one (is the target right?)",
        ) from e
    return tuple(to_array(o) for o in outputs)
