"""Target kinds, one module each; `make_target` picks the class a device spec's kind names.

A device whose connection names a labgrid place is that kind's board leased through the lab,
a layer above: hil.lab.open_target wraps this for it."""

from __future__ import annotations

import importlib

from hil.devices import DeviceSpec
from hil.errors import UsageError
from hil.settings import lab_settings
from hil.targets.base import Deployment, RunResult, State, Target

# kind -> "module:Class", imported only when a device of that kind is used.
TARGET_CLASSES = {
    "host": "hil.targets.host:HostTarget",
    "serial": "hil.targets.serial:SerialTarget",
    "ethos_u_ref": "hil.targets.ethos_u_ref:EthosURefTarget",
    "tosa_ref": "hil.targets.tosa_ref:TosaRefTarget",
    "vgf_emu": "hil.targets.vgf_emu:VgfEmuTarget",
    "cortex_m_ref": "hil.targets.cortex_m_ref:CortexMRefTarget",
    "ssh": "hil.targets.ssh:SshTarget",
    "fvp": "hil.targets.fvp:FvpTarget",
}


def make_target(spec: DeviceSpec) -> Target:
    if lab_settings(spec.settings) is not None:
        raise UsageError(
            f"target {spec.name!r} is a board leased through labgrid; make_target builds the "
            "board itself",
            fix="open it with hil.lab.open_target.open_target",
        )
    try:
        module_name, class_name = TARGET_CLASSES[spec.kind].split(":")
    except KeyError:
        raise UsageError(
            f"target {spec.name!r} has kind {spec.kind!r}, which this version of hil cannot drive",
            fix="known kinds: " + ", ".join(sorted(TARGET_CLASSES)),
        ) from None
    cls = getattr(importlib.import_module(module_name), class_name)
    target: Target = cls(spec)
    return target


__all__ = ["TARGET_CLASSES", "Deployment", "RunResult", "State", "Target", "make_target"]
