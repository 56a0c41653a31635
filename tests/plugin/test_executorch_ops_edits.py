"""`-p hil.executorch_ops`: a test's edits of its pipeline reach the program hil judges, or the
case says which edit does not, and their Tester's surfaces never end in a raw Python error.

Each test runs a small file of their real pipeline classes through the plugin in a pytest
subprocess, with hil's real targets and exporter (as tests/plugin/test_executorch_ops.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# ExecuTorch's misc/test_custom_partition.py, in small: the partitioner told to keep sigmoid
# out with `change_args`, on the TOSA FP profile (tosa-fp-ref: their own pipeline builds the
# program) and the INT one (u85-ref: hil's lowering with the test's check objects).
EDITS = """
import torch
from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineFP, TosaPipelineINT
from executorch.backends.test.harness.stages import StageType
from executorch.exir.backend.operator_support import DontPartition
from executorch.exir.dialects._ops import ops as exir_ops

DELEGATE = "torch.ops.higher_order.executorch_call_delegate"
SIGMOID = "executorch_exir_dialects_edge__ops_aten_sigmoid_default"


class AddSigmoidMul(torch.nn.Module):
    def forward(self, x, y):
        z = x + y
        return torch.sigmoid(z) * z


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 4, 5), torch.randn(2, 4, 5))


def _sigmoid_kept_out(pipeline_class):
    check = DontPartition(exir_ops.edge.aten.sigmoid.default)
    check._rejected_nodes = []  # their class shares one list between checks: its own
    pipeline = pipeline_class(AddSigmoidMul(), inputs(), [], exir_op=[])
    pipeline.change_args("to_edge_transform_and_lower", additional_checks=[check])
    pipeline.change_args("check_count.exir", {DELEGATE: 2, SIGMOID: 1})
    pipeline.run()
    assert check.has_rejected_node()


def test_sigmoid_kept_out_tosa_FP():
    _sigmoid_kept_out(TosaPipelineFP)


def test_sigmoid_kept_out_tosa_INT():
    _sigmoid_kept_out(TosaPipelineINT)


def test_sigmoid_kept_out_by_name_tosa_INT():
    pipeline = TosaPipelineINT(AddSigmoidMul(), inputs(), [], exir_op=[])
    pipeline.quantizer.set_module_type(torch.nn.Sigmoid, None)
    pipeline.run()


def test_reads_their_lowering_stage_tosa_INT():
    pipeline = TosaPipelineINT(AddSigmoidMul(), inputs(), [], exir_op=[])
    pipeline.run()
    assert pipeline.tester.stages[StageType.TO_EDGE_TRANSFORM_AND_LOWER] is not None


def test_reads_a_stage_kwargs_tosa_FP():
    pipeline = TosaPipelineFP(AddSigmoidMul(), inputs(), [], exir_op=[])
    stage = pipeline._stages[pipeline.find_pos("run_method_and_compare_outputs")]
    assert stage.kwargs["compare_outputs"] is True
"""


def run(pytester: pytest.Pytester, cache: Path, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")
    return pytester.runpytest_subprocess(
        "-p",
        "hil.executorch_ops",
        f"--hil-devices={REPO / 'devices'}",
        f"--hil-cache-dir={cache}",
        "--hil-results-dir=results",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:labgrid",
        "-rfsA",
        *args,
    )


def records(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    lines = (pytester.path / "results" / "records.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    return {f"{r['case'].split('::')[1]}@{r['target']}": r for r in found if "executorch" in r}


@pytest.fixture
def edits_run(pytester: pytest.Pytester, shared_cache: Path) -> pytest.RunResult:
    pytester.makepyfile(test_edits=EDITS)
    return run(pytester, shared_cache, "test_edits.py", "--target=tosa-fp-ref", "--target=u85-ref")


def test_a_dont_partition_added_with_change_args_keeps_sigmoid_out_of_the_delegate(
    pytester: pytest.Pytester, edits_run: pytest.RunResult
) -> None:
    """Their check object sees the nodes (has_rejected_node() is asserted in the file), their
    check_count.exir holds, and the program hil ran has sigmoid on the CPU: on tosa-fp-ref
    their pipeline built it, on u85-ref hil's lowering with the test's check."""
    outcomes = edits_run.parseoutcomes()
    assert outcomes.get("passed") == 4 and "failed" not in outcomes, edits_run.stdout.str()[-4000:]
    found = records(pytester)
    for name, built_by in (
        ("test_sigmoid_kept_out_tosa_FP@tosa-fp-ref", "their pipeline"),
        ("test_sigmoid_kept_out_tosa_INT@u85-ref", "hil's recipe with the test's partitioner"),
    ):
        record = found[name]
        extra = record["executorch"]
        assert extra["built_by"].startswith(built_by)  # type: ignore[index]
        assert extra["their_edits"] == [  # type: ignore[index]
            "to_edge_transform_and_lower(additional_checks=[DontPartition])"
        ]
        partition = record["partition"]
        assert partition["delegates"] == 2  # type: ignore[index]
        assert [f["op"] for f in partition["fallbacks"]] == ["aten.sigmoid.default"]  # type: ignore[index]
        assert record["verdict"] == "PASS"


def test_an_edit_hil_does_not_apply_is_not_judged_and_named(
    pytester: pytest.Pytester, edits_run: pytest.RunResult
) -> None:
    """A quantizer edit (set_module_type) of a program u85-ref's recipe quantizes otherwise:
    refused, naming the edit, never judged as if the test had not asked."""
    text = edits_run.stdout.str()
    assert "SKIPPED" in text and "test_sigmoid_kept_out_by_name_tosa_INT" in text
    assert "NOT JUDGED: the test changes quantizer.set_module_type(Sigmoid, None)" in text
    assert "test_sigmoid_kept_out_by_name_tosa_INT@u85-ref" not in records(pytester)


def test_their_tester_surfaces_run_as_their_own_test_never_a_raw_error(
    edits_run: pytest.RunResult,
) -> None:
    """`pipeline.tester.stages[StageType.X]` and `pipeline._stages[i].kwargs` on hil's
    stand-in: the case runs as their own test, counted with its reason; no TypeError or
    AttributeError out of hil's code."""
    text = edits_run.stdout.str()
    assert "run as their own test (their harness's verdict, not hil's): 2" in text
    assert "pipeline.tester.stages, which hil's stand-in" in text
    assert "pipeline._stages[...].kwargs, which hil's stand-in" in text
    assert "TypeError" not in text and "AttributeError" not in text
