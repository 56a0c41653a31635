"""The summary's FVP-vs-Vela table and its list of problems that are not verdicts on the model."""

from __future__ import annotations

from typing import Any

from hil.report import fvp_table, problems

INFO = {
    "name": "fvp-u85",
    "kind": "fvp",
    "fvp": "FVP_Corstone_SSE-320",
    "fvp_version": "11.27.19 (Jun 10 2024)",
    "npu": "ethos-u85-256",
    "mode": "accurate",
    "build_id": "corstone-320-0123456789abcdef",
    "engine": "executorch",
}


def record(case: str, verdict: str, **counters: float) -> dict[str, Any]:
    return {
        "case": case,
        "target": "fvp-u85",
        "recipe": "ethos-u",
        "verdict": verdict,
        "counters": counters,
        "target_info": INFO,
    }


def error(case: str, verdict: str, cls: str, failure: str) -> dict[str, Any]:
    return {
        "case": case,
        "target": "fvp-u85",
        "recipe": "ethos-u",
        "verdict": verdict,
        "error_class": cls,
        "failure": failure,
    }


def test_fvp_cycles_beside_vela() -> None:
    lines = fvp_table.render(
        [
            record(
                "cnn",
                "PASS",
                npu_cycles=31_000,
                vela_npu_cycles=29_125,
                cpu_cycles=812_000,
                planned_pool_peak_bytes=4096,
                model_pool_peak_bytes=20480,
            ),
            record("relu", "OVER BUDGET", npu_cycles_fast=900, vela_npu_cycles=976),
            {
                "case": "host-case",
                "target": "host",
                "verdict": "PASS",
                "counters": {},
                "target_info": {"kind": "host"},
            },
        ]
    )
    text = "\n".join(lines)
    assert lines[0].startswith("Corstone FVP: NPU cycles from the Ethos-U PMU beside Vela")
    assert "fvp-u85: FVP_Corstone_SSE-320 11.27.19 (Jun 10 2024), ethos-u85-256" in text
    cnn = next(line for line in lines if line.startswith("cnn"))
    assert "31,000" in cnn and "29,125" in cnn and "1.06" in cnn and "4.0 KiB" in cnn
    relu = next(line for line in lines if line.startswith("relu"))
    assert "900 (fast)" in relu and "0.92" in relu and "OVER BUDGET" in relu
    assert "host-case" not in text


def test_no_fvp_records_no_section() -> None:
    assert (
        fvp_table.render(
            [
                {
                    "case": "a",
                    "target": "host",
                    "verdict": "PASS",
                    "counters": {"x": 1},
                    "target_info": {"kind": "host"},
                }
            ]
        )
        == []
    )


def test_infrastructure_problems_are_listed_apart_from_model_verdicts() -> None:
    lines = problems.render(
        [
            record("cnn", "PASS"),
            record("conv", "MISMATCH"),
            error(
                "relu",
                "INFRA",
                "FvpTimeLimit",
                "fvp-u85: the FVP stopped at its --timelimit of 600 s while running the model; "
                "FVP log: /r/boards/fvp-u85.log\n  fix: raise connection.time_limit_s",
            ),
            error("add", "CRASH", "TargetCrash", "fvp-u85: the runner crashed while running"),
        ]
    )
    assert lines[0] == (
        "infrastructure and target problems: 1 INFRA, 1 CRASH (not verdicts on "
        "the model; model verdicts: 1 PASS, 1 MISMATCH)"
    )
    assert lines[1].startswith("  INFRA  relu on fvp-u85 [ethos-u]: FvpTimeLimit: fvp-u85: the")
    assert "FVP log: /r/boards/fvp-u85.log" in lines[1] and "fix:" not in lines[1]
    assert lines[2].startswith("  CRASH  add on fvp-u85 [ethos-u]: TargetCrash:")
    assert problems.render([record("cnn", "PASS"), record("conv", "MISMATCH")]) == []
