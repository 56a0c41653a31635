"""`-p hil.executorch_ops --hil-their-program`: the program hil judges is the one their pipeline
builds, on a sample of the wheel's op, model and misc tests (TosaPipelineFP on tosa-fp-ref):
each record's artifact digest equals the .pte their own serialize stage holds.
bench/executorch_ops_all.py --same-program measures the same on a larger sample, and how hil's
own recipe's program compares with theirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.test_executorch_ops import wheel_ops
from tests.plugin.test_executorch_ops_edits import run


def test_the_program_hil_judges_is_their_pipelines_across_ops_models_and_misc(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    test = wheel_ops().parent
    result = run(
        pytester,
        shared_cache,
        str(test / "ops" / "test_add.py"),
        str(test / "models" / "test_residual_conv_block.py"),
        str(test / "misc" / "test_multiple_outputs.py"),
        "-k",
        "(test_add_tensor_tosa_FP and 1d_ones and not fp16 and not bf16) "
        "or residual_conv_block_tosa_FP or multiple_outputs_tosa_FP",
        "--target=tosa-fp-ref",
        "--hil-their-program",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 3 and "failed" not in outcomes, result.stdout.str()[-4000:]
    lines = (pytester.path / "results" / "records.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    ours = [r for r in found if "executorch" in r]
    assert {r["case"].split("::")[0] for r in ours} == {
        "test_add",
        "test_residual_conv_block",
        "test_multiple_outputs",
    }
    for record in ours:
        extra = record["executorch"]
        assert extra["built_by"] == "their pipeline"
        assert extra["their_pte_sha256"] == record["artifact"]["sha256"], record["case"]
        assert record["verdict"] == "PASS"
