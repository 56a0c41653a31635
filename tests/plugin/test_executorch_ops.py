"""`-p hil.executorch_ops`: ExecuTorch's own operator tests, unchanged, judged on hil targets.

Real test files of the installed executorch wheel run through the plugin in a pytest
subprocess (their harness registers torch operator libraries when imported), with hil's
real targets and exporter: no fake of their pipelines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def wheel_ops(backend: str = "arm") -> Path:
    import executorch

    return Path(next(iter(executorch.__path__))) / "backends" / backend / "test" / "ops"


# A test file an operator author might write: their real pipeline classes and helpers.
AUTHORED = """
import torch
from executorch.backends.arm.quantizer.arm_quantizer import (
    get_symmetric_a16w8_quantization_config,
)
from executorch.backends.arm.test.tester.test_pipeline import (
    EthosU85PipelineINT,
    TosaPipelineINT,
    VgfPipeline,
)

ATEN, EXIR = "torch.ops.aten.add.Tensor", "executorch_exir_dialects_edge__ops_aten_add_Tensor"


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def inputs():
    return (torch.rand(1, 8), torch.rand(1, 8))


def test_add_u85_INT_a16w8():
    EthosU85PipelineINT[tuple](Add(), inputs(), ATEN, EXIR, a16w8_quantization=True).run()


def test_add_tosa_INT_16a8w_by_config():
    pipeline = TosaPipelineINT(Add(), inputs(), ATEN, EXIR)
    pipeline.quantizer.set_global(get_symmetric_a16w8_quantization_config())
    pipeline.run()


def test_add_tosa_INT_asserts_two_delegates():
    pipeline = TosaPipelineINT(Add(), inputs(), ATEN, EXIR)
    pipeline.change_args("check_count.exir", {"torch.ops.higher_order.executorch_call_delegate": 2})
    pipeline.run()


def test_add_tosa_INT_never_runs():
    TosaPipelineINT(Add(), inputs(), ATEN, EXIR)


def test_add_vgf():
    VgfPipeline(Add(), inputs(), ATEN, EXIR).run()


def _add_pipeline():
    return TosaPipelineINT(Add(), inputs(), ATEN, EXIR)


def test_add_tosa_INT_built_in_a_helper():
    _add_pipeline().run()
"""


def run(pytester: pytest.Pytester, shared_cache: Path, *args: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\n")  # a folder of the user's own, not hil's checkout
    return pytester.runpytest_subprocess(
        "-p",
        "hil.executorch_ops",
        f"--hil-devices={REPO / 'devices'}",
        f"--hil-cache-dir={shared_cache}",
        "--hil-results-dir=results",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:labgrid",
        "-rfs",
        *args,
    )


def records(pytester: pytest.Pytester) -> list[dict[str, object]]:
    lines = (pytester.path / "results" / "records.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def only_constant_outputs_unjudged(found: list[dict[str, object]]) -> bool:
    """Every NOT JUDGED record is one whose eager output is all zero, and says so."""
    unjudged = [r for r in found if r.get("verdict") == "NOT JUDGED"]
    return all(
        any("eager's output is all zero" in str(line) for line in r.get("not_judged") or [])  # type: ignore[union-attr]
        for r in unjudged
    )


def test_the_wheels_relu_tests_run_on_u85_ref_and_host(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops() / "test_relu.py"),
        "--target=u85-ref",
        "--target=host",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes["passed"] >= 28
    # relu of zeros and of negatives: eager is all zero, so the quantization question cannot
    # be asked (NOT JUDGED, skipped); nothing else is left unjudged
    assert only_constant_outputs_unjudged(records(pytester))
    text = result.stdout.str()
    assert "EthosU55PipelineINT runs on a device with an Ethos-U55" in text  # named, not passed
    assert "VgfPipeline runs on vgf-emu (the VGF recipes), not on u85-ref, host" in text
    assert "hil's verdict beside theirs" in text and "verdicts: agree" in text
    found = [r for r in records(pytester) if "executorch" in r]
    pipelines = {r["executorch"]["pipeline"] for r in found}  # type: ignore[index]
    assert {"TosaPipelineINT", "TosaPipelineFP", "EthosU85PipelineINT"} <= pipelines
    on_u85 = [r for r in found if r["target"] == "u85-ref"]
    assert on_u85 and all(r["recipe"] == "ethos-u" for r in on_u85)
    assert {r["recipe"] for r in found if r["target"] == "host"} == {
        "portable",
        "xnnpack-fp32",
        "xnnpack-int8",
    }
    held = [
        a
        for r in on_u85
        for a in r["executorch"]["stage_assertions"]  # type: ignore[index]
        if a["check"] == "check_count" and a["status"] == "judged"
    ]
    assert held  # one delegate, as their pipeline asserts, judged on hil's partition
    assert "their rule" in text and "test_relu::test_relu_u85_INT[ones]" in text  # per-case
    ran = json.loads((pytester.path / "results" / "run.json").read_text())
    tests = outcomes["passed"] + outcomes.get("skipped", 0)
    assert len(ran["collected"]) == tests and ran["ended"] == ran["collected"]  # all of theirs
    from hil import cli

    out = pytester.path / "report"
    code = cli.main(["report", "--results", str(pytester.path / "results"), "--out", str(out)])
    report = json.loads((out / "report.json").read_text())  # schema-checked when written
    # whole and complete (every collected test ended, every record as written): only the
    # checkout the run's rootdir is in may stand against it (a developer's uncommitted edits)
    reasons = report["certification"]["reasons"]
    assert all("uncommitted changes" in r or "git checkout" in r for r in reasons), reasons
    assert code == (3 if reasons else 0)
    rows = report["results"]
    theirs = [r["executorch"] for r in rows if r.get("executorch")]
    assert theirs and all(t["their_rule"] in ("PASS", "FAIL", "n/a") for t in theirs)
    assert 'data-kind="executorch"' in (out / "report.html").read_text() or all(
        r["category"] == "pass" for r in rows
    )  # shown beside a failure's details


def test_the_wheels_float_add_rows_are_judged_in_their_own_float_types(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """test_add's TosaPipelineFP lists tosa_extensions=["bf16"] for its float32, float16 and
    bfloat16 rows alike: each row is judged in its inputs' type (bf16 in bf16 ulps), on host
    and on tosa-fp-ref (their own TOSA-1.0+FP+bf16 lowering in the TOSA reference model)."""
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops() / "test_add.py"),
        "--target=host",
        "--target=tosa-fp-ref",
        "-k",
        "test_add_tensor_tosa_FP and not FP_",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and "skipped" not in outcomes, result.stdout.str()[-3000:]
    judged = [r for r in records(pytester) if "executorch" in r]
    variants = {r["executorch"]["variant"] for r in judged}  # type: ignore[index]
    assert variants == {"fp32", "fp16", "bf16"}
    assert all(r["verdict"] == "PASS" for r in judged)
    assert {r["recipe"] for r in judged} == {"portable", "xnnpack-fp32", "tosa-fp"}
    on_tosa = [r for r in judged if r["target"] == "tosa-fp-ref"]
    assert all(
        r["artifact"]["details"]["tosa_spec"] == "TOSA-1.0+FP+bf16"  # type: ignore[index]
        for r in on_tosa
    )
    bf16 = [
        c["basis"]
        for r in judged
        if r["executorch"]["variant"] == "bf16"  # type: ignore[index]
        for c in r["checks"]
        if c["question"] == "target"
    ]  # type: ignore[attr-defined]
    assert bf16 and all(b.startswith("bf16: 4 ulps") for b in bf16)


def test_float8_rows_on_tosa_fp_ref_check_their_tosa_counts_and_say_what_eager_cannot(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """test_conv2d's float8 rows: their TOSA operator counts are judged on hil's lowering (the
    test's own TOSA specification); torch has no float8 convolution, so the outputs are NOT
    JUDGED, saying so (their test compares nothing either)."""
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops() / "test_conv2d.py"),
        "--target=tosa-fp-ref",
        "-k",
        "tosa_FP_fp8",
    )
    result.assert_outcomes(skipped=2)
    assert "eager PyTorch cannot run the model" in result.stdout.str()
    counts = [
        a
        for r in records(pytester)
        for a in r["executorch"]["stage_assertions"]  # type: ignore[index]
        if a["check"] == "count_tosa_ops"
    ]
    assert len(counts) == 2 and all(a["status"] == "judged" for a in counts)
    assert all(a["found"] == {"CONV2D": 1, "CAST": 1} for a in counts)


def test_an_authors_own_file_variants_assertions_and_what_cannot_pass(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    pytester.makepyfile(test_authored=AUTHORED)
    result = run(pytester, shared_cache, "test_authored.py", "--target=u85-ref")
    result.assert_outcomes(passed=3, failed=2, skipped=1)
    text = result.stdout.str()
    assert "their stage assertions do not hold on hil's lowering" in text
    assert (
        "torch.ops.higher_order.executorch_call_delegate: expected 2, hil's lowering has 1" in text
    )
    assert "never called its run(): nothing was judged" in text
    assert "VgfPipeline runs on vgf-emu (the VGF recipes), not on u85-ref" in text
    variants = {
        str(r["case"]): r["executorch"]["variant"]  # type: ignore[index]
        for r in records(pytester)
        if "executorch" in r
    }
    assert variants["test_authored::test_add_u85_INT_a16w8"] == "a16w8"
    assert variants["test_authored::test_add_tosa_INT_16a8w_by_config"] == "a16w8"
    assert variants["test_authored::test_add_tosa_INT_asserts_two_delegates"] == "int8"
    assert variants["test_authored::test_add_tosa_INT_built_in_a_helper"] == "int8"  # judged


# Their test's own code failing before any pipeline is built (ExecuTorch's
# test_tril_u55_INT_not_supported reads `Tril.exir_op`, which its module does not define).
OWN_ERRORS = """
import pytest
import torch
from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineINT


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


@pytest.mark.xfail(reason="add is not supported here", strict=True)
def test_add_tosa_INT_expected_to_break():
    TosaPipelineINT(Add(), (torch.rand(1, 8), torch.rand(1, 8)), Add.aten_op, []).run()


def test_add_tosa_INT_broken():
    TosaPipelineINT(Add(), (torch.rand(1, 8), torch.rand(1, 8)), Add.aten_op, []).run()
"""


def test_their_own_code_failing_before_a_pipeline_is_their_expected_failure_or_a_failure(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    pytester.makepyfile(test_own_errors=OWN_ERRORS)
    result = run(pytester, shared_cache, "test_own_errors.py", "--target=u85-ref", "-rfsx")
    result.assert_outcomes(failed=1, xfailed=1)
    text = result.stdout.str()
    assert (
        "ExecuTorch expects it (add is not supported here): their test raised AttributeError: "
        "type object 'Add' has no attribute 'aten_op' before any pipeline ran" in text
    )
    assert "FAILED test_own_errors.py::test_add_tosa_INT_broken" in text


# A pipeline of their kind that hil does not stand in for, built in a helper (as their MXFP
# tests do), beside a test that builds no pipeline at all.
UNANSWERED = """
import torch
from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineFP


class ScaledPipeline(TosaPipelineFP):
    pass


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def _lower_add():
    ScaledPipeline(Add(), (torch.rand(1, 8), torch.rand(1, 8)), "torch.ops.aten.add.Tensor", []).run()


def test_add_scaled_pipeline():
    _lower_add()


def test_add_in_eager_only():
    assert torch.equal(Add()(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
"""


def test_a_pipeline_hil_does_not_stand_in_for_is_skipped_by_name_not_passed(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    pytester.makepyfile(test_unanswered=UNANSWERED)
    result = run(pytester, shared_cache, "test_unanswered.py", "--target=tosa-fp-ref")
    result.assert_outcomes(passed=1, skipped=1)  # the eager-only test is their own test
    assert (
        "ScaledPipeline: a pipeline of theirs hil does not stand in for: its rows are not "
        "judged by hil" in result.stdout.str()
    )


def test_the_cortex_m_harness_runs_on_cortex_m55_ref(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """CortexMTester's test_dialect and test_implementation, one hil check each; their op counts
    after the cortex_m passes judged on hil's lowering; the broadcast cases they expect to fail
    their own assertions are expected failures here, for the same reason."""
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops("cortex_m") / "test_add.py"),
        "--target=cortex-m55-ref",
        "-rx",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes["passed"] >= 30 and outcomes["xfailed"] >= 3
    text = result.stdout.str()
    assert "ExecuTorch expects it (Broadcasting is not supported in Cortex-M backend)" in text
    found = [r for r in records(pytester) if "executorch" in r]
    assert {r["executorch"]["pipeline"] for r in found} == {"CortexMTester"}  # type: ignore[index]
    judged = [
        a
        for r in found
        for a in r["executorch"]["stage_assertions"]  # type: ignore[index]
        if a["after"] == "run_passes" and a["status"] == "judged"
    ]
    assert judged  # cortex_m::quantized_add and its quantize/dequantize, as they count them
    inplace = [r for r in found if "inplace_add_relu" in str(r["case"])]
    assert inplace and all(r["verdict"] == "PASS" for r in inplace)  # writes its own input


def test_the_wheels_vgf_add_rows_run_on_vgf_emu(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """Their VgfPipeline rows of test_add (int8, a16w8 and the float types) on the ML SDK's
    emulation layer: each on the recipe its `quantize` picks, none refused for want of a
    model-converter on PATH (hil brings it)."""
    result = run(
        pytester, shared_cache, str(wheel_ops() / "test_add.py"), "-k", "vgf", "--target=vgf-emu"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()[-3000:]
    assert outcomes["passed"] >= 24
    assert only_constant_outputs_unjudged(records(pytester))
    assert "Did not find model-converter" not in result.stdout.str()
    found = [r for r in records(pytester) if "executorch" in r]
    assert {r["recipe"] for r in found} == {"vgf", "vgf-fp"}
    assert {r["executorch"]["variant"] for r in found} >= {"int8", "a16w8", "fp32", "fp16", "bf16"}  # type: ignore[index]


def test_a_none_argument_of_their_module_is_a_constant(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """test_div_tensor_mode's module takes `rounding_mode=None` as an argument: exported as the
    constant it is, on every target (it was refused as an input)."""
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops() / "test_div_tensor_mode.py"),
        "-k",
        "tosa_INT and mode_none",
        "--target=u85-ref",
        "--target=host",
    )
    result.assert_outcomes(passed=2)


def test_tosa_int_partition_assertions_are_reported_on_the_u55_and_judged_on_the_u85(
    pytester: pytest.Pytester, shared_cache: Path
) -> None:
    """test_any_tosa_INT asserts the TOSA-1.0 INT profile delegates `any`: the U85 does, the
    U55 (a subset of the profile) keeps it on its CPU with the outputs right. On the U55 that
    assertion is reported with the reason; it failed the case before (384 checks of the
    folder's first 88 files)."""
    result = run(
        pytester,
        shared_cache,
        str(wheel_ops() / "test_any.py"),
        "-k",
        "test_any_tosa_INT and any_rank1 and not reduce and not squeeze and not dims",
        "--target=u55-ref",
        "--target=u85-ref",
    )
    result.assert_outcomes(passed=2)
    by_target = {r["target"]: r["executorch"]["stage_assertions"] for r in records(pytester)}  # type: ignore[index]
    assert all(a["status"] == "reported" for a in by_target["u55-ref"])  # type: ignore[union-attr,index]
    assert any("Ethos-U55 delegates a subset" in a["note"] for a in by_target["u55-ref"])  # type: ignore[union-attr,index]
    assert any(a["status"] == "judged" for a in by_target["u85-ref"])  # type: ignore[union-attr,index]


# A test that runs one pipeline per sample, each on a module with fresh unseeded weights, as
# their test_cond does: each run is its own case, and every one is exported ahead.
PER_SAMPLE = """
import torch
from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineINT


def test_linear_per_sample_tosa_INT():
    for sign in (1.0, -1.0):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
        TosaPipelineINT[tuple](model, (sign * torch.rand(1, 8),), [], []).run()
"""


def test_each_pipeline_a_test_runs_in_a_loop_is_exported_ahead_with_the_same_weights(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_per_sample=PER_SAMPLE)
    shas = []
    for workers in ("2", "0"):  # ahead in workers, then each in the check's own process
        cache = tmp_path / f"cache-{workers}"
        result = run(
            pytester,
            cache,
            "test_per_sample.py",
            "--target=u85-ref",
            f"--hil-export-workers={workers}",
        )
        assert result.parseoutcomes().get("passed") == 1, result.stdout.str()[-3000:]
        found = records(pytester)[-2:]
        assert [r["case"] for r in found] == [
            "test_per_sample::test_linear_per_sample_tosa_INT",
            "test_per_sample::test_linear_per_sample_tosa_INT#2",
        ]
        shas.append([r["artifact"]["sha256"] for r in found])  # type: ignore[index]
        if workers == "2":
            logs = (pytester.path / "results" / "export-workers").glob("*.log")
            text = "".join(p.read_text() for p in logs)
            assert "test_linear_per_sample_tosa_INT#2 [" in text  # noted past the first run()
    # the second model's weights do not depend on where the first export ran
    assert shas[0] == shas[1]
