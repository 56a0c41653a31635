"""An FVP device file's `connection` section, checked and typed (no I/O).

    connection:
      platform: corstone-320     # corstone-300 (FVP_Corstone_SSE-300_Ethos-U55) | corstone-320
      num_macs: 256              # optional; must equal the MACs of the device's npu
      mode: accurate             # accurate | fast (the NPU model's --fast: no timing detail)
      time_limit_s: 3600         # --timelimit: the FVP stops itself after this many host seconds
      stat: true                 # --stat: simulation statistics when the FVP exits (logged)
      fvp_dir: null              # folder holding the FVP binary (else $HIL_FVP_DIR, else PATH)
      firmware: corstone-320     # runner preset, or {preset, defines}
      engine: executorch         # executorch | echo (echo: link bring-up only, outputs = inputs)
      runner_args: []            # semihosting command line after the program name (the
                                 #   whole line at most 255 characters: the FVP cuts longer ones)
      params: {}                 # more -C NAME: VALUE parameters for the FVP
      boot_timeout_s: 120        # until the FVP offers its UART
      reply_timeout_s / bytes_per_s / run_timeout_s / retries   as for serial targets

The NPU the FVP models must be the one the recipes compile for: the device's `npu` (which
devices.py already holds equal to every recipe's accelerator_config) must belong to the
platform's NPU family, and its MAC count must be one the FVP offers and equal `num_macs` and
any num_macs parameter in `params`. A disagreement is refused here, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError
from hil.fvp.platforms import PLATFORMS, FvpPlatform, npu_macs
from hil.runner import firmware

MODES = ("accurate", "fast")
# The FVP keeps fewer than 256 characters of the semihosting command line and drops the rest
# without a word (ExecuTorch's FVP runner refuses longer ones for that reason).
SEMIHOSTING_CMDLINE_MAX = 255
PROGRAM_NAME = "hil-runner"
ENGINES = ("executorch", "echo")
KEYS = (
    "platform", "num_macs", "mode", "time_limit_s", "stat", "fvp_dir", "firmware", "engine",
    "runner_args", "params", "boot_timeout_s", "reply_timeout_s", "bytes_per_s",
    "run_timeout_s", "retries", "baudrate", "model_load",
)  # fmt: skip


@dataclass(frozen=True)
class FvpConfig:
    device: str
    source: str
    platform: FvpPlatform
    npu: str
    num_macs: int
    mode: str = "accurate"
    time_limit_s: float = 3600.0
    stat: bool = True
    fvp_dir: str | None = None
    engine: str = "executorch"
    runner_args: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    boot_timeout_s: float = 120.0

    @property
    def fast(self) -> bool:
        return self.mode == "fast"


def _fail(spec: DeviceSpec, key: str, expected: str, got: Any) -> DeviceSpecError:
    return DeviceSpecError(
        f"{spec.source}: connection.{key} must be {expected}, got {got!r}",
        fix=f"edit {spec.source.name}; README (Setting up an FVP) lists the keys of an FVP device",
    )


def _number(spec: DeviceSpec, key: str, default: float) -> float:
    value = spec.connection.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise _fail(spec, key, "a positive number", value)
    return float(value)


def _choice(spec: DeviceSpec, key: str, choices: tuple[str, ...], default: str) -> str:
    value = spec.connection.get(key, default)
    if value not in choices:
        raise _fail(spec, key, "one of " + ", ".join(choices), value)
    return str(value)


def fvp_config(spec: DeviceSpec) -> FvpConfig:
    """The FVP configuration of a device file; DeviceSpecError names the first problem."""
    connection = spec.connection
    for key in connection:
        if key not in KEYS:
            raise _fail(spec, str(key), "one of the known keys (" + ", ".join(KEYS) + ")", key)
    name = _choice(spec, "platform", tuple(PLATFORMS), "")
    platform = PLATFORMS[name]
    npu = _check_npu(spec, platform)
    macs = npu_macs(npu)
    stated = connection.get("num_macs", macs)
    if stated != macs:
        raise DeviceSpecError(
            f"{spec.source}: connection.num_macs is {stated!r}, but the device's npu {npu} "
            f"has {macs} MACs; the FVP would run a command stream Vela compiled for another NPU",
            fix="make connection.num_macs equal the MACs of npu (or leave it out)",
        )
    params = _params(spec, platform, macs)
    runner_args = connection.get("runner_args", ())
    if isinstance(runner_args, str) or not all(isinstance(a, str) for a in runner_args):
        raise _fail(spec, "runner_args", "a list of strings", runner_args)
    fvp_dir = connection.get("fvp_dir")
    if fvp_dir is not None and not isinstance(fvp_dir, str):
        raise _fail(spec, "fvp_dir", "a folder path", fvp_dir)
    stat = connection.get("stat", True)
    if not isinstance(stat, bool):
        raise _fail(spec, "stat", "true or false", stat)
    config = FvpConfig(
        device=spec.name,
        source=str(spec.source),
        platform=platform,
        npu=npu,
        num_macs=macs,
        mode=_choice(spec, "mode", MODES, "accurate"),
        time_limit_s=_number(spec, "time_limit_s", 3600.0),
        stat=stat,
        fvp_dir=fvp_dir,
        engine=_choice(spec, "engine", ENGINES, "executorch"),
        runner_args=tuple(runner_args),
        params=params,
        boot_timeout_s=_number(spec, "boot_timeout_s", 120.0),
    )
    semihosting_cmd_line(config)  # refused here, before any work, when the FVP would cut it
    return config


def semihosting_cmd_line(config: FvpConfig) -> str:
    """The runner's argv as semihosting hands it over; refused when the FVP would cut it."""
    line = " ".join((PROGRAM_NAME, *config.runner_args))
    if len(line) > SEMIHOSTING_CMDLINE_MAX:
        raise DeviceSpecError(
            f"{config.source}: the semihosting command line would be {len(line)} characters; "
            f"the FVP keeps only {SEMIHOSTING_CMDLINE_MAX} and silently drops the rest "
            f"({line[:60]}...)",
            fix="shorten connection.runner_args (short relative paths: the runner's "
            "semihosting folder is its working directory)",
        )
    return line


def _check_npu(spec: DeviceSpec, platform: FvpPlatform) -> str:
    npu = spec.npu
    if npu is None or not npu.startswith(platform.npu_family + "-"):
        raise DeviceSpecError(
            f"{spec.source}: the {platform.name} FVP models an {platform.npu_family.upper()}, "
            f"but the device's npu is {npu!r}",
            fix=f"set npu to an {platform.npu_family} configuration "
            f"({', '.join(f'{platform.npu_family}-{m}' for m in platform.macs)})",
        )
    macs = npu_macs(npu)
    if macs not in platform.macs:
        raise DeviceSpecError(
            f"{spec.source}: the {platform.name} FVP offers {platform.npu_family} with "
            f"{', '.join(map(str, platform.macs))} MACs, not {macs}",
            fix="pick an npu the FVP models",
        )
    for index, recipe in enumerate(spec.recipes):
        compiled = recipe.options.get("accelerator_config")
        if compiled is not None and compiled != npu:  # devices.py refuses this too
            raise DeviceSpecError(
                f"{spec.source}: recipes[{index}] compiles for {compiled}, the FVP runs {npu}",
                fix="make every recipe's accelerator_config equal the device's npu",
            )
    return npu


def _params(spec: DeviceSpec, platform: FvpPlatform, macs: int) -> Mapping[str, str]:
    """Extra -C parameters; those hil sets itself may not be overridden (num_macs may be
    repeated only with the same value)."""
    raw = spec.connection.get("params", {})
    if not isinstance(raw, Mapping):
        raise _fail(spec, "params", "a mapping of FVP parameter names to values", raw)
    managed = managed_params(platform)
    params: dict[str, str] = {}
    for name, value in raw.items():
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if name == platform.num_macs_param and text != str(macs):
            raise DeviceSpecError(
                f"{spec.source}: connection.params sets {name}={text}, but the device's npu "
                f"{spec.npu} has {macs} MACs",
                fix=f"remove {name} from connection.params (hil sets it from npu)",
            )
        if name in managed and name != platform.num_macs_param:
            raise DeviceSpecError(
                f"{spec.source}: connection.params may not set {name}: hil sets it to reach "
                "the runner (UART terminal, semihosting) or from the keys above",
                fix="use connection.mode / time_limit_s / runner_args instead, or remove it",
            )
        params[str(name)] = text
    return MappingProxyType(params)


def managed_params(platform: FvpPlatform) -> frozenset[str]:
    terminal, uart = platform.terminal(0), platform.uart(0)
    return frozenset(
        {
            platform.num_macs_param,
            platform.npu_args_param,
            f"{terminal}.start_telnet",
            f"{terminal}.mode",
            f"{terminal}.start_port",
            f"{uart}.shutdown_on_eot",
            f"{uart}.out_file",
            platform.semihosting("enable"),
            platform.semihosting("cmd_line"),
            platform.semihosting("cwd"),
        }
    )


def runner_firmware(spec: DeviceSpec, config: FvpConfig) -> firmware.FirmwareConfig:
    """The runner an FVP device runs: connection.firmware (default: the platform's preset), as
    `hil firmware build` makes it; the echo engine builds without ExecuTorch."""
    built = firmware.firmware_config(spec, config.platform.firmware_preset)
    if config.engine != "echo":
        return built
    defines = {**built.defines, "HIL_ENGINE_EXECUTORCH": "OFF"}
    return firmware.FirmwareConfig(built.preset, MappingProxyType(defines))
