"""The lowered program's own reference for one check, where the program has one.

A program lowered through ExecuTorch's Arm backend (ethos-u, tosa-fp, vgf) keeps each delegate's
TOSA graph and its host part beside the .pte. Run in Arm's TOSA reference model, they give what
the lowered program computes by the specification: the device's outputs are judged against that
(is the device faithful to its program?), and that against the model (is the lowering
faithful?), so a failure names what to fix (hil.verdict.device).
"""

from __future__ import annotations

from hil.arrays import Array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.errors import HilError
from hil.targets import Target
from hil.targets.base import Deployment
from hil.targets.tosa_ref import lowered_of
from hil.verdict.device import Lowered


def lowered_reference(
    device: Target,
    deployment: Deployment,
    artifact: Artifact,
    inputs: Inputs,
    outputs: tuple[Array, ...],
) -> Lowered | None:
    """The reference of the program `device` ran on `inputs` (its `outputs`, as the device gave
    them, before anything rewrote them); None where the program has no TOSA graph."""
    if not artifact.parts.tosa_graphs or artifact.host_program is None:
        return None
    if device.is_lowered_reference:
        return Lowered(outputs, by_construction=True)
    try:
        made = device.lowered_reference(deployment, inputs)
        if made is None:
            made = lowered_of(artifact, inputs)
    except HilError as e:
        return Lowered(unavailable=f"its reference could not be run: {e.message}")
    return Lowered(made, allowance=device.device_allowance)
