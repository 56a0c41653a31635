"""report.html: one self-contained page a reviewer can read with no network.

Styles are inline, plots are embedded as data: URIs, nothing is fetched. The page is rendered
from the report's JSON content alone (plus the failing checks' array files when they are still
on disk), so the HTML never says something report.json does not.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from hil.hashing import file_sha256
from hil.report import fmt, plots, verdicts
from hil.report.cells import quantization_cell, target_cell
from hil.report.runner_table import runner_rows

log = logging.getLogger("hil.report.html")

MAX_FAILURE_PLOTS = 40  # per report: keeps the page small when a whole sweep fails
TOLERANCE_FLOOR = 1e-6  # an exact match still gets a visible bar on the log axis
# Counters a reviewer looks for first; any others follow in name order.
LEADING_COUNTERS = (
    "npu_cycles",
    "total_cycles",
    "cpu_cycles",
    "mac_utilization",
    "delegated_fraction",
    "sram_bytes",
    "flash_bytes",
    "dram_bytes",
)


def data_uri(payload: bytes, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(payload).decode("ascii")


def _svg(figure: Any) -> str:
    return data_uri(plots.render(figure, "svg"), "image/svg+xml")


def _png(figure: Any) -> str:
    return data_uri(plots.render(figure, "png"), "image/png")


def columns(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """Targets in order of appearance, each with its recipes in order of appearance."""
    found: dict[str, list[str]] = {}
    for row in rows:
        recipes = found.setdefault(row["target"], [])
        if row["recipe"] not in recipes:
            recipes.append(row["recipe"])
    return list(found.items())


def matrix(report: Mapping[str, Any]) -> dict[str, Any]:
    """Cases x (target, recipe): each cell lists the verdicts found there (usually one); the
    filter's choices: every recipe and every verdict present."""
    rows = report["results"]
    heads = columns(rows)
    cells: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    suites: dict[str, str] = {}
    for row in rows:
        cells.setdefault((row["case"], row["target"], row["recipe"]), []).append(row)
        if row.get("suite"):
            suites.setdefault(row["case"], row["suite"])
    body = []
    for case in report["cases"]:
        line = []
        for target, recipes in heads:
            for recipe in recipes:
                line.append(
                    {
                        "target": target,
                        "recipe": recipe,
                        "results": [_chip(r) for r in cells.get((case, target, recipe), [])],
                    }
                )
        body.append({"case": case, "suite": suites.get(case, ""), "cells": line})
    recipes = list(dict.fromkeys(r for _, names in heads for r in names))
    verdicts = sorted({str(row["verdict"]) for row in rows})
    return {"heads": heads, "body": body, "recipes": recipes, "verdicts": verdicts}


def anchor(row: Mapping[str, Any]) -> str:
    return "r-" + "".join(c if c.isalnum() else "-" for c in row["key"])


def _chip(row: Mapping[str, Any]) -> dict[str, Any]:
    latency = row.get("latency") or {}
    return {
        "verdict": row["verdict"],
        "category": row["category"],
        "reason": row.get("reason") or "",
        "anchor": anchor(row),
        "latency": fmt.duration_us(latency.get("median_us"))
        + fmt.timing_suffix(latency.get("timing"))
        if latency
        else "",
    }


def _budget_us(row: Mapping[str, Any]) -> float | None:
    """The budget in microseconds; a budget relative to eager, at eager's time beside it."""
    budget = row.get("budget") or {}
    if budget.get("kind") == "vs eager":
        eager = fmt.number((row.get("eager_latency") or {}).get("min_us"))
        ratio = fmt.number(budget.get("limit"))
        return eager * ratio if eager is not None and ratio is not None else None
    limit = fmt.number(budget.get("limit_ms"))
    return limit * 1000.0 if limit is not None else None


def _statistic_us(row: Mapping[str, Any]) -> float | None:
    latency = row.get("latency") or {}
    statistic = (row.get("budget") or {}).get("statistic", "median")
    field = {"p90": "p90_us", "min": "min_us"}.get(statistic, "median_us")
    return fmt.number(latency.get(field))


# An overview chart draws at most this many bars, those nearest (or over) their limit: a chart
# of every result grew to 103 MB of SVG for ExecuTorch's 68 operator files (7,666 results).
OVERVIEW_BARS = 60


def _nearest_limit(bars: list[plots.Bar]) -> tuple[list[plots.Bar], str]:
    """The bars an overview draws, failing ones first, then by share of their limit, and
    what the title says of the rest."""
    if len(bars) <= OVERVIEW_BARS:
        return bars, ""

    def worst_first(bar: plots.Bar) -> tuple[bool, float, float]:
        share = bar.value / bar.limit if bar.limit else 0.0
        return (bar.ok, -share, -bar.value)

    chosen = sorted(bars, key=worst_first)[:OVERVIEW_BARS]
    return chosen, f", the {OVERVIEW_BARS} of {len(bars)} nearest their limit (all in the table)"


def overview_plots(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per target (and timing kind): latency against budget, and tolerance used."""
    figures = []
    for target, _ in columns(report["results"]):
        rows = [r for r in report["results"] if r["target"] == target]
        by_timing: dict[str, list[plots.Bar]] = {}
        for row in rows:
            value = _statistic_us(row)
            if value is None:
                continue
            limit = _budget_us(row)
            timing = (row.get("latency") or {}).get("timing", "measured")
            by_timing.setdefault(timing, []).append(
                plots.Bar(
                    f"{row['case']} [{row['recipe']}]",
                    value,
                    limit,
                    limit is None or value <= limit,
                )
            )
        for timing, every in by_timing.items():
            bars, rest = _nearest_limit(every)
            figure = plots.latency_overview(bars, target=target, timing=timing)
            figures.append(
                {
                    "title": f"{target}: latency vs budget ({fmt.timing_label(timing)}){rest}",
                    "src": _svg(figure),
                    "kind": "latency",
                }
            )
        margins = []
        for row in rows:
            used = _tolerance_used(row)
            if used is not None:
                ok = used <= 1.0 and not row["verdict"].endswith("MISMATCH")  # an output failed
                margins.append(
                    plots.Bar(
                        f"{row['case']} [{row['recipe']}]", max(used, TOLERANCE_FLOOR), 1.0, ok
                    )
                )
        if margins:
            drawn, rest = _nearest_limit(margins)
            figures.append(
                {
                    "title": f"{target}: error against tolerance{rest}",
                    "src": _svg(plots.tolerance_overview(drawn, target=target)),
                    "kind": "error",
                }
            )
    return figures


def _tolerance_used(row: Mapping[str, Any]) -> float | None:
    """The share of its error limit the target used (record's `margin`)."""
    return fmt.number(row.get("margin"))


def _judged_against(row: Mapping[str, Any]) -> tuple[str, float | None]:
    """The arrays group output 0 was judged against, and its limit on |error| there."""
    for check in row.get("checks") or []:
        if check.get("question") != "target" or check.get("subject") != "output 0":
            continue
        limits = {lim["metric"]: fmt.number(lim["value"]) for lim in check.get("limits", [])}
        step = fmt.number((check.get("observed") or {}).get("step"))
        if limits.get("max_steps") is not None and step is not None:
            return "quantized_reference", float(limits["max_steps"] or 0.0) * step
        group = (
            "quantized_reference"
            if str(check.get("reference", "")).startswith("the quantized")
            else "reference"
        )
        return group, limits.get("max_abs")
    return "reference", None


def failure_plot(row: Mapping[str, Any]) -> str | None:
    """Output vs reference for a failing check, from its .npz when it is still on disk."""
    path = Path(str(row.get("arrays") or ""))
    wrong = row["verdict"].endswith("MISMATCH") or row["verdict"] == "POOR QUANTIZATION"
    if not wrong or not path.is_file():
        return None
    recorded = row.get("arrays_sha256")
    if recorded and file_sha256(path) != recorded:
        # a later check or a hand overwrote it: another check's numbers must not be drawn here
        log.warning("%s is not the file %s wrote (sha256 differs): not plotted", path, row["key"])
        return None
    group, max_abs = _judged_against(row)
    try:
        with np.load(path) as data:
            reference = [data[k] for k in sorted(data.files) if k.startswith(group)]
            outputs = [data[k] for k in sorted(data.files) if k.startswith("output")]
    except (OSError, ValueError) as e:
        log.warning("cannot read %s for the plot of %s: %s", path, row["key"], e)
        return None
    if not reference:
        return None
    figure = plots.outputs_vs_reference(
        reference,
        outputs,
        title=f"{row['case']} on {row['target']} [{row['recipe']}]",
        max_abs=max_abs,
    )
    return _png(figure)


def counter_tables(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per target, every counter any of its results carries (cycles, memory, utilization)."""
    tables = []
    for target, _ in columns(report["results"]):
        rows = [r for r in report["results"] if r["target"] == target and r["counters"]]
        found = {name for r in rows for name in r["counters"]}
        names = [n for n in LEADING_COUNTERS if n in found] + sorted(found - set(LEADING_COUNTERS))
        if not names:
            continue
        tables.append(
            {
                "target": target,
                "names": names,
                "rows": [
                    {
                        "row": r,
                        "anchor": anchor(r),
                        "timing": (r.get("latency") or {}).get("timing", "measured"),
                        "cells": [fmt.counter(n, r["counters"].get(n)) for n in names],
                    }
                    for r in rows
                ],
            }
        )
    return tables


def tool_table(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Tool versions per run, and hil's export speed-ups beside them; a tool whose version
    differs between runs is flagged."""
    names = sorted({name for run in runs for name in (run.get("tools") or {})})
    lines = []
    for name in names:
        values = [(run.get("tools") or {}).get(name, "-") for run in runs]
        lines.append({"name": name, "versions": values, "differs": len(set(values)) > 1})
    declared = [_speedups(run.get("speedups")) for run in runs]
    lines.append(
        {"name": "hil export speed-ups", "versions": declared, "differs": len(set(declared)) > 1}
    )
    return {"runs": [run["run_id"] for run in runs], "lines": lines}


def _speedups(declared: Mapping[str, Any] | None) -> str:
    """What a run's exports could use of hil's changes to torch and ExecuTorch."""
    if not declared:
        return "not recorded"
    if declared.get("pristine"):
        return "none: torch and ExecuTorch as shipped (pristine)"
    parts = sorted(declared.get("parts") or {})
    return f"{len(parts)}: {', '.join(parts)} (each only on the code it was written against)"


def change(value: float) -> str:
    """A relative change that stays readable when a median moves by orders of magnitude."""
    text = f"{100 * value:+.1f} %"
    if value <= -0.5:
        return f"{text} ({1 / (1 + value):.1f}x faster)" if value > -1 else text
    if value >= 1.0:
        return f"{text} ({1 + value:.1f}x slower)"
    return text


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hil.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        us=fmt.duration_us,
        bytes=fmt.size_bytes,
        sci=fmt.sci,
        fixed=fmt.fixed,
        timing=fmt.timing_label,
        timing_suffix=fmt.timing_suffix,
        anchor=anchor,
        change=change,
        budget_us=_budget_us,
        statistic_us=_statistic_us,
        tolerance_used=_tolerance_used,
        target_cell=target_cell,
        quantization_cell=quantization_cell,
    )
    return env


def render(report: Mapping[str, Any]) -> str:
    failing = [r for r in report["results"] if r["category"] != verdicts.PASS]
    plots_left = MAX_FAILURE_PLOTS
    failures = []
    for row in failing:
        plot = failure_plot(row) if plots_left > 0 else None
        plots_left -= plot is not None
        failures.append({"row": row, "plot": plot})
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        matrix=matrix(report),
        overview=overview_plots(report),
        failures=failures,
        counters=counter_tables(report),
        tools=tool_table(report["runs"]),
        runners=runner_rows(report["targets"]),
        categories=verdicts.CATEGORIES,
        category_titles=verdicts.CATEGORY_TITLES,
        timing_notes=fmt.TIMING_NOTES,
    )
