"""The NPU summary tables render from records alone, and say the numbers are estimates."""

from __future__ import annotations

from typing import Any

from hil.report.npu_table import render


def record(case: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"case": case, "target": target, "recipe": "ethos-u", "verdict": "PASS", **extra}


NPU = record(
    "mobilenet_v2_lrn",
    "u55-ref",
    counters={
        "npu_cycles": 4370362.0,
        "est_time_us": 13934.6,
        "mac_utilization": 0.177,
        "sram_bytes": 1179648.0,
        "flash_bytes": 3472176.0,
    },
    partition={
        "backend": "Ethos-U",
        "delegates": 2,
        "delegated_fraction": 0.991,
        "fallbacks": [{"op": "aten.avg_pool3d.default", "count": 1, "reason": "Not included"}],
        "missing_kernels": ["aten::avg_pool3d.out"],
    },
    metrics={"max_abs": 0.05, "sqnr_db": 25.7},
    quantized_agreement={"statement": "3.0 steps"},
)
CORTEX = record(
    "tiny_cnn",
    "cortex-m55-ref",
    partition={
        "backend": "CMSIS-NN",
        "delegates": 0,
        "delegated_fraction": 1.0,
        "accelerated": {"cortex_m.quantized_conv2d.default": 1},
        "fallbacks": [],
    },
    metrics={"max_abs": 0.01, "sqnr_db": 40.0},
)


def test_npu_row_has_every_column() -> None:
    text = "\n".join(render([NPU]))
    assert "ESTIMATES" in text
    for expected in (
        "99% (2 del.)",
        "4,370,362",
        "13.93 ms",
        "17.7%",
        "1152.0 KiB",
        "25.7",
        "3.0 steps",
    ):
        assert expected in text, expected


def test_fallbacks_and_missing_kernels_are_listed() -> None:
    text = "\n".join(render([NPU]))
    assert "aten.avg_pool3d.default" in text and "Not included" in text
    assert "aten::avg_pool3d.out" in text and "no ExecuTorch CPU kernel" in text


def test_cortex_m_section_and_nothing_for_other_records() -> None:
    text = "\n".join(render([CORTEX]))
    assert "CMSIS-NN" in text and "tiny_cnn" in text
    assert render([record("add", "host", counters={}, partition=None)]) == []
    # an error record (export failed) has only the verdict: it still renders
    assert render(
        [
            {
                **record("x", "u55-ref"),
                "verdict": "EXPORT FAILED",
                "partition": None,
                "counters": {"npu_cycles": 1.0},
            }
        ]
    )
