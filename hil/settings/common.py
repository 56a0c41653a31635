"""Connection pieces several kinds share: link timings, the runner's firmware, a flash step."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from hil.settings.reader import Section

LINK_KEYS = ("reply_timeout_s", "bytes_per_s", "run_timeout_s", "retries")
# firmware/CMakePresets.json: preset -> (the compiler that identifies its toolchain, whether it
# links the executorch wheel's host libraries)
FIRMWARE_PRESETS: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {
        "host": ("c++", True),
        "linux-aarch64": ("aarch64-linux-gnu-g++", True),
        "cortex-m55": ("arm-none-eabi-gcc", False),
        "corstone-300": ("arm-none-eabi-gcc", False),
        "corstone-320": ("arm-none-eabi-gcc", False),
        "corstone-300-board": ("arm-none-eabi-gcc", False),
        "corstone-320-board": ("arm-none-eabi-gcc", False),
    }
)


@dataclass(frozen=True)
class LinkPolicy:
    """How long the runner protocol waits on one link, and how often it asks again."""

    reply_timeout_s: float = 2.0  # a small request's reply
    bytes_per_s: float = 50_000.0  # the slowest rate expected, to stretch waits for big frames
    run_timeout_s: float = 60.0  # silence allowed while a RUN executes (progress resets it)
    retries: int = 3  # repeats of one request after the first try

    @classmethod
    def parse(cls, section: Section) -> LinkPolicy:
        d = cls()
        retries = section.get("retries", int, d.retries, "a whole number >= 0")
        if retries < 0:
            section.fail(section.key("retries"), "a whole number >= 0", retries)
        return cls(
            reply_timeout_s=float(section.positive("reply_timeout_s", d.reply_timeout_s)),
            bytes_per_s=float(section.positive("bytes_per_s", d.bytes_per_s)),
            run_timeout_s=float(section.positive("run_timeout_s", d.run_timeout_s)),
            retries=retries,
        )


@dataclass(frozen=True)
class FirmwareChoice:
    """Which runner build a device wants: a preset of firmware/CMakePresets.json and defines;
    `preset` None means the kind's own default."""

    preset: str | None = None
    defines: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def parse(cls, section: Section) -> FirmwareChoice:
        raw = section.data.get("firmware")
        presets = tuple(FIRMWARE_PRESETS)
        if raw is None:
            return cls()
        if isinstance(raw, str):
            section.choice("firmware", presets, None)
            return cls(raw)
        inner = section.section("firmware")
        inner.reject_unknown(("preset", "defines"))
        defines = inner.get("defines", Mapping, {})
        return cls(
            inner.choice("preset", presets, None),  # none named: the kind's own, with defines
            MappingProxyType({str(k): str(v) for k, v in defines.items()}),
        )


@dataclass(frozen=True)
class FlashStep:
    """How to put a runner on a real board: a command with {image}, or a labgrid driver."""

    command: tuple[str, ...] = ()
    timeout_s: float = 300.0
    labgrid_config: str | None = None
    labgrid_target: str = "main"
    labgrid_driver: str = "OpenOCDDriver"

    @classmethod
    def parse(cls, section: Section) -> FlashStep | None:
        if not section.has("flash"):
            return None
        flash = section.section("flash")
        flash.reject_unknown(("command", "timeout_s", "labgrid"))
        if flash.has("command") == flash.has("labgrid"):
            section.fail(
                section.key("flash"),
                "{command: [...]} or {labgrid: {config, target, driver}}",
                section.data.get("flash"),
            )
        if flash.has("command"):
            return cls(flash.strings("command"), float(flash.positive("timeout_s", 300.0)))
        lab = flash.section("labgrid")
        lab.reject_unknown(("config", "target", "driver"))
        return cls(
            labgrid_config=lab.get("config", str),
            labgrid_target=lab.get("target", str, "main"),
            labgrid_driver=lab.get("driver", str, "OpenOCDDriver"),
        )
