"""The one door from a device file to its target, labgrid leases included."""

from __future__ import annotations

from hil.devices import DeviceSpec
from hil.settings import lab_settings
from hil.targets import Target, make_target


def open_target(spec: DeviceSpec) -> Target:
    """The target `spec` describes: its kind's class (hil.targets), leased through labgrid
    when its connection names a labgrid place or pool. labgrid is imported only then."""
    if lab_settings(spec.settings) is None:
        return make_target(spec)
    from hil.lab.target import LabTarget

    return LabTarget(spec, make_target)
