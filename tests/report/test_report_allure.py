"""allure-pytest results of a real run: labels, parameters, attachments, environment, categories."""

from __future__ import annotations

import json

import matplotlib.image
import torch
from allure_read import allure_results, attachment, category_of, labels
from report_lab import Runs


def test_each_case_is_filed_by_target_backend_suite_and_operator(runs: Runs) -> None:
    result = allure_results(runs.allure_a)["test_op[linear-host-xnnpack-int8]"]
    found = labels(result)
    assert found["target"] == ["host"]
    assert found["backend"] == ["xnnpack-int8"]
    assert found["operator"] == ["linear"]
    assert found["parentSuite"] == ["host"]
    assert found["suite"] == ["operators"]
    assert found["subSuite"] == ["xnnpack-int8"]
    assert found["verdict"] == ["PASS"]
    assert result["name"] and result["status"] == "passed"
    params = {p["name"]: p for p in result["parameters"]}
    assert params["backend"]["value"] == "'xnnpack-int8'"
    assert params["numerics"]["value"] == "'int8'"
    assert params["hil_variant"]["value"] == "'linear-host-xnnpack-int8'"
    assert params["hil_variant"]["excluded"] is True  # no function addresses in the history id


def test_history_id_is_the_same_in_two_runs(runs: Runs) -> None:
    before = allure_results(runs.allure_a)["test_op[relu-host-portable]"]
    after = allure_results(runs.allure_b)["test_op[relu-host-portable]"]
    assert before["historyId"] == after["historyId"]


def test_a_finished_check_carries_metrics_plots_and_the_pte_hash(runs: Runs) -> None:
    result = allure_results(runs.allure_a)["test_op[linear-host-xnnpack-int8]"]
    checks = json.loads(attachment(runs.allure_a, result, "verdict checks").read_text())
    assert checks["verdict"] == "PASS" and checks["metrics against eager"]["max_abs"] > 0
    target = next(c for c in checks["checks"] if c["question"] == "target")
    assert target["reference"] == "the quantized PyTorch model"
    assert target["observed"]["max_steps"] <= target["limits"][0]["value"]
    assert {c["question"] for c in checks["checks"]} >= {"target", "quantization"}
    for name in ("outputs vs the quantized model", "latency vs budget (measured)"):
        image = matplotlib.image.imread(attachment(runs.allure_a, result, name))
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 300
        assert len({tuple(p) for p in image.reshape(-1, image.shape[2])[::97]}) > 5  # not blank
    record = next(
        json.loads(line)
        for line in (runs.a / "records.jsonl").read_text().splitlines()
        if '"linear"' in line and "xnnpack-int8" in line
    )
    pte = attachment(runs.allure_a, result, ".pte sha256").read_text()
    assert f"sha256 {record['artifact']['sha256']}" in pte


def test_failures_and_lab_errors_fall_into_separate_categories(runs: Runs) -> None:
    categories = json.loads((runs.allure_a / "categories.json").read_text())
    results = allure_results(runs.allure_a)
    infra, failures = categories[0]["name"], categories[1]["name"]
    assert category_of(categories, results["test_op[tight-host-portable]"]) == [failures]
    assert category_of(categories, results["test_op[broken-host-portable]"]) == [failures]
    assert category_of(categories, results["test_op[relu-flaky-portable]"]) == [infra]
    assert category_of(categories, results["test_op[relu-ghost-portable]"]) == [infra]
    assert results["test_op[relu-flaky-portable]"]["status"] == "broken"
    assert results["test_op[tight-host-portable]"]["status"] == "failed"
    broken = results["test_op[broken-host-portable]"]
    assert labels(broken)["verdict"] == ["EXPORT FAILED"]
    what = attachment(runs.allure_a, broken, "EXPORT FAILED: what happened").read_text()
    assert "torch.export failed" in what


def test_environment_lists_tool_versions_commit_and_targets(runs: Runs) -> None:
    lines = (runs.allure_a / "environment.properties").read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines)
    assert values["torch"] == str(torch.__version__)
    assert values["executorch"] == "1.5.1"
    assert values["git.commit"] == runs.commit
    assert values["target.flaky"] == "serial, measured timing"
    assert "seed.policy" in values and "command" in values
