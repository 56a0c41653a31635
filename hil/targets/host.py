"""The host target: .pte files on the ExecuTorch runtime, in this process."""

from __future__ import annotations

from typing import Any

from hil.arrays import to_array
from hil.cache import Artifact
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import DeployError, TargetCrash, TargetUnavailable
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

    def _deploy(self, artifact: Artifact) -> Deployment:
        if artifact.sha256 in self._methods:
            return Deployment(artifact.sha256)
        try:
            program = self._runtime.load_program(artifact.pte_path)
            method = program.load_method("forward")
        except RuntimeError as e:
            raise DeployError(
                f"the ExecuTorch runtime refused {artifact.pte_path}: {e}",
                fix="delete the cache entry to re-export, or check the recipe's backend is "
                "registered in this runtime",
            ) from e
        self._methods[artifact.sha256] = (program, method)
        return Deployment(artifact.sha256, bytes_sent=artifact.size)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        _, method = self._methods[deployment.sha256]
        values = list(inputs)

        def once() -> Any:
            return method.execute(values)

        try:
            outputs, timings = timed_runs(once, policy)
        except RuntimeError as e:
            raise TargetCrash(f"the ExecuTorch runtime failed to execute the model: {e}") from e
        return RunResult(outputs=tuple(to_array(o) for o in outputs), timings_us=timings)

    def _teardown(self) -> None:
        self._methods.clear()
