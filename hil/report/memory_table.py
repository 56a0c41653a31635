"""The bare-metal memory section of the summary: the smallest runner pools each model needed.

A Cortex-M board or FVP runner carves its memory into five pools whose sizes a device file
sets (firmware/README.md, "Memory maps"). ExecuTorch users cannot tell from a .pte how big the
method allocator and the scratch must be; the runner reports every pool's high-water mark
(hil.runner.pools), and this table states them per model, beside the pools the runner has, so
the smallest sizes can be written into the device file (`hil firmware pools MODEL.pte
--measured POOL=BYTES` prints them as defines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.report.text_table import table
from hil.runner.pools import PEAK_SUFFIX, POOLS, SIZE_SUFFIX

Record = Mapping[str, Any]


def is_bare_metal(record: Record) -> bool:
    info = record.get("target_info") or {}
    platform = str(info.get("platform", ""))
    return info.get("kind") == "fvp" or platform.startswith(("cortex-m", "corstone"))


def _kib(value: Any) -> str:
    return "-" if value is None else f"{float(value) / 1024:,.1f}"


def _memory_verdict(record: Record) -> str:
    for check in record.get("checks") or ():
        if check.get("subject") == "ram_peak_bytes":
            return str(check.get("status", "-")).upper()
    return "-"


def rows(records: Sequence[Record]) -> list[list[str]]:
    out = []
    for r in records:
        c = r.get("counters") or {}
        out.append(
            [
                r["case"],
                r["target"],
                r["recipe"],
                *(_kib(c.get(f"{pool}{PEAK_SUFFIX}")) for pool in POOLS),
                _kib(c.get("ram_peak_bytes")),
                _memory_verdict(r),
            ]
        )
    return out


def pool_sizes(records: Sequence[Record]) -> list[str]:
    """One line per target: the pools its runner has."""
    seen: dict[str, str] = {}
    for r in records:
        c = r.get("counters") or {}
        if r["target"] not in seen and any(f"{p}{SIZE_SUFFIX}" in c for p in POOLS):
            sizes = ", ".join(f"{p} {_kib(c.get(f'{p}{SIZE_SUFFIX}'))}" for p in POOLS)
            seen[r["target"]] = f"  {r['target']}'s runner has (KiB): {sizes}"
    return list(seen.values())


def render(records: Sequence[Record]) -> list[str]:
    """The section; empty when no bare-metal runner reported its pools."""
    reported = [
        r
        for r in records
        if is_bare_metal(r) and any(k.endswith(PEAK_SUFFIX) for k in r.get("counters") or {})
    ]
    if not reported:
        return []
    headers = ["case", "target", "recipe", *(f"{p} KiB" for p in POOLS), "RAM KiB", "memory"]
    return [
        "Bare-metal memory: the smallest pools each model needed (the runner's high-water "
        "marks; RAM = method + planned + temp + io, judged against memory.ram_max_bytes)",
        *pool_sizes(reported),
        *table(headers, rows(reported), right=range(3, 9)),
        "  as device-file defines: hil firmware pools MODEL.pte --measured method=BYTES "
        "--measured temp=BYTES",
        "",
    ]
