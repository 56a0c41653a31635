"""The FVP section of the summary: NPU cycles the FVP measured beside Vela's estimate.

Pure functions from result records (CheckResult.to_record()) to text lines. FvpTarget puts in
each record's counters the Ethos-U PMU cycles of one execution (npu_cycles, or npu_cycles_fast
when the NPU model ran in Arm's functional --fast mode), Vela's estimate for the same .pte
(vela_npu_cycles), the CPU cycles of one execution and the memory pools' high-water marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.report.text_table import fmt_number, table

Record = Mapping[str, Any]


def is_fvp(record: Record) -> bool:
    return (record.get("target_info") or {}).get("kind") == "fvp"


def _kib(value: Any) -> str:
    return "-" if value is None else f"{float(value) / 1024:.1f} KiB"


def _ratio(measured: float | None, estimate: float | None) -> str:
    if measured is None or not estimate:
        return "-"
    return f"{measured / estimate:.2f}"


def rows(records: Sequence[Record]) -> list[list[str]]:
    out = []
    for r in records:
        c = r.get("counters") or {}
        fast = "npu_cycles_fast" in c
        measured = c.get("npu_cycles_fast" if fast else "npu_cycles")
        out.append(
            [
                r["case"],
                r["target"],
                fmt_number(measured, ",.0f") + (" (fast)" if fast and measured is not None else ""),
                fmt_number(c.get("vela_npu_cycles"), ",.0f"),
                _ratio(measured, c.get("vela_npu_cycles")),
                fmt_number(c.get("cpu_cycles"), ",.0f"),
                _kib(c.get("planned_pool_peak_bytes")),
                _kib(c.get("model_pool_peak_bytes")),
                r["verdict"],
            ]
        )
    return out


def identity(records: Sequence[Record]) -> list[str]:
    """One line per target: which FVP, which version, which NPU (a fake FVP says so here)."""
    seen: dict[str, str] = {}
    for r in records:
        info = r.get("target_info") or {}
        if r["target"] not in seen and info.get("fvp"):
            seen[r["target"]] = (
                f"  {r['target']}: {info['fvp']} {info.get('fvp_version', '?')}, "
                f"{info.get('npu', '?')} ({info.get('mode', '?')} mode), runner "
                f"{info.get('build_id', '?')} ({info.get('engine', '?')} engine)"
            )
    return list(seen.values())


def render(records: Sequence[Record]) -> list[str]:
    """The FVP section; empty when no record came from an FVP target."""
    fvp = [r for r in records if is_fvp(r) and r.get("counters")]
    if not fvp:
        return []
    headers = [
        "case",
        "target",
        "NPU cycles (FVP PMU)",
        "NPU cycles (Vela est)",
        "FVP/Vela",
        "CPU cycles",
        "planned pool",
        "model",
        "verdict",
    ]
    return [
        "Corstone FVP: NPU cycles from the Ethos-U PMU beside Vela's estimate for the same .pte",
        *identity(fvp),
        *table(headers, rows(fvp), right=range(2, 8)),
        "",
    ]
