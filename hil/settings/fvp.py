"""The `connection` of an FVP device, checked and typed (no I/O).

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
    model_load: auto           # auto: LOAD_FILE through semihosting when the runner offers it
    reply_timeout_s / bytes_per_s / run_timeout_s / retries   as for serial targets

The NPU the FVP models must be the one the recipes compile for: the device's `npu` must belong
to the platform's NPU family, and its MAC count must be one the FVP offers and equal
`num_macs` and any num_macs parameter in `params`. A disagreement is refused here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import NoReturn

from hil.errors import DeviceSpecError
from hil.settings.common import LINK_KEYS, FirmwareChoice, LinkPolicy
from hil.settings.fvp_platforms import PLATFORMS, FvpPlatform, npu_macs
from hil.settings.reader import Section
from hil.settings.serial import ModelLoad

DOCS = "docs/targets/fvp.md"
# The FVP keeps fewer than 256 characters of the semihosting command line and drops the rest
# without a word (ExecuTorch's FVP runner refuses longer ones for that reason).
SEMIHOSTING_CMDLINE_MAX = 255
PROGRAM_NAME = "hil-runner"
KEYS = (
    "platform",
    "num_macs",
    "mode",
    "time_limit_s",
    "stat",
    "fvp_dir",
    "firmware",
    "engine",
    "runner_args",
    "params",
    "boot_timeout_s",
    *LINK_KEYS,
    "baudrate",
    "model_load",
)


class Mode(enum.StrEnum):
    ACCURATE = "accurate"
    FAST = "fast"  # Arm's functional NPU model: cycle counts kept apart, never judged


class Engine(enum.StrEnum):
    EXECUTORCH = "executorch"
    ECHO = "echo"  # link bring-up only: outputs are the inputs, never a model verdict


@dataclass(frozen=True)
class FvpSettings:
    device: str
    source: str
    platform: FvpPlatform
    npu: str
    num_macs: int
    mode: Mode = Mode.ACCURATE
    time_limit_s: float = 3600.0
    stat: bool = True
    fvp_dir: str | None = None
    engine: Engine = Engine.EXECUTORCH
    runner_args: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    boot_timeout_s: float = 120.0
    firmware: FirmwareChoice = field(default_factory=FirmwareChoice)
    policy: LinkPolicy = field(default_factory=LinkPolicy)
    model_load: ModelLoad = ModelLoad.AUTO
    baudrate: int = 115200

    @property
    def fast(self) -> bool:
        return self.mode is Mode.FAST

    @classmethod
    def parse(
        cls, section: Section, *, device: str, npu: str | None, accelerators: Sequence[str | None]
    ) -> FvpSettings:
        section.reject_unknown(KEYS)
        platform = PLATFORMS[
            section.choice("platform", tuple(PLATFORMS), None)
            or _missing(section, "platform", tuple(PLATFORMS))
        ]
        npu = _check_npu(section.source, platform, npu, accelerators)
        macs = npu_macs(npu)
        stated = section.data.get("num_macs", macs)
        if stated != macs:
            raise DeviceSpecError(
                f"{section.source}: connection.num_macs is {stated!r}, but the device's npu {npu} "
                f"has {macs} MACs; the FVP would run a command stream Vela compiled for another "
                "NPU",
                fix="make connection.num_macs equal the MACs of npu (or leave it out)",
            )
        settings = cls(
            device=device,
            source=str(section.source),
            platform=platform,
            npu=npu,
            num_macs=macs,
            mode=Mode(section.choice("mode", tuple(Mode), "accurate")),
            time_limit_s=float(section.positive("time_limit_s", 3600.0)),
            stat=section.flag("stat", True),
            fvp_dir=section.text("fvp_dir"),
            engine=Engine(section.choice("engine", tuple(Engine), "executorch")),
            runner_args=section.strings("runner_args"),
            params=_params(section, platform, npu, macs),
            boot_timeout_s=float(section.positive("boot_timeout_s", 120.0)),
            firmware=FirmwareChoice.parse(section),
            policy=LinkPolicy.parse(section),
            model_load=ModelLoad(section.choice("model_load", tuple(ModelLoad), "auto")),
            baudrate=int(section.positive("baudrate", 115200, integer=True)),
        )
        semihosting_cmd_line(settings)  # refused now, before any work, if the FVP would cut it
        return settings


def _missing(section: Section, key: str, choices: tuple[str, ...]) -> NoReturn:
    section.missing(key, "one of " + ", ".join(choices))


def semihosting_cmd_line(settings: FvpSettings) -> str:
    """The runner's argv as semihosting hands it over; refused when the FVP would cut it."""
    line = " ".join((PROGRAM_NAME, *settings.runner_args))
    if len(line) > SEMIHOSTING_CMDLINE_MAX:
        raise DeviceSpecError(
            f"{settings.source}: the semihosting command line would be {len(line)} characters; "
            f"the FVP keeps only {SEMIHOSTING_CMDLINE_MAX} and silently drops the rest "
            f"({line[:60]}...)",
            fix="shorten connection.runner_args (short relative paths: the runner's "
            "semihosting folder is its working directory)",
        )
    return line


def _check_npu(
    source: Path, platform: FvpPlatform, npu: str | None, accelerators: Sequence[str | None]
) -> str:
    if npu is None or not npu.startswith(platform.npu_family + "-"):
        raise DeviceSpecError(
            f"{source}: the {platform.name} FVP models an {platform.npu_family.upper()}, "
            f"but the device's npu is {npu!r}",
            fix=f"set npu to an {platform.npu_family} configuration "
            f"({', '.join(f'{platform.npu_family}-{m}' for m in platform.macs)})",
        )
    macs = npu_macs(npu)
    if macs not in platform.macs:
        raise DeviceSpecError(
            f"{source}: the {platform.name} FVP offers {platform.npu_family} with "
            f"{', '.join(map(str, platform.macs))} MACs, not {macs}",
            fix="pick an npu the FVP models",
        )
    for index, compiled in enumerate(accelerators):
        if compiled is not None and compiled != npu:  # devices.py refuses this too
            raise DeviceSpecError(
                f"{source}: recipes[{index}] compiles for {compiled}, the FVP runs {npu}",
                fix="make every recipe's accelerator_config equal the device's npu",
            )
    return npu


def _params(section: Section, platform: FvpPlatform, npu: str, macs: int) -> Mapping[str, str]:
    """Extra -C parameters; those hil sets itself may not be overridden (num_macs may be
    repeated only with the same value)."""
    raw = section.get("params", Mapping, {}, "a mapping of FVP parameter names to values")
    managed = managed_params(platform)
    params: dict[str, str] = {}
    for name, value in raw.items():
        text = str(int(value)) if isinstance(value, bool) else str(value)
        if name == platform.num_macs_param and text != str(macs):
            raise DeviceSpecError(
                f"{section.source}: connection.params sets {name}={text}, but the device's npu "
                f"{npu} has {macs} MACs",
                fix=f"remove {name} from connection.params (hil sets it from npu)",
            )
        if name in managed and name != platform.num_macs_param:
            raise DeviceSpecError(
                f"{section.source}: connection.params may not set {name}: hil sets it to reach "
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
