"""FVP targets: the device file, the FVP binary and its version, the Arm toolchain, the
ExecuTorch install the runner links, and the runner build. Each probe is the function
FvpTarget's provisioning calls, in the same order, so the first missing piece is the reason
pytest skips with."""

from __future__ import annotations

from collections.abc import Iterator

from hil.devices import DeviceSpec
from hil.doctor import MISSING, NOTE, OK, Finding, finding_from
from hil.doctor.checks import compiler, executorch_source, runner_build
from hil.errors import HilError
from hil.fvp import locate
from hil.fvp.config import FvpConfig, fvp_config, runner_firmware
from hil.sdk.firmware import FirmwareConfig


def check_fvp(spec: DeviceSpec) -> Iterator[Finding]:
    try:
        config = fvp_config(spec)
    except HilError as e:
        yield Finding("device file", MISSING, e.message, e.fix, e)
        return
    yield Finding(
        "device file",
        OK,
        f"{config.platform.describe()}, {config.npu} (num_macs {config.num_macs}, agrees with "
        f"the recipes), {config.mode} mode, --timelimit {config.time_limit_s:.0f} s",
    )
    yield from _fvp_binary(config)
    runner = runner_firmware(spec, config)
    yield _executorch(config, runner)
    yield compiler("arm-none-eabi-gcc")
    yield runner_build(runner, spec.name)


def _fvp_binary(config: FvpConfig) -> Iterator[Finding]:
    what = "FVP binary"
    try:
        binary = locate.find_fvp(config)
    except HilError as e:
        yield Finding(what, MISSING, e.message, e.fix, e)
        return
    yield finding_from(what, lambda: f"{binary}: Fast Models {locate.fvp_version(binary)}")


def _executorch(config: FvpConfig, runner: FirmwareConfig) -> Finding:
    what = "ExecuTorch for the CPU"
    if config.engine == "echo":
        return Finding(what, NOTE, "not needed: the device runs the echo engine (link bring-up)")
    return finding_from(what, lambda: executorch_source(locate.executorch_install(config, runner)))
