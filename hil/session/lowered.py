"""The reference of the program a device ran, for one check, where the program has one apart
from the device.

* A program lowered through ExecuTorch's Arm backend (ethos-u, tosa-fp, vgf) keeps each
  delegate's TOSA graph and its host part beside the .pte: run in Arm's TOSA reference model,
  they give what the lowered program computes by the specification.
* A CPU program (portable, XNNPACK) on a runner device whose device file gives a measured
  `device_allowance` (vboard, pi5-emu): the same .pte on this machine's ExecuTorch runtime.

The device's outputs are judged against that reference (is the device faithful to its
program?), and that reference against the model (is the lowering faithful?), so a failure
names what to fix (hil.verdict.device).
"""

from __future__ import annotations

from hil.arrays import Array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceSpec
from hil.errors import HilError
from hil.targets import Target
from hil.targets.base import Deployment
from hil.targets.host import run_on_this_runtime
from hil.targets.tosa_ref import lowered_of
from hil.verdict.device import Lowered

# the recipes whose programs this process's ExecuTorch runtime runs as a runner device does
THIS_RUNTIME_RECIPES = ("portable", "xnnpack-fp32", "xnnpack-int8")
THIS_RUNTIME = "the same .pte on this machine's ExecuTorch runtime"


def lowered_reference(
    device: Target,
    spec: DeviceSpec,
    deployment: Deployment,
    artifact: Artifact,
    inputs: Inputs,
    outputs: tuple[Array, ...],
) -> Lowered | None:
    """The reference of the program `device` ran on `inputs` (its `outputs`, as the device gave
    them, before anything rewrote them); None where the program has none apart from it."""
    can = device.capabilities
    if artifact.parts.tosa_graphs and artifact.host_program is not None:
        if can.is_lowered_reference:
            return Lowered(outputs, by_construction=True)
        allowance = spec.device_allowance or can.device_allowance
        try:
            made = device.lowered_reference(deployment, inputs)
            if made is None:  # the device holds the program otherwise (a runner)
                made = lowered_of(artifact, inputs)
            return Lowered(made, allowance=allowance)
        except HilError as e:
            return Lowered(unavailable=f"its reference could not be run: {e.message}")
    if (
        can.own_runtime
        and spec.device_allowance is not None
        and artifact.recipe in THIS_RUNTIME_RECIPES
    ):
        try:
            made = run_on_this_runtime(artifact, inputs)
        except HilError as e:
            return Lowered(unavailable=f"its reference could not be run: {e.message}")
        return Lowered(made, source=THIS_RUNTIME, allowance=spec.device_allowance)
    return None
