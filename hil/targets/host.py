"""The host target: .pte files on the ExecuTorch runtime, in this process.

XNNPACK's thread pool is set to `connection.threads` (default 1) at provisioning: eager PyTorch
is timed on one thread too, so a budget relative to eager means the same on a 2-core and on a
64-core machine.
"""

from __future__ import annotations

from typing import Any

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.call import fresh
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import (
    DeployError,
    MissingKernel,
    TargetCrash,
    TargetUnavailable,
)
from hil.settings import HostSettings
from hil.targets.base import Deployment, RunResult, Target
from hil.timing import timed_runs


class HostTarget(Target):
    """Loads each program once (keyed by its sha256) and keeps its method for later cases."""

    _runtime: Any
    _methods: dict[str, Any]

    def _provision(self) -> None:
        try:
            from executorch.runtime import Runtime
        except ImportError as e:
            raise TargetUnavailable(
                f"the ExecuTorch runtime cannot be imported: {e}",
                fix="install executorch==1.5.1 (make suites does this)",
            ) from e
        self._runtime = Runtime.get()
        self._methods = {}
        settings = self.spec.settings
        threads = settings.threads if isinstance(settings, HostSettings) else 1
        from executorch.extension.pybindings import portable_lib

        portable_lib._unsafe_reset_threadpool(threads)

    def _deploy(self, artifact: Artifact) -> Deployment:
        if artifact.sha256 in self._methods:
            return Deployment(artifact.sha256)
        try:
            program = self._runtime.load_program(artifact.pte_path)
            method = program.load_method("forward")
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
        self._methods[artifact.sha256] = (program, method)
        return Deployment(artifact.sha256)  # in this process: nothing crosses a link

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        _, method = self._methods[deployment.sha256]
        values = list(fresh(inputs))  # a program that writes its inputs writes these copies

        def once() -> Any:
            return method.execute(values)

        try:
            outputs, timings = timed_runs(once, policy)
        except RuntimeError as e:
            raise TargetCrash(f"the ExecuTorch runtime failed to execute the model: {e}") from e
        return RunResult(outputs=tuple(to_array(o) for o in outputs), timings_us=timings)

    def _teardown(self) -> None:
        self._methods.clear()
