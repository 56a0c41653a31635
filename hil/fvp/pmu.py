"""The runner's Ethos-U PMU report: one log line per NPU invocation, read into counters.

Contract with the bare-metal runner (built with the Ethos-U driver): when an NPU inference
ends (the driver's ethosu_inference_end hook), the runner sends one LOG line

    ethos-u pmu: cycles=<PMU cycle counter> [<event>=<count> ...]

`cycles` is the Ethos-U PMU cycle counter (CCNT) for that invocation; the optional events are
PMU event counters under short names (npu_active, npu_idle, axi0_rd_beats, axi0_wr_beats,
axi1_rd_beats, ...). Integers are decimal. A model with k NPU delegates gives k lines per
execution, in order; a RUN of w warm-ups and n timed executions gives k * (w + n) lines.

FvpTarget takes the lines a RUN produced, sums each execution's k invocations, drops the
warm-ups and reports the median over the timed executions:

    npu_cycles          PMU cycles of one execution (all its NPU delegates)
    npu_<event>         the same for each event the runner reports
    npu_invocations     NPU invocations per execution (k)
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

PREFIX = "ethos-u pmu:"
FIELD = re.compile(r"([a-z][a-z0-9_]*)=(\d+)")


@dataclass(frozen=True)
class Invocation:
    """One NPU invocation's PMU counts (cycles first)."""

    counts: Mapping[str, int]


def parse_line(line: str) -> Invocation | None:
    """The counts of one PMU report line, or None for any other log line."""
    text = line.strip()
    if not text.startswith(PREFIX):
        return None
    counts = {name: int(value) for name, value in FIELD.findall(text[len(PREFIX) :])}
    if "cycles" not in counts:
        return None
    return Invocation(counts)


def invocations(lines: Iterable[str]) -> list[Invocation]:
    return [inv for inv in (parse_line(line) for line in lines) if inv is not None]


@dataclass(frozen=True)
class PmuSummary:
    counters: Mapping[str, float]
    problem: str | None = None  # why the report could not be read as expected


def summarize(
    found: Sequence[Invocation], per_execution: int, warmup: int, timed: int
) -> PmuSummary:
    """Counters for one RUN: median over timed executions of each execution's summed counts.

    `per_execution` is the number of NPU delegates the model has. When the runner sent another
    number of lines than (warmup + timed) * per_execution, the last timed * per_execution lines
    are used if there are enough, and the problem is stated.
    """
    if per_execution <= 0 or timed <= 0:
        return PmuSummary({})
    expected = (warmup + timed) * per_execution
    problem = None
    if not found:
        return PmuSummary(
            {},
            f"the runner reported no Ethos-U PMU counts for a model with {per_execution} NPU "
            "delegate(s): it lacks the PMU report (see hil/fvp/pmu.py)",
        )
    if len(found) != expected:
        problem = (
            f"expected {expected} PMU lines ({warmup} warm-up + {timed} timed executions x "
            f"{per_execution} delegate(s)), got {len(found)}"
        )
        if len(found) < timed * per_execution:
            return PmuSummary({}, problem)
    used = found[len(found) - timed * per_execution :]
    executions: list[dict[str, int]] = []
    for start in range(0, len(used), per_execution):
        total: dict[str, int] = {}
        for inv in used[start : start + per_execution]:
            for name, value in inv.counts.items():
                total[name] = total.get(name, 0) + value
        executions.append(total)
    names = sorted({name for execution in executions for name in execution})
    counters: dict[str, float] = {"npu_invocations": float(per_execution)}
    for name in names:
        values = [e[name] for e in executions if name in e]
        key = "npu_cycles" if name == "cycles" else f"npu_{name.removeprefix('npu_')}"
        counters[key] = float(statistics.median(values))
    return PmuSummary(counters, problem)


def format_line(counts: Mapping[str, int]) -> str:
    """A report line in the contract's format (for runners written in Python, and the fake)."""
    ordered = sorted(counts.items(), key=lambda kv: (kv[0] != "cycles", kv[0]))
    return PREFIX + " " + " ".join(f"{name}={value}" for name, value in ordered)
