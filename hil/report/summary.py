"""Terminal summary tables rendered from result records (pure functions: records -> lines)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hil.report import npu_table
from hil.report.cells import quantization_cell, target_cell
from hil.report.fmt import timing_suffix
from hil.report.text_table import fmt_number, fmt_us, table

Record = Mapping[str, Any]


def _latency(record: Record, field: str) -> str:
    latency = record.get("latency")
    if not latency:
        return "-"
    return fmt_us(latency[field]) + _timing_mark(latency)


def _timing_mark(latency: Mapping[str, Any]) -> str:
    """Estimated and emulated times never pass for measurements on silicon."""
    return timing_suffix(latency.get("timing"))


def _budget(record: Record) -> str:
    budget = record.get("budget")
    if not budget:
        return "-"
    if budget.get("limit") is None:
        return "not judged here"
    if budget.get("kind") == "vs eager":
        return f"{budget['limit']:g}x eager ({budget['statistic']})"
    return f"{fmt_us(budget['limit_ms'] * 1000)} {budget['statistic']}"


def results_table(records: Sequence[Record]) -> list[str]:
    """One line per check: the target check (against the model it was compiled from) and the
    quantization check (the quantized model against eager), each at its worst output."""
    headers = [
        "case",
        "backend",
        "target check",
        "quantization",
        "SQNR vs eager",
        "verdict",
        "median",
        "p90",
        "budget",
    ]
    rows = []
    for r in records:
        metrics = r.get("metrics") or {}
        rows.append(
            [
                r["case"],
                r["recipe"],
                target_cell(r),
                quantization_cell(r),
                fmt_number(metrics.get("sqnr_db"), ".1f"),
                r["verdict"],
                _latency(r, "median_us"),
                _latency(r, "p90_us"),
                _budget(r),
            ]
        )
    return table(headers, rows, right=(2, 3, 4, 6, 7, 8))


def backend_latency_table(records: Sequence[Record]) -> list[str]:
    """Median latency per case across backends, beside eager PyTorch (does delegation pay off?)."""
    recipes: list[str] = []
    by_case: dict[str, dict[str, Record]] = {}
    for r in records:
        if r.get("latency"):
            by_case.setdefault(r["case"], {})[r["recipe"]] = r
            if r["recipe"] not in recipes:
                recipes.append(r["recipe"])
    rows = []
    for case, per_recipe in by_case.items():
        if len(per_recipe) < 2:
            continue
        eager = next(
            (r.get("eager_latency") for r in per_recipe.values() if r.get("eager_latency")), None
        )
        rows.append(
            [case, fmt_us(eager["median_us"]) if eager else "-"]
            + [
                fmt_us(per_recipe[x]["latency"]["median_us"])
                + _timing_mark(per_recipe[x]["latency"])
                if x in per_recipe
                else "-"
                for x in recipes
            ]
        )
    if not rows:
        return []
    return table(["case", "eager (1 thread)", *recipes], rows, right=range(1, len(recipes) + 2))


def operator_times(records: Sequence[Record]) -> list[str]:
    """Each check's slowest operators on the device, from its runner's ETDump (or why none)."""
    lines = []
    for r in records:
        said = r.get("profile_line")
        if said:
            lines.append(f"  {r['case']} [{r['recipe']}]: {said}")
    return lines


def render(records: Sequence[Record]) -> list[str]:
    """All summary sections, one group per target."""
    lines: list[str] = []
    targets: dict[str, list[Record]] = {}
    for r in records:
        targets.setdefault(r["target"], []).append(r)
    for target, rows in targets.items():
        passed = sum(r["verdict"] == "PASS" for r in rows)
        emulated = any((r.get("latency") or {}).get("timing") == "emulated" for r in rows)
        note = " (latency emulated: QEMU's time, not the device's)" if emulated else ""
        lines.append(f"target {target}: {passed}/{len(rows)} passed{note}")
        lines.extend(results_table(rows))
        latency = backend_latency_table(rows)
        if latency:
            lines.append("")
            lines.append(f"target {target}: median latency by backend")
            lines.extend(latency)
        times = operator_times(rows)
        if times:
            lines.append("")
            lines.append(f"target {target}: where the time goes, per operator")
            lines.extend(times)
        lines.append("")
    # Targets that partition a model (Ethos-U NPU, Cortex-M): delegation, Vela's estimates, MAC
    # utilization and agreement with the quantized model, plus the CPU fallbacks.
    lines.extend(npu_table.render(records))
    return lines
