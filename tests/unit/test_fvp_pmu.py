"""The runner's Ethos-U PMU report lines, summed per execution into counters."""

from __future__ import annotations

from hil.fvp import pmu


def lines(*cycles: int) -> list[str]:
    return ["run: 1 warm-up, 3..3 runs"] + [
        f"ethos-u pmu: cycles={c} npu_active={c - 1}" for c in cycles
    ]


def test_lines_of_other_kinds_are_ignored() -> None:
    assert pmu.parse_line("run: 1 warm-up") is None
    assert pmu.parse_line("ethos-u pmu: npu_idle=3") is None  # no cycle count
    inv = pmu.parse_line("  ethos-u pmu: cycles=10 axi0_rd_beats=7")
    assert inv is not None and dict(inv.counts) == {"cycles": 10, "axi0_rd_beats": 7}


def test_delegates_are_summed_per_execution_and_warm_ups_dropped() -> None:
    # two delegates; one warm-up (100 + 100, slow: cold caches) then three timed executions
    found = pmu.invocations(lines(100, 100, 10, 20, 11, 21, 12, 22))
    summary = pmu.summarize(found, per_execution=2, warmup=1, timed=3)
    assert summary.problem is None
    assert summary.counters["npu_cycles"] == 32  # median of 30, 32, 34
    assert summary.counters["npu_active"] == 30
    assert summary.counters["npu_invocations"] == 2


def test_a_runner_without_the_pmu_report_is_stated_not_invented() -> None:
    summary = pmu.summarize([], per_execution=1, warmup=1, timed=3)
    assert summary.counters == {}
    assert summary.problem is not None and "no Ethos-U PMU counts" in summary.problem


def test_a_model_without_npu_delegates_has_no_npu_counters() -> None:
    assert pmu.summarize(pmu.invocations(lines(5)), 0, 1, 3).counters == {}


def test_unexpected_line_count_uses_the_last_timed_lines_and_says_so() -> None:
    found = pmu.invocations(lines(7, 10, 11, 12))  # one extra line before the timed runs
    summary = pmu.summarize(found, per_execution=1, warmup=0, timed=3)
    assert summary.counters["npu_cycles"] == 11
    assert summary.problem is not None and "expected 3 PMU lines" in summary.problem
    short = pmu.summarize(found[:2], per_execution=1, warmup=0, timed=3)
    assert short.counters == {}


def test_format_line_round_trips() -> None:
    line = pmu.format_line({"npu_idle": 4, "cycles": 99})
    assert line == "ethos-u pmu: cycles=99 npu_idle=4"
    parsed = pmu.parse_line(line)
    assert parsed is not None and dict(parsed.counts) == {"cycles": 99, "npu_idle": 4}
