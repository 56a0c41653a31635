"""Vela's performance estimate, read from the summary csv it writes beside each compiled delegate.

Vela (Arm's Ethos-U compiler) estimates NPU cycles, total cycles at the configured clock and the
SRAM and flash its command stream needs. Those are *estimates* of the compiler's own model, not
measurements; everything built from them is labelled "estimated" so no report mistakes one for
the other. A program with several delegates runs them one after another: cycles add up, the SRAM
arena is reused (peak over delegates) and flash holds every delegate's weights and commands (sum).

MACs per cycle are the NPU's 8x8 (int8 activations x int8 weights) rate for each configuration
Vela accepts. With 16-bit activations (a16w8) Ethos-U runs at half that rate; hil assumes so and
labels the basis of every utilization figure.
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from hil.artifacts.parts import VelaSummary
from hil.errors import ExportError, UsageError

KIB = 1024

# accelerator config -> 8x8 MACs per cycle (Ethos-U55 and Ethos-U85 product configurations).
MACS_PER_CYCLE: Mapping[str, int] = MappingProxyType(
    {
        "ethos-u55-32": 32,
        "ethos-u55-64": 64,
        "ethos-u55-128": 128,
        "ethos-u55-256": 256,
        "ethos-u85-128": 128,
        "ethos-u85-256": 256,
        "ethos-u85-512": 512,
        "ethos-u85-1024": 1024,
        "ethos-u85-2048": 2048,
    }
)
ACCELERATOR_CONFIGS: tuple[str, ...] = tuple(MACS_PER_CYCLE)


def check_accelerator(config: str) -> str:
    if config not in MACS_PER_CYCLE:
        raise UsageError(
            f"unknown Ethos-U accelerator config {config!r}",
            fix="use one of " + ", ".join(ACCELERATOR_CONFIGS),
        )
    return config


def macs_per_cycle(config: str, a16w8: bool = False) -> float:
    """Peak MACs per NPU cycle of `config`; half of the 8x8 rate with 16-bit activations."""
    rate = MACS_PER_CYCLE[check_accelerator(config)]
    return rate / 2 if a16w8 else float(rate)


def utilization(macs: float | None, per_cycle: float, npu_cycles: float) -> float | None:
    """(MACs / MACs-per-cycle) / NPU cycles: the fraction of the NPU's peak the model reaches
    (None where the MACs are unknown: hil.ethos_u.macs)."""
    if macs is None or npu_cycles <= 0 or macs <= 0 or per_cycle <= 0:
        return None
    return (macs / per_cycle) / npu_cycles


def mac_utilization(
    macs: float | None, config: str, npu_cycles: float, a16w8: bool = False
) -> float | None:
    """MAC utilization of `config` (at its 16x8 rate when `a16w8`)."""
    return utilization(macs, macs_per_cycle(config, a16w8), npu_cycles)


_COLUMNS = (
    "accelerator_configuration",
    "system_config",
    "memory_mode",
    "core_clock",
    "inference_time",
    "sram_memory_used",
    "dram_memory_used",
    "on_chip_flash_memory_used",
    "off_chip_flash_memory_used",
    "nn_macs",
    "cycles_npu",
    "cycles_total",
)


def parse_summary(text: str, source: str = "Vela summary") -> VelaSummary:
    """Parse the one-row `*_summary_<system config>.csv`; memory columns there are in KiB."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if len(rows) != 1:
        raise ExportError(f"{source}: expected one row of estimates, found {len(rows)}")
    row = rows[0]
    missing = [c for c in _COLUMNS if c not in row]
    if missing:
        raise ExportError(
            f"{source}: Vela's summary lacks column(s) {', '.join(missing)}",
            fix="hil reads the summary format of ethos-u-vela 5.x; check the installed version",
        )
    try:
        return VelaSummary(
            accelerator=row["accelerator_configuration"],
            system_config=row["system_config"],
            memory_mode=row["memory_mode"],
            clock_hz=float(row["core_clock"]),
            npu_cycles=int(float(row["cycles_npu"])),
            total_cycles=int(float(row["cycles_total"])),
            inference_time_us=float(row["inference_time"]) * 1e6,
            sram_bytes=_kib(row["sram_memory_used"]),
            dram_bytes=_kib(row["dram_memory_used"]),
            flash_bytes=_kib(row["on_chip_flash_memory_used"])
            + _kib(row["off_chip_flash_memory_used"]),
            vela_macs=int(float(row["nn_macs"])),
        )
    except ValueError as e:
        raise ExportError(f"{source}: unreadable number in Vela's summary: {e}") from e


def _kib(value: str) -> int:
    return round(float(value) * KIB)


def read_summary(folder: Path) -> VelaSummary:
    """The summary csv Vela wrote under `folder` (its --output-dir)."""
    found = sorted(folder.glob("*_summary_*.csv"))
    if len(found) != 1:
        raise ExportError(
            f"expected one Vela summary csv in {folder}, found {len(found)}",
            fix="the artifact is incomplete; delete its cache entry to re-export",
        )
    return parse_summary(found[0].read_text(encoding="utf-8"), str(found[0]))


def combine(summaries: Sequence[VelaSummary]) -> VelaSummary | None:
    """Delegates run in sequence: add cycles and time, take peak SRAM/DRAM, add flash."""
    if not summaries:
        return None
    first = summaries[0]
    return VelaSummary(
        accelerator=first.accelerator,
        system_config=first.system_config,
        memory_mode=first.memory_mode,
        clock_hz=first.clock_hz,
        npu_cycles=sum(s.npu_cycles for s in summaries),
        total_cycles=sum(s.total_cycles for s in summaries),
        inference_time_us=sum(s.inference_time_us for s in summaries),
        sram_bytes=max(s.sram_bytes for s in summaries),
        dram_bytes=max(s.dram_bytes for s in summaries),
        flash_bytes=sum(s.flash_bytes for s in summaries),
        vela_macs=sum(s.vela_macs for s in summaries),
        delegates=sum(s.delegates for s in summaries),
    )


def vela_name(config: str) -> str:
    """ "ethos-u55-128" -> "Ethos_U55_128", the spelling in Vela's summary."""
    match = re.fullmatch(r"ethos-u(\d+)-(\d+)", check_accelerator(config))
    assert match is not None  # guaranteed by check_accelerator
    return f"Ethos_U{match.group(1)}_{match.group(2)}"


@functools.lru_cache(maxsize=4)
def ini_sections(path: str) -> Mapping[str, frozenset[str]]:
    """System configs and memory modes a Vela .ini defines: {"System_Config": {...}, ...}."""
    found: dict[str, set[str]] = {"System_Config": set(), "Memory_Mode": set()}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\s*\[(System_Config|Memory_Mode)\.([^\]]+)\]\s*", line)
        if match:
            found[match.group(1)].add(match.group(2))
    return MappingProxyType({k: frozenset(v) for k, v in found.items()})


def default_ini() -> Path:
    """Arm's vela.ini as shipped in the ethos-u-vela package (what "Arm/vela.ini" names)."""
    spec = importlib.util.find_spec("ethosu")  # a namespace package: no import of the compiler
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("ethos-u-vela is not installed", fix="install executorch[ethos-u]>=1.4")
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "config_files" / "Arm" / "vela.ini"


def check_ini_choice(kind: str, name: str | None, choices: Iterable[str], option: str) -> None:
    if name is None:
        return
    known = sorted(choices)
    if name not in known:
        raise UsageError(
            f"{option} {name!r} is not a {kind} in Arm's vela.ini",
            fix=f"use one of {', '.join(known)}",
        )
