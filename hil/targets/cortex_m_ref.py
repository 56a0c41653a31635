"""Cortex-M numerics without a board: the cortex_m-lowered program on its Python reference ops.

The Cortex-M recipe keeps, beside the .pte, the edge program exactly as the cortex_m passes left
it before serialization (host_program.pt2). Its `cortex_m::` operators are the CMSIS-NN kernels on
a device; ExecuTorch registers a Python reference implementation for each of them, which this
target runs, with PyTorch's kernels for the operators that stay portable. That checks the
lowering's integer arithmetic (requantization multipliers and shifts, zero points, layouts) at
every run, from cached files. It says nothing about speed: no timings are reported.

Counters: cmsis_nn_ops, portable_ops, cmsis_nn_fraction, pte_bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.call import fresh
from hil.case import Inputs
from hil.compat.cortex_m import CMSIS_NN_FIX, missing_cmsis_nn_bindings
from hil.devices import TimingPolicy
from hil.errors import DeployError, DeviceSpecError, TargetUnavailable
from hil.export.lowering import flatten_outputs
from hil.recipes.cortex_m import channels_last
from hil.recipes.host_program import load_host_program
from hil.targets.base import Capabilities, Deployment, RunResult, Target


class CortexMRefTarget(Target):
    """Runs the cortex_m edge program's reference operators on the host."""

    # The CPU part runs on PyTorch's kernels here, not the device runtime's: the verdict judges
    # from the partition report whether the device would have a kernel for each CPU operator.
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(runs_device_kernels=False)

    _loaded: dict[str, tuple[Any, bool, dict[str, float]]]

    def _provision(self) -> None:
        try:
            import executorch.backends.cortex_m.passes  # noqa: F401  (cortex_m:: operators)
        except ImportError as e:
            raise TargetUnavailable(
                f"ExecuTorch's cortex_m operators cannot be imported: {e}",
                fix="install executorch>=1.4 (make suites does this)",
            ) from e
        missing = missing_cmsis_nn_bindings()
        if missing is not None:  # every case would fail inside the passes: nothing to run
            raise TargetUnavailable(missing, fix=CMSIS_NN_FIX)
        for recipe in self.spec.recipes:
            if recipe.name != "cortex-m":
                raise DeviceSpecError(
                    f"{self.spec.source}: target kind cortex_m_ref runs only the 'cortex-m' "
                    f"recipe, not {recipe.name!r}",
                    fix=f"list only 'cortex-m' recipes in {self.spec.source.name}",
                )
        self._loaded = {}

    def _deploy(self, artifact: Artifact) -> Deployment:
        if artifact.sha256 in self._loaded:
            return Deployment(artifact.sha256)
        part, report = artifact.parts.cortex_m, artifact.parts.partition
        if part is None or report is None or artifact.host_program is None:
            raise DeployError(
                f"{artifact.pte_path} was not made by the cortex-m recipe",
                fix="export with the target's own recipe",
            )
        module = load_host_program(artifact.folder)
        counters = {
            "cmsis_nn_ops": float(report.accelerated_count),
            "portable_ops": float(report.fallback_count),
            "cmsis_nn_fraction": report.delegated_fraction,
            "pte_bytes": float(artifact.size),
        }
        self._loaded[artifact.sha256] = (module, part.channels_last, counters)
        return Deployment(artifact.sha256)  # in this process: nothing crosses a link

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        module, layout, counters = self._loaded[deployment.sha256]
        values = tuple(channels_last(t) for t in fresh(inputs)) if layout else fresh(inputs)
        try:
            with torch.no_grad():
                result = module(*values)
        except Exception as e:
            # A torch reference operator refusing a dtype says nothing of the device: its
            # portable and CMSIS-NN kernels are other code (measured: ExecuTorch's dilated int8
            # convolution, refused here by torch's slow_conv_dilated, runs right on qemu-m55).
            # So the target question is not judged; a device or qemu-m55 judges it.
            return RunResult(
                outputs=(),
                counters=counters,
                log=f"the Python reference operators did not run it: {type(e).__name__}: {e}",
                not_the_model=f"{self.spec.name} cannot run this program in the cortex_m Python "
                f"reference operators ({type(e).__name__}: {str(e).splitlines()[0][:160]}); "
                "judge it on qemu-m55 (hil sdk build --board qemu-m55) or a board",
            )
        return RunResult(
            outputs=tuple(to_array(t) for t in flatten_outputs(result)),
            counters=counters,
            log="ran the cortex_m program's Python reference operators (no timing)",
        )

    def _teardown(self) -> None:
        self._loaded.clear()

    def describe(self) -> Mapping[str, str]:
        return {**super().describe(), "numerics": "cortex_m Python reference operators"}
