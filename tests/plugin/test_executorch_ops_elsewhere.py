"""`-p hil.executorch_ops`: a TOSA test's Arm assertions are checked on Arm lowerings only.

On a host target (portable, XNNPACK) the test is judged for its outputs: the delegate count,
the TOSA operator counts, a partitioner check it adds and its own assertions about them after
run() ("DID NOT RAISE", `has_rejected_node()`) are not applicable there, and the record says
which. On tosa-fp-ref the same assertions are judged, and a TOSA count that does not hold
fails in their own words (a test expecting it matches the message).

Runs a small file of their real pipeline classes through the plugin in a pytest subprocess
(as tests/plugin/test_executorch_ops_edits.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.plugin.test_executorch_ops_edits import run

# ExecuTorch's misc/test_count_tosa_ops.py as it is, and test_custom_partition.py in small
ELSEWHERE = """
import pytest
import torch
from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineFP, TosaPipelineINT
from executorch.exir.backend.operator_support import DontPartition
from executorch.exir.dialects._ops import ops as exir_ops


class AddModule(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class AddSigmoidMul(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        return torch.sigmoid(z) * z


def test_count_tosa_ops_add():
    test_data = (torch.randn(1, 8, 8, 8), torch.randn(1, 8, 8, 8))
    pipeline = TosaPipelineFP[type(test_data)](
        AddModule(), test_data, ["torch.ops.aten.add.Tensor"], run_on_tosa_ref_model=False
    )
    pipeline.count_tosa_ops({"ADD": 1, "SUB": 0})
    pipeline.run()


def test_count_tosa_ops_2_adds():
    test_data = (torch.randn(1, 8, 8, 8), torch.randn(1, 8, 8, 8))
    pipeline = TosaPipelineFP[type(test_data)](
        AddModule(), test_data, ["torch.ops.aten.add.Tensor"], run_on_tosa_ref_model=False
    )
    pipeline.count_tosa_ops({"ADD": 2})
    with pytest.raises(AssertionError, match="Expected 2 occurrences of TOSA op ADD"):
        pipeline.run()


def test_sigmoid_kept_out_tosa_INT():
    check = DontPartition(exir_ops.edge.aten.sigmoid.default)
    check._rejected_nodes = []
    pipeline = TosaPipelineINT(AddSigmoidMul(), (torch.randn(2, 4, 5), torch.randn(2, 4, 5)), [])
    pipeline.change_args("to_edge_transform_and_lower", additional_checks=[check])
    pipeline.run()
    assert check.has_rejected_node()
"""


def by_case(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    import json

    lines = (pytester.path / "results" / "records.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    return {
        f"{r['case'].split('::')[1]}@{r['target']}/{r['recipe']}": r
        for r in found
        if "executorch" in r
    }


def statuses(record: dict[str, Any]) -> dict[str, str]:
    return {
        f"{a['check']}.{a['after']}": a["status"] for a in record["executorch"]["stage_assertions"]
    }


@pytest.fixture
def elsewhere_run(pytester: pytest.Pytester, shared_cache: Path) -> pytest.RunResult:
    pytester.makepyfile(test_elsewhere=ELSEWHERE)
    return run(
        pytester,
        shared_cache,
        "test_elsewhere.py",
        "--target=host",
        "--target=tosa-fp-ref",
        "-k",
        "not xnnpack-fp32",
    )


def test_arm_assertions_are_not_applicable_on_host_and_judged_on_tosa_fp_ref(
    pytester: pytest.Pytester, elsewhere_run: pytest.RunResult
) -> None:
    """On host the outputs are judged and every Arm assertion is named not applicable (the
    delegate count, count_tosa_ops, the partitioner edit, the test's own has_rejected_node()
    and its "DID NOT RAISE"); on tosa-fp-ref count_tosa_ops is judged, and its failure is
    the one their test expects, in their words."""
    outcomes = elsewhere_run.parseoutcomes()
    text = elsewhere_run.stdout.str()
    assert outcomes.get("passed") == 5 and "failed" not in outcomes, text[-4000:]
    found = by_case(pytester)
    host_raises = found["test_count_tosa_ops_2_adds@host/portable"]
    assert host_raises["verdict"] == "PASS"
    assert statuses(host_raises) == {
        "check.aten": "reported",
        "check_not.exir": "reported",  # nothing asserted: no edge op named
        "check_count.exir": "not applicable",
        "count_tosa_ops.to_edge_transform_and_lower": "not applicable",
        "the test's own assertion.run": "not applicable",
    }
    own = host_raises["executorch"]["stage_assertions"][-1]
    assert own["found"].startswith("DID NOT RAISE")
    assert host_raises["executorch"]["arm_lowering"] is False
    host_partition = found["test_sigmoid_kept_out_tosa_INT@host/xnnpack-int8"]
    assert host_partition["verdict"] == "PASS"
    assert statuses(host_partition)["edit.to_edge_transform_and_lower"] == "not applicable"
    assert statuses(host_partition)["the test's own assertion.run"] == "not applicable"
    ref = found["test_count_tosa_ops_2_adds@tosa-fp-ref/tosa-fp"]
    counted = statuses(ref)["count_tosa_ops.to_edge_transform_and_lower"]
    assert counted == "failed" and ref["executorch"]["arm_lowering"] is True
    assert statuses(found["test_count_tosa_ops_add@tosa-fp-ref/tosa-fp"]) == {
        "check.aten": "reported",
        "check_not.exir": "reported",
        "check_count.exir": "judged",
        "count_tosa_ops.to_edge_transform_and_lower": "judged",
    }
    assert "not applicable where hil lowered for another backend" in text
    assert "2 x DID NOT RAISE" not in text and "1 x DID NOT RAISE" in text
    assert "1 x assert False" in text
