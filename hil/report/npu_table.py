"""Summary tables for targets that partition a model (Ethos-U NPU, Cortex-M CMSIS-NN).

Pure functions from result records (CheckResult.to_record(), or the plugin's error records) to
text lines. Cycles, time and memory come from Vela's estimate and are labelled as such.

    render(records) -> the per-case NPU table, the Cortex-M mapping table and the fallback table
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.report.text_table import fmt_number, fmt_us, table

Record = Mapping[str, Any]


def _partition(record: Record) -> Mapping[str, Any]:
    return record.get("partition") or {}


def is_npu(record: Record) -> bool:
    return _partition(record).get("backend") == "Ethos-U" or "npu_cycles" in (
        record.get("counters") or {}
    )


def is_cortex_m(record: Record) -> bool:
    return _partition(record).get("backend") == "CMSIS-NN"


def _kib(value: Any) -> str:
    return "-" if value is None else f"{float(value) / 1024:.1f} KiB"


def _fraction(record: Record) -> str:
    partition = _partition(record)
    if not partition:
        return "-"
    return f"{100 * partition['delegated_fraction']:.0f}% ({partition['delegates']} del.)"


def _agreement(record: Record) -> str:
    agreement = record.get("quantized_agreement")
    return agreement["statement"] if agreement else "-"


def _metric(record: Record, name: str, spec: str) -> str:
    return fmt_number((record.get("metrics") or {}).get(name), spec)


def npu_rows(records: Sequence[Record]) -> list[list[str]]:
    rows = []
    for r in records:
        counters = r.get("counters") or {}
        utilization = counters.get("mac_utilization")
        rows.append(
            [
                r["case"],
                r["target"],
                _fraction(r),
                fmt_number(counters.get("npu_cycles"), ",.0f"),
                fmt_us(counters.get("est_time_us")),
                "-" if utilization is None else f"{100 * utilization:.1f}%",
                _kib(counters.get("sram_bytes")),
                _kib(counters.get("flash_bytes")),
                _metric(r, "max_abs", ".2e"),
                _metric(r, "sqnr_db", ".1f"),
                _agreement(r),
                r["verdict"],
            ]
        )
    return rows


def npu_table(records: Sequence[Record]) -> list[str]:
    """Per case: delegated fraction, NPU cycles, estimated time, MAC utilization, SRAM, flash,
    max error and SQNR against eager, agreement with the quantized model, verdict."""
    headers = [
        "case",
        "target",
        "delegated",
        "NPU cycles (est)",
        "time (est)",
        "MAC util",
        "SRAM (est)",
        "flash (est)",
        "max abs",
        "SQNR dB",
        "vs quantized",
        "verdict",
    ]
    return table(headers, npu_rows(records), right=range(2, 10))


def cortex_m_table(records: Sequence[Record]) -> list[str]:
    """Per case: how many operators became CMSIS-NN kernels and how the numerics compare."""
    rows = []
    for r in records:
        partition = _partition(r)
        rows.append(
            [
                r["case"],
                r["target"],
                str(sum(partition.get("accelerated", {}).values())) if partition else "-",
                str(sum(f["count"] for f in partition.get("fallbacks", ()))) if partition else "-",
                _metric(r, "max_abs", ".2e"),
                _metric(r, "sqnr_db", ".1f"),
                _agreement(r),
                r["verdict"],
            ]
        )
    headers = [
        "case",
        "target",
        "CMSIS-NN ops",
        "portable ops",
        "max abs",
        "SQNR dB",
        "vs quantized",
        "verdict",
    ]
    return table(headers, rows, right=range(2, 6))


def fallback_table(records: Sequence[Record]) -> list[str]:
    """Every operator left on the CPU, per case and target, with the partitioner's reason."""
    rows = []
    for r in records:
        for fallback in _partition(r).get("fallbacks", ()):
            rows.append(
                [
                    r["case"],
                    r["target"],
                    fallback["op"],
                    str(fallback["count"]),
                    fallback.get("reason") or "-",
                ]
            )
        for missing in _partition(r).get("missing_kernels", ()):
            rows.append(
                [
                    r["case"],
                    r["target"],
                    missing,
                    "-",
                    "no ExecuTorch CPU kernel (device load fails)",
                ]
            )
    if not rows:
        return []
    return table(["case", "target", "on the CPU", "count", "reason"], rows, right=(3,))


def render(records: Sequence[Record]) -> list[str]:
    """The NPU and Cortex-M sections of the summary; empty when no record is of either kind."""
    npu = [r for r in records if is_npu(r)]
    cortex = [r for r in records if is_cortex_m(r)]
    lines: list[str] = []
    if npu:
        lines.append(
            "Ethos-U without silicon: numerics from the TOSA reference model; cycles, time, "
            "SRAM and flash are Vela's ESTIMATES"
        )
        lines.extend(npu_table(npu))
        lines.append("")
    if cortex:
        lines.append("Cortex-M: operators lowered to CMSIS-NN kernels (reference-op numerics)")
        lines.extend(cortex_m_table(cortex))
        lines.append("")
    fallbacks = fallback_table(npu + cortex)
    if fallbacks:
        lines.append("operators that fall back to the CPU")
        lines.extend(fallbacks)
        lines.append("")
    return lines
