"""Typed device-file sections: one settings type per target kind, validated when the file loads.

A misspelt or malformed key is a DeviceSpecError naming the file, the key and the valid keys
before any target starts; code downstream reads typed fields, never `connection.get(...)`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hil.kinds import TargetKind
from hil.settings.fvp import FvpSettings
from hil.settings.host import HostSettings, ReferenceSettings
from hil.settings.lab import LabSettings
from hil.settings.reader import Section
from hil.settings.serial import SerialSettings
from hil.settings.ssh import SshSettings

Settings = HostSettings | ReferenceSettings | SerialSettings | SshSettings | FvpSettings


def parse_settings(
    kind: TargetKind,
    section: Section,
    *,
    device: str,
    npu: str | None,
    accelerators: Sequence[str | None],
) -> Settings:
    """The connection section of a device of `kind`, typed."""
    if kind is TargetKind.HOST:
        return HostSettings.parse(section)
    if kind in (
        TargetKind.ETHOS_U_REF,
        TargetKind.TOSA_REF,
        TargetKind.CORTEX_M_REF,
        TargetKind.VGF_EMU,
    ):
        return ReferenceSettings.parse(section)
    if kind is TargetKind.SERIAL:
        return SerialSettings.parse(section)
    if kind is TargetKind.SSH:
        return SshSettings.parse(section)
    return FvpSettings.parse(section, device=device, npu=npu, accelerators=accelerators)


def lab_settings(settings: Settings) -> LabSettings | None:
    """A device's labgrid lease settings, when it is a board leased from a lab."""
    return settings.labgrid if isinstance(settings, (SerialSettings, SshSettings)) else None


__all__ = [
    "FvpSettings",
    "HostSettings",
    "LabSettings",
    "ReferenceSettings",
    "Section",
    "SerialSettings",
    "Settings",
    "SshSettings",
    "lab_settings",
    "parse_settings",
]
