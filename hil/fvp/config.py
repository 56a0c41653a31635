"""An FVP device's settings (checked when the device file loads: hil/settings/fvp.py), and the
runner an FVP runs."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError
from hil.sdk import firmware
from hil.settings.fvp import (
    SEMIHOSTING_CMDLINE_MAX,
    Engine,
    FvpSettings,
    Mode,
    managed_params,
    semihosting_cmd_line,
)

FvpConfig = FvpSettings  # the name the FVP modules have always used

__all__ = [
    "SEMIHOSTING_CMDLINE_MAX",
    "Engine",
    "FvpConfig",
    "Mode",
    "fvp_config",
    "managed_params",
    "runner_firmware",
    "semihosting_cmd_line",
]


def fvp_config(spec: DeviceSpec) -> FvpSettings:
    """The FVP settings of a device file (refused at load when malformed)."""
    if not isinstance(spec.settings, FvpSettings):
        raise DeviceSpecError(f"{spec.source}: {spec.name} is a {spec.kind} device, not an FVP")
    return spec.settings


def runner_firmware(spec: DeviceSpec, config: FvpSettings) -> firmware.FirmwareConfig:
    """The runner an FVP device runs: connection.firmware (default: the platform's preset), as
    `hil firmware build` makes it; the echo engine builds without ExecuTorch."""
    built = firmware.firmware_config(spec, config.platform.firmware_preset)
    if config.engine is not Engine.ECHO:
        return built
    defines = {**built.defines, "HIL_ENGINE_EXECUTORCH": "OFF"}
    return replace(built, defines=MappingProxyType(defines))
