"""Plots for allure attachments and the HTML report (matplotlib, Agg, no pyplot global state).

Figures are built on `matplotlib.figure.Figure` directly and rendered to PNG or SVG bytes, so
nothing here touches a display, a global figure list or the network.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hil.report import fmt

if TYPE_CHECKING:  # hil.arrays imports torch; a report is drawn without it
    from hil.arrays import Array

MAX_POINTS = 4000  # scatter points per plot: enough to see the shape, small enough to embed
PASS_COLOR = "#2e7d32"
FAIL_COLOR = "#c62828"
NEUTRAL_COLOR = "#546e7a"
BUDGET_COLOR = "#d84315"
LOG_SPAN = 30.0  # overview axes go logarithmic only when values span more than this factor


def render(figure: Figure, fmt_name: str = "png") -> bytes:
    """PNG or SVG bytes; SVG without a date so the same data gives the same file."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Date": None} if fmt_name == "svg" else {}
    figure.savefig(buffer, format=fmt_name, metadata=metadata, bbox_inches="tight")
    return buffer.getvalue()


def _sample(values: Array, rng: np.random.Generator) -> Array:
    flat = values.ravel()
    if flat.size <= MAX_POINTS:
        return np.arange(flat.size)
    return np.sort(rng.choice(flat.size, MAX_POINTS, replace=False))


def outputs_vs_reference(
    reference: Sequence[Array],
    outputs: Sequence[Array],
    *,
    title: str,
    max_abs: float | None = None,
) -> Figure:
    """Output against reference (a perfect result is the diagonal) and the error's histogram."""
    figure = Figure(figsize=(9, 3.6), dpi=90)
    scatter, histogram = figure.subplots(1, 2)
    rng = np.random.default_rng(0)  # fixed: the same data draws the same points
    errors = []
    for i, (ref, out) in enumerate(zip(reference, outputs, strict=False)):
        if ref.shape != out.shape or ref.size == 0:
            continue
        r = ref.astype(np.float64).ravel()
        o = out.astype(np.float64).ravel()
        pick = _sample(r, rng)
        scatter.scatter(r[pick], o[pick], s=4, alpha=0.5, label=f"output {i}")
        errors.append(o - r)
    if errors:
        every = np.concatenate(errors)
        low = float(min(np.min(np.concatenate([r.ravel() for r in reference])), 0.0))
        high = float(max(np.max(np.concatenate([r.ravel() for r in reference])), 0.0))
        scatter.plot([low, high], [low, high], color=NEUTRAL_COLOR, linewidth=1, label="ideal")
        histogram.hist(every, bins=int(min(60, max(10, every.size // 4))), color=NEUTRAL_COLOR)
        if max_abs is not None:
            for x in (-max_abs, max_abs):
                histogram.axvline(x, color=BUDGET_COLOR, linestyle="--", linewidth=1)
            histogram.plot([], [], color=BUDGET_COLOR, linestyle="--", label="tolerance")
            histogram.legend(loc="upper right", fontsize=7)
    else:
        scatter.text(0.5, 0.5, "shapes differ: nothing to compare", ha="center", va="center")
    scatter.set_xlabel("eager PyTorch (reference)")
    scatter.set_ylabel("target output")
    scatter.set_title("output vs reference", fontsize=9)
    scatter.legend(loc="upper left", fontsize=7)
    histogram.set_xlabel("output - reference")
    histogram.set_ylabel("elements")
    histogram.set_title("error distribution", fontsize=9)
    figure.suptitle(title, fontsize=10)
    return figure


def latency_against_budget(
    latency: Mapping[str, Any],
    *,
    title: str,
    budget: Mapping[str, Any] | None = None,
    eager: Mapping[str, Any] | None = None,
) -> Figure:
    """One result's latency statistics on a time axis, with the budget line and eager PyTorch."""
    figure = Figure(figsize=(7, 2.4), dpi=90)
    axes = figure.subplots()
    rows: list[tuple[str, Mapping[str, Any]]] = [(fmt.timing_label(latency.get("timing")), latency)]
    if eager:
        rows.append(("eager PyTorch (host)", eager))
    for y, (_, stats) in enumerate(rows):
        median = fmt.number(stats.get("median_us")) or 0.0
        p90 = fmt.number(stats.get("p90_us")) or median
        low = fmt.number(stats.get("min_us")) or median
        axes.barh(y, p90 - low, left=low, height=0.4, color="#b0bec5")
        axes.plot([median], [y], "o", color=PASS_COLOR if y == 0 else NEUTRAL_COLOR)
        axes.annotate(
            f"median {fmt.duration_us(median)}, p90 {fmt.duration_us(p90)}",
            (p90, y),
            xytext=(6, -3),
            textcoords="offset points",
            fontsize=7,
        )
    axes.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    if budget and fmt.number(budget.get("limit_ms")) is not None:
        limit_us = (fmt.number(budget["limit_ms"]) or 0.0) * 1000.0
        axes.axvline(limit_us, color=BUDGET_COLOR, linestyle="--")
        axes.annotate(
            f"budget {fmt.duration_us(limit_us)} ({budget.get('statistic', 'median')})",
            (limit_us, len(rows) - 0.5),
            xytext=(3, 0),
            textcoords="offset points",
            fontsize=7,
            color=BUDGET_COLOR,
        )
    axes.set_xlim(left=0)
    axes.margins(x=0.35)
    axes.set_ylim(-0.6, len(rows) - 0.2)
    axes.set_xlabel("microseconds (bar: min to p90, dot: median)", fontsize=8)
    axes.set_title(title, fontsize=9)
    return figure


@dataclass(frozen=True)
class Bar:
    """One result in an overview chart."""

    label: str
    value: float
    limit: float | None
    ok: bool


def _overview(bars: Sequence[Bar], *, title: str, xlabel: str, log: bool) -> Figure:
    height = 0.9 + 0.24 * max(len(bars), 1)
    figure = Figure(figsize=(8, min(height, 40.0)), dpi=90)
    axes = figure.subplots()
    ys = np.arange(len(bars))[::-1]
    values = [b.value for b in bars]
    axes.barh(ys, values, color=[PASS_COLOR if b.ok else FAIL_COLOR for b in bars], height=0.6)
    for y, bar in zip(ys, bars, strict=True):
        if bar.limit is not None:
            axes.plot([bar.limit, bar.limit], [y - 0.4, y + 0.4], color=BUDGET_COLOR, linewidth=2)
    axes.set_yticks(ys, [b.label for b in bars], fontsize=7)
    positive = [v for v in [*values, *(b.limit for b in bars if b.limit)] if v and v > 0]
    if log and positive and max(positive) / min(positive) > LOG_SPAN:
        axes.set_xscale("log")
    else:
        axes.set_xlim(left=0)
    axes.set_xlabel(xlabel, fontsize=8)
    axes.set_title(title, fontsize=9)
    axes.grid(axis="x", alpha=0.3)
    return figure


def latency_overview(bars: Sequence[Bar], *, target: str, timing: str) -> Figure:
    """Each result's budgeted latency statistic as a bar, its budget as a red tick."""
    return _overview(
        bars,
        title=f"{target}: latency vs budget, {fmt.timing_label(timing)}",
        xlabel="microseconds; red tick: budget",
        log=True,
    )


def tolerance_overview(bars: Sequence[Bar], *, target: str) -> Figure:
    """How much of its error tolerance each result used (1.0 = at the limit)."""
    figure = _overview(
        bars,
        title=f"{target}: max |error| as a fraction of the tolerance",
        xlabel="fraction of the max |error| tolerance used; red tick: the limit (1.0); "
        "red bar: the outputs failed a check (this or another metric)",
        log=True,
    )
    return figure
