"""The summary's bare-metal memory section: each model's smallest pools, from the runner."""

from __future__ import annotations

from typing import Any

from hil.report import memory_table


def record(target: str, platform: str, **counters: float) -> dict[str, Any]:
    return {
        "case": "resnet8",
        "target": target,
        "recipe": "cortex-m",
        "verdict": "PASS",
        "target_info": {"kind": "serial", "platform": platform},
        "counters": counters,
        "checks": [{"subject": "ram_peak_bytes", "status": "pass"}],
    }


PEAKS = {
    "model_pool_peak_bytes": 99_225,
    "method_pool_peak_bytes": 11_161,
    "planned_pool_peak_bytes": 49_766,
    "temp_pool_peak_bytes": 205,
    "io_pool_peak_bytes": 12_288,
    "ram_peak_bytes": 73_420,
    "model_pool_size_bytes": 33_554_432,
}


def test_a_bare_metal_runner_gets_a_row_of_pool_peaks_and_its_memory_verdict() -> None:
    lines = memory_table.render([record("qemu-m55", "cortex-m55/mps3-an547", **PEAKS)])
    assert lines[0].startswith("Bare-metal memory: the smallest pools each model needed")
    assert "qemu-m55's runner has (KiB): model 32,768.0" in lines[1]
    (row,) = [line for line in lines if line.startswith("resnet8")]
    assert row.split() == [
        "resnet8",
        "qemu-m55",
        "cortex-m",
        "96.9",
        "10.9",
        "48.6",
        "0.2",
        "12.0",
        "71.7",
        "PASS",
    ]
    assert "hil firmware pools MODEL.pte" in lines[-2]


def test_posix_runners_and_targets_without_pools_are_left_out() -> None:
    assert memory_table.render([record("vboard", "posix-x86_64", **PEAKS)]) == []
    assert memory_table.render([record("qemu-m55", "cortex-m55/mps3-an547")]) == []
