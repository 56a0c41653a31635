"""Terminal summary tables render from records alone (what xdist workers send back)."""

from __future__ import annotations

from hil.report.summary import backend_latency_table, render
from hil.report.text_table import fmt_us


def record(
    case: str, recipe: str, median: float, verdict: str = "PASS", timing: str = "measured"
) -> dict:  # type: ignore[type-arg]
    return {
        "case": case,
        "target": "host",
        "recipe": recipe,
        "verdict": verdict,
        "metrics": {"max_abs": 1.5e-7, "sqnr_db": "inf", "cosine": 1.0},
        "latency": {"median_us": median, "p90_us": median * 1.1, "timing": timing},
        "eager_latency": {"median_us": 300.0},
        "budget": {"limit_ms": 5.0, "limit": 5.0, "kind": "absolute", "statistic": "median"},
        "checks": [
            {
                "question": "target",
                "subject": "output 0",
                "status": "pass",
                "observed": {"max_abs": 1.5e-7},
                "limits": [{"metric": "max_abs", "relation": "<=", "value": 1e-4}],
            },
        ],
    }


def test_one_table_per_target_with_verdicts_and_budget() -> None:
    lines = render(
        [record("mv2", "portable", 13000.0), record("mv2", "xnnpack-fp32", 72.0, "MISMATCH")]
    )
    assert lines[0] == "target host: 1/2 passed"
    assert lines[1].split() == [
        "case",
        "backend",
        "target",
        "check",
        "quantization",
        "SQNR",
        "vs",
        "eager",
        "verdict",
        "median",
        "p90",
        "budget",
    ]
    assert "13.00 ms" in lines[3] and "inf" in lines[3] and "5.00 ms median" in lines[3]
    assert "1.5e-07 of 1.0e-04" in lines[3]
    assert "MISMATCH" in lines[4]


def test_backend_table_puts_eager_beside_each_backend() -> None:
    lines = backend_latency_table(
        [record("mv2", "portable", 13000.0), record("mv2", "xnnpack-fp32", 72.0)]
    )
    assert lines[0].split() == ["case", "eager", "(1", "thread)", "portable", "xnnpack-fp32"]
    assert lines[2].split() == ["mv2", "300.0", "us", "13.00", "ms", "72.0", "us"]


def test_estimated_latency_is_labelled() -> None:
    lines = render([record("mv2", "ethos-u", 900.0, timing="estimated")])
    assert "900.0 us (est)" in lines[3]


def test_error_records_without_metrics_render() -> None:
    lines = render(
        [{"case": "bad", "target": "host", "recipe": "portable", "verdict": "EXPORT FAILED"}]
    )
    assert "EXPORT FAILED" in lines[3] and lines[0] == "target host: 0/1 passed"


def test_budgets_relative_to_eager_and_quantization_cells_read_plainly() -> None:
    quantized = record("mv2", "xnnpack-int8", 70.0)
    quantized["budget"] = {"limit": 0.3, "kind": "vs eager", "statistic": "min", "limit_ms": None}
    quantized["checks"] = [
        {
            "question": "target",
            "subject": "output 0",
            "status": "pass",
            "observed": {"max_steps": 2.0},
            "limits": [{"metric": "max_steps", "relation": "<=", "value": 11.0}],
        },
        {
            "question": "quantization",
            "subject": "output 0",
            "status": "pass",
            "observed": {"sqnr_db": 24.7},
            "limits": [{"metric": "sqnr_db", "relation": ">=", "value": 22.0}],
        },
    ]
    line = render([quantized])[3]
    assert "2 of 11 steps" in line and "24.7 dB (limit 22)" in line and "0.3x eager (min)" in line


def test_durations_pick_readable_units() -> None:
    assert (fmt_us(12.34), fmt_us(1234.0), fmt_us(2.5e6), fmt_us(None)) == (
        "12.3 us",
        "1.23 ms",
        "2.50 s",
        "-",
    )
