"""Device specs: `devices/*.yaml` -> frozen, typed `DeviceSpec` objects.

A device file says what a target is (its kind), which recipes lower models for it, how its
latency is measured and budgeted, its memory limits, and how to reach it. Parsing happens at
the boundary: a malformed file raises DeviceSpecError naming the file, the key and what was
expected, so nothing downstream ever sees a half-valid spec.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from hil.errors import DeviceSpecError, UsageError
from hil.kinds import Hardware, TargetKind, Timing
from hil.settings import Settings, parse_settings
from hil.settings.reader import Section
from hil.trust import untrusted

TARGET_KINDS = tuple(TargetKind)
TIMING_KINDS = tuple(Timing)
# "fixed": a named piece of hardware (a Pi 5, a board, an FVP's clock, Vela's NPU model), where
# absolute budgets mean something; "host": whatever machine runs hil (budgets relative to eager)
HARDWARE_KINDS = tuple(Hardware)
STATISTICS = ("median", "p90")


@dataclass(frozen=True)
class RecipeSpec:
    """One way of lowering a model for this device: a recipe name plus its options."""

    name: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __str__(self) -> str:
        """`ethos-u(a16w8=True, weights=int8)`: for logs and messages."""
        given = ", ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.name}({given})" if given else self.name


@dataclass(frozen=True)
class TimingPolicy:
    """How many runs make a latency measurement: warm-up, then repeat until both minimums hold."""

    warmup: int = 2
    min_runs: int = 5
    min_time_s: float = 0.2
    max_runs: int = 1000
    max_time_s: float = 3.0


@dataclass(frozen=True)
class LatencySpec:
    """What the device's timings mean and which budget applies when a case names none."""

    timing: Timing = Timing.MEASURED
    hardware: Hardware = Hardware.FIXED
    scale: float = 1.0
    budget_ms: float | None = None
    statistic: str = "median"
    policy: TimingPolicy = TimingPolicy()


@dataclass(frozen=True)
class MemorySpec:
    """Memory limits of the device; None means unlimited."""

    pte_max_bytes: int | None = None
    sram_max_bytes: int | None = None
    flash_max_bytes: int | None = None
    ram_max_bytes: int | None = None  # a run's working memory (the runner's pool peaks)


@dataclass(frozen=True)
class DeviceAllowance:
    """How far a device's outputs may be from its program's reference, with the measurement
    behind it (hil.verdict.device): output steps where quantized, ULPs of the output's peak
    where float; integer outputs equal."""

    steps: float = 0.0
    float_ulps: float = 0.0
    basis: str = "exact: the device computes its program as the reference defines it"

    def __str__(self) -> str:
        return f"{self.steps:g} step(s), {self.float_ulps:g} ULP(s) of the peak: {self.basis}"


@dataclass(frozen=True)
class DeviceSpec:
    """A target as described by its device file."""

    name: str
    kind: TargetKind
    description: str
    recipes: tuple[RecipeSpec, ...]
    latency: LatencySpec
    memory: MemorySpec
    settings: Settings  # the connection section, typed for the kind (hil.settings)
    source: Path
    npu: str | None = None  # the NPU configuration the device has, e.g. "ethos-u55-128"
    # measured: how far the device may be from its program's reference; given, a runner
    # device's CPU programs are also judged against this machine's ExecuTorch runtime
    device_allowance: DeviceAllowance | None = None

    def recipe(self, name: str) -> RecipeSpec:
        for spec in self.recipes:
            if spec.name == name:
                return spec
        valid = ", ".join(r.name for r in self.recipes)
        raise UsageError(f"target {self.name!r} has no recipe {name!r}; it has: {valid}")

    @property
    def recipe_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.recipes)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _parse_recipes(reader: Section) -> tuple[RecipeSpec, ...]:
    raw = reader.get("recipes", list, expected="a list of recipe names or {name, options} mappings")
    if not raw:
        reader.fail("recipes", "a non-empty list of recipes", raw)
    specs = []
    for index, item in enumerate(raw):
        key = f"recipes[{index}]"
        if isinstance(item, str):
            specs.append(RecipeSpec(item))
            continue
        entry = Section(item, reader.source, key)
        entry.reject_unknown(("name", "options"))
        specs.append(RecipeSpec(entry.get("name", str), _freeze(entry.get("options", Mapping, {}))))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        reader.fail("recipes", "a list without repeated names", names)
    return tuple(specs)


def _parse_latency(reader: Section) -> LatencySpec:
    section = reader.section("latency")
    section.reject_unknown(
        (
            "timing",
            "hardware",
            "scale",
            "budget_ms",
            "statistic",
            "warmup",
            "min_runs",
            "min_time_s",
            "max_runs",
            "max_time_s",
        )
    )
    defaults = TimingPolicy()
    warmup = section.get("warmup", int, defaults.warmup, "a non-negative integer")
    if warmup < 0:
        section.fail(section.key("warmup"), "a non-negative integer", warmup)
    policy = TimingPolicy(
        warmup=warmup,
        min_runs=section.positive("min_runs", defaults.min_runs, integer=True),
        min_time_s=float(section.positive("min_time_s", defaults.min_time_s)),
        max_runs=section.positive("max_runs", defaults.max_runs, integer=True),
        max_time_s=float(section.positive("max_time_s", defaults.max_time_s)),
    )
    if policy.max_runs < policy.min_runs:
        section.fail(
            section.key("max_runs"), f"at least min_runs ({policy.min_runs})", policy.max_runs
        )
    budget = section.positive("budget_ms", None)
    return LatencySpec(
        timing=Timing(section.choice("timing", TIMING_KINDS, "measured")),
        hardware=Hardware(section.choice("hardware", HARDWARE_KINDS, "fixed")),
        scale=float(section.positive("scale", 1.0)),
        budget_ms=None if budget is None else float(budget),
        statistic=section.choice("statistic", STATISTICS, "median"),
        policy=policy,
    )


def _parse_memory(reader: Section) -> MemorySpec:
    section = reader.section("memory")
    section.reject_unknown(("pte_max_bytes", "sram_max_bytes", "flash_max_bytes", "ram_max_bytes"))
    return MemorySpec(
        pte_max_bytes=section.positive("pte_max_bytes", None, integer=True),
        sram_max_bytes=section.positive("sram_max_bytes", None, integer=True),
        flash_max_bytes=section.positive("flash_max_bytes", None, integer=True),
        ram_max_bytes=section.positive("ram_max_bytes", None, integer=True),
    )


def _parse_allowance(reader: Section) -> DeviceAllowance | None:
    if not reader.has("device_allowance"):
        return None
    section = reader.section("device_allowance")
    section.reject_unknown(("steps", "float_ulps", "basis"))
    values = {}
    for name in ("steps", "float_ulps"):
        value = section.get(name, (int, float), 0.0, "a number of 0 or more")
        if value < 0:
            section.fail(section.key(name), "a number of 0 or more", value)
        values[name] = float(value)
    basis = section.get("basis", str, ..., "what was measured, on what, when")
    return DeviceAllowance(values["steps"], values["float_ulps"], basis)


def parse_device(data: Any, source: Path) -> DeviceSpec:
    """Validate one device file's content; raise DeviceSpecError naming the first problem."""
    reader = Section(data, source)
    reader.reject_unknown(
        (
            "name",
            "kind",
            "description",
            "recipes",
            "latency",
            "memory",
            "connection",
            "npu",
            "device_allowance",
        )
    )
    name = reader.get("name", str)
    if name != source.stem:
        reader.fail("name", f"the file's own name ({source.stem!r})", name)
    npu = reader.get("npu", str, None, "an NPU configuration such as ethos-u55-128")
    recipes = _parse_recipes(reader)
    for index, recipe in enumerate(recipes):
        compiled_for = recipe.options.get("accelerator_config")
        if compiled_for is not None and compiled_for != npu:
            # A compile spec for another NPU than the device's is refused before any work.
            reader.fail(
                f"recipes[{index}].options.accelerator_config",
                f"the device's npu ({npu!r})",
                compiled_for,
            )
    kind = TargetKind(reader.choice("kind", TARGET_KINDS, "host"))
    settings = parse_settings(
        kind,
        reader.section("connection"),
        device=name,
        npu=npu,
        accelerators=[r.options.get("accelerator_config") for r in recipes],
    )
    return DeviceSpec(
        name=name,
        kind=kind,
        description=reader.get("description", str, ""),
        recipes=recipes,
        latency=_parse_latency(reader),
        memory=_parse_memory(reader),
        settings=settings,
        source=source,
        npu=npu,
        device_allowance=_parse_allowance(reader),
    )


def refuse_untrusted(path: Path) -> None:
    """Raise DeviceSpecError when `path` (a device file or its folder) could have been written
    by another user: a device file can make hil run commands (hil.trust says the rule)."""
    try:
        found = untrusted(path)
    except OSError as e:
        raise DeviceSpecError(f"cannot read device file {path}: {e.strerror}") from e
    if found is not None:
        what = "folder of device files" if path.is_dir() else "device file"
        raise DeviceSpecError(
            f"refusing the {what} {path}: {found.reason}; a device file can make hil run "
            "commands (flash.command, ssh_options, CMake defines), so hil reads only files "
            "no one else could have written",
            fix=f"{found.fix}, or copy the files into a folder of your own",
        )


def load_device(path: Path) -> DeviceSpec:
    """Read one device file (refused if someone else could have written it) into a spec."""
    refuse_untrusted(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DeviceSpecError(f"cannot read device file {path}: {e.strerror}") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise DeviceSpecError(
            f"{path}: not valid YAML: {e}", fix=f"fix the YAML syntax in {path.name}"
        ) from e
    return parse_device(data, path)


class DeviceRegistry:
    """The device specs found in a set of folders; later folders override earlier ones by name."""

    def __init__(self, specs: Mapping[str, DeviceSpec]) -> None:
        self._specs = dict(specs)

    @classmethod
    def from_dirs(cls, dirs: list[Path]) -> DeviceRegistry:
        """Every device file in `dirs`; a later folder's file overrides an earlier one's of the
        same name. (hil.device_search says which folders a run reads, and in which order.)"""
        specs: dict[str, DeviceSpec] = {}
        for folder in dirs:
            for spec in load_folder(folder):
                specs[spec.name] = spec
        return cls(specs)

    def __iter__(self) -> Iterator[DeviceSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.name))

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    @property
    def names(self) -> list[str]:
        return sorted(self._specs)

    def get(self, name: str) -> DeviceSpec:
        try:
            return self._specs[name]
        except KeyError:
            valid = ", ".join(self.names) or "(none: no device files were found)"
            raise UsageError(
                f"unknown target {name!r}; valid targets: {valid}",
                fix="pick one of the valid names, or add devices/" + name + ".yaml",
            ) from None


def load_folder(folder: Path) -> list[DeviceSpec]:
    """Every `*.yaml` in `folder`, by file name; the folder and each file refused if someone
    else could have written them. A folder that does not exist holds none."""
    if not folder.is_dir():
        return []
    refuse_untrusted(folder)
    return [load_device(path) for path in sorted(folder.glob("*.yaml"))]
