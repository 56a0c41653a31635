"""Which target, recipe and variant answer ExecuTorch's pipelines (their real quantization
configs from the installed package), what a stand-in records, and their rule on arrays."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from hil.devices import DeviceRegistry
from hil.executorch_ops import mapping, stages, their_rule
from hil.executorch_ops.calls import PipelineCall
from hil.executorch_ops.pipelines import DELEGATE_CALL, bind


def call(pipeline: str, config: Any = None, **options: Any) -> PipelineCall:
    recorded = PipelineCall(pipeline, torch.nn.ReLU(), (torch.zeros(1),), dict(options))
    recorded.global_config = config
    return recorded


def test_each_pipeline_finds_its_recipes(repo_devices: DeviceRegistry) -> None:
    def on(target: str, pipeline: str) -> list[str]:
        return mapping.recipes_for(pipeline, repo_devices.get(target))

    assert on("u85-ref", "TosaPipelineINT") == ["ethos-u"]
    assert on("cortex-m55-ref", "TosaPipelineINT") == ["cortex-m"]
    assert on("host", "TosaPipelineINT") == ["xnnpack-int8"]
    assert on("host", "TosaPipelineFP") == ["portable", "xnnpack-fp32"]
    assert on("u85-ref", "TosaPipelineFP") == []
    assert on("tosa-fp-ref", "TosaPipelineFP") == ["tosa-fp"]
    assert on("tosa-fp-ref", "TosaPipelineINT") == []
    assert "tosa-fp-ref" in mapping.fit_reason("TosaPipelineFP", ["u85-ref"])
    assert on("u85-ref", "EthosU85PipelineINT") == ["ethos-u"]
    assert on("u85-ref", "EthosU55PipelineINT") == []
    assert on("fvp-u55", "EthosU55PipelineINT") == ["ethos-u"]
    assert on("u55-ref", "OpNotSupportedPipeline") == ["ethos-u"]
    for name in mapping.NOT_ANSWERED:
        assert on("u85-ref", name) == [] and name in mapping.fit_reason(name, ["u85-ref"])


def test_the_u55_subset_assertion_runs_on_an_ethos_u55_only(repo_devices: DeviceRegistry) -> None:
    subset = call("OpNotSupportedPipeline", quantize=True, u55_subset=True)
    assert mapping.subset_reason(subset, repo_devices.get("u55-ref"), "u55-ref") is None
    why = mapping.subset_reason(subset, repo_devices.get("u85-ref"), "u85-ref")
    assert why is not None and "u55_subset=True" in why and "u85-ref" in why
    full = call("OpNotSupportedPipeline", quantize=True)
    assert mapping.subset_reason(full, repo_devices.get("u85-ref"), "u85-ref") is None


def test_variants_come_from_their_options_and_the_config_they_set() -> None:
    from executorch.backends.arm.quantizer.arm_quantizer import (
        get_symmetric_a8w4_quantization_config,
        get_symmetric_a16w8_quantization_config,
        get_symmetric_quantization_config,
    )

    assert mapping.variant_of(call("TosaPipelineINT"), "ethos-u").options == {
        "a16w8": False,
        "per_channel": True,
        "weights": "int8",
        "symmetric_io": False,
    }
    assert (
        mapping.variant_of(call("TosaPipelineINT", tosa_extensions=["int16"]), "ethos-u").label
        == "a16w8"
    )
    assert (
        mapping.variant_of(call("EthosU85PipelineINT", a16w8_quantization=True), "ethos-u").options[
            "a16w8"
        ]
        is True
    )
    by_config = mapping.variant_of(
        call("EthosU85PipelineINT", get_symmetric_a16w8_quantization_config()), "ethos-u"
    )
    assert by_config.label == "a16w8"  # set_global wins over the (absent) flag
    a8w4 = mapping.variant_of(
        call("TosaPipelineINT", get_symmetric_a8w4_quantization_config(is_per_channel=False)),
        "ethos-u",
    )
    assert a8w4.label == "a8w4 per-tensor" and a8w4.options["weights"] == "int4"
    assert a8w4.options["per_channel"] is False
    per_tensor = mapping.variant_of(
        call("TosaPipelineINT", get_symmetric_quantization_config(is_per_channel=False)), "ethos-u"
    )
    assert per_tensor.options["per_channel"] is False
    io = mapping.variant_of(call("TosaPipelineINT", symmetric_io_quantization=True), "ethos-u")
    assert io.options["symmetric_io"] is True and io.label == "int8 symmetric-io"


def test_a_float_program_is_judged_in_its_own_float_type() -> None:
    """test_add lists bf16 in tosa_extensions for its float32, float16 and bfloat16 rows: the
    extension allows a type, the row's inputs (else its weights) make the program's."""

    def variant(*inputs: torch.Tensor, module: Any = None) -> mapping.Variant:
        recorded = call("TosaPipelineFP", tosa_extensions=["bf16"])
        recorded.inputs, recorded.module = inputs, module or torch.nn.ReLU()
        return mapping.variant_of(recorded, "portable")

    assert variant(torch.ones(2)) == mapping.Variant("fp32")
    nested: Any = ((torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float16)), 0)
    assert variant(*nested) == mapping.Variant("fp16")  # cat's tuple of tensors
    assert variant(torch.ones(2, dtype=torch.float16)) == mapping.Variant("fp16")
    assert variant(torch.ones(2, dtype=torch.bfloat16)).label == "bf16"
    weights_only = variant(
        torch.ones(2, dtype=torch.int32), module=torch.nn.Linear(2, 2).to(torch.bfloat16)
    )
    assert weights_only == mapping.Variant("bf16")
    assert variant(torch.ones(2, dtype=torch.int32)) == mapping.Variant("fp32")
    fp8 = call("TosaPipelineFP", tosa_extensions=["fp8e4m3", "bf16"], tosa_version="1.0")
    fp8.inputs = (torch.zeros(2).to(torch.float8_e4m3fn),)
    on_tosa = mapping.variant_of(fp8, "tosa-fp")  # their own TOSA specification, float8 too
    assert on_tosa == mapping.Variant(
        "fp8e4m3", {"version": "1.0", "extensions": ["bf16", "fp8e4m3"]}
    )


def test_what_a_recipe_cannot_honour_is_named() -> None:
    from executorch.backends.arm.quantizer.arm_quantizer import (
        get_symmetric_a16w8_quantization_config,
    )

    on_host = mapping.variant_of(
        call("TosaPipelineINT", get_symmetric_a16w8_quantization_config()), "xnnpack-int8"
    )
    assert on_host.unsupported and "16-bit activations" in on_host.unsupported
    on_m55 = mapping.variant_of(
        call("TosaPipelineINT", get_symmetric_a16w8_quantization_config()), "cortex-m"
    )
    assert on_m55.options == {"int16_activations": True}
    fp8 = call("TosaPipelineFP", tosa_extensions=["fp8e4m3"])
    fp8.inputs = (torch.zeros(2).to(torch.float8_e4m3fn),)
    refused = mapping.variant_of(fp8, "portable")
    assert refused.label == "fp8e4m3" and "fp8e4m3 inputs" in (refused.unsupported or "")
    int32 = SimpleNamespace(input_activation=SimpleNamespace(dtype=torch.int32), weight=None)
    assert "32-bit activation config" in (
        mapping.variant_of(call("TosaPipelineINT", int32), "ethos-u").unsupported or ""
    )


def test_a_stand_in_records_their_edits() -> None:
    noted: list[PipelineCall] = []
    pipeline_class = bind("EthosU85PipelineINT", noted.append)
    pipeline = pipeline_class[tuple](
        torch.nn.ReLU(),
        torch.zeros(2),
        "torch.ops.aten.relu.default",
        "executorch_exir_dialects_edge__ops_aten_relu_default",
        a16w8_quantization=True,
    )
    pipeline.add_stage_after(
        "to_edge_transform_and_lower",
        pipeline.tester.check_count,
        {"executorch_exir_dialects_edge__ops_aten_relu_default": 0},
    )
    pipeline.pop_stage("check.aten")
    pipeline.change_args("run_method_and_compare_outputs", qtol=2)
    pipeline.dump_artifact("to_edge")
    pipeline.run()
    (recorded,) = noted
    assert recorded.inputs == (pipeline.call.inputs[0],) and recorded.option("a16w8_quantization")
    checks = [(a.check, a.after) for a in recorded.assertions]
    assert checks == [
        ("check_not", "exir"),
        ("check_count", "exir"),
        ("check_count", "to_edge_transform_and_lower"),
    ]
    assert recorded.assertions[1].expected == {DELEGATE_CALL: 1}
    assert recorded.compare_kwargs() == {"qtol": 2} and recorded.accepted == ["dump_artifact"]


def test_op_names_of_their_checks_meet_hils_partition() -> None:
    assert (
        stages.normalized("executorch_exir_dialects_edge__ops_aten_add_Tensor")
        == stages.normalized("torch.ops.aten.add.Tensor")
        == stages.normalized("aten.add.Tensor")
    )
    assert stages.normalized(DELEGATE_CALL) == stages.DELEGATE


def test_their_rule_is_allclose_with_qtol_steps(tmp_path: Path) -> None:
    arrays = tmp_path / "a.npz"
    out, qref = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.1, 3.0])
    np.savez(arrays, output0=out, quantized_reference0=qref, reference0=qref)
    artifact: Any = SimpleNamespace(output_scales=(0.1,))
    one_step = their_rule.their_verdict(call("TosaPipelineINT"), "int", arrays, artifact)
    assert one_step.passed is True  # 0.1 off: within atol + 1 x 0.1 + rtol
    strict = call("TosaPipelineINT", qtol=0)
    assert their_rule.their_verdict(strict, "int", arrays, artifact).passed is False


def test_their_rule_takes_non_finite_values_as_torch_isclose_does(tmp_path: Path) -> None:
    """Equal infinities are close (an fp16 sum that overflows on both sides), an infinity
    against a finite value or any NaN is not."""
    artifact: Any = SimpleNamespace(output_scales=())

    def verdict(out: list[float], ref: list[float]) -> bool | None:
        arrays = tmp_path / "a.npz"
        np.savez(arrays, output0=np.array(out, np.float16), reference0=np.array(ref, np.float16))
        return their_rule.their_verdict(call("TosaPipelineFP"), "fp", arrays, artifact).passed

    assert verdict([np.inf, 1.0], [np.inf, 1.0]) is True
    assert verdict([np.inf, 1.0], [-np.inf, 1.0]) is False
    assert verdict([6e4, 1.0], [np.inf, 1.0]) is False
    assert verdict([np.nan, 1.0], [np.nan, 1.0]) is False


def test_the_cortex_m_harness_is_recorded_as_one_check() -> None:
    noted: list[PipelineCall] = []
    tester = bind("CortexMTester", noted.append)(torch.nn.ReLU(), lambda: (torch.zeros(2),))
    tester.test_dialect(
        {"before_op": 1}, {"cortex_m_op": 1}, qtol=1, ops_absent_after_transforms=["gone_op"]
    )
    (recorded,) = noted
    assert [(a.check, a.after) for a in recorded.assertions] == [
        ("check_count", "to_edge"),
        ("check_count", "run_passes"),
        ("check_not", "run_passes"),
    ]
    assert recorded.compare_kwargs() == {"qtol": 1, "atol": 1e-3}
    assert recorded.inputs[0].shape == (2,)


def test_stage_after_the_cortex_m_passes_counts_the_kernels_in_the_graph() -> None:
    from hil.artifacts.partition import Fallback, PartitionReport

    report = PartitionReport(
        "CMSIS-NN",
        0,
        {"cortex_m.quantized_add.default": 1},
        (Fallback("aten.add.Tensor", 1, None),),
        {"cortex_m.quantize_per_tensor.default": 2},
    )
    counts = stages.cpu_counts(report)
    assert (
        counts[
            stages.normalized("executorch_exir_dialects_edge__ops_cortex_m_quantized_add_default")
        ]
        == 1
    )
    assert counts["aten_add_Tensor"] == 1 and counts["cortex_m_quantize_per_tensor_default"] == 2


def test_the_tosa_pipelines_own_quantization_bar_is_taken_with_its_reason() -> None:
    bar = mapping.quantization_bar(call("TosaPipelineINT", frobenius_threshold=0.45))
    assert bar is not None and bar.min_cosine == 0.9
    assert bar.min_sqnr_db is not None and abs(bar.min_sqnr_db - 6.94) < 0.01
    assert "the test's own bar" in bar.reason and bar.quantized_steps is None  # target: hil's
    assert mapping.quantization_bar(call("EthosU85PipelineINT")) is None  # they state none


def test_a_bar_the_test_turns_off_is_waived_and_both_off_is_not_judged() -> None:
    from hil.verdict import tolerances

    no_frobenius = mapping.quantization_bar(call("TosaPipelineINT", frobenius_threshold=None))
    assert no_frobenius is not None and no_frobenius.waived == ("sqnr_db",)
    held = tolerances.quantization("int8", no_frobenius)
    assert held.get("sqnr_db") is None and held.get("cosine") == 0.9
    assert "frobenius_threshold=None" in held.basis
    neither = mapping.quantization_bar(
        call("TosaPipelineINT", frobenius_threshold=None, cosine_threshold=None)
    )
    assert neither is not None and tolerances.quantization("int8", neither).limits == ()


def test_calibration_samples_set_on_their_quantize_stage_reach_the_call() -> None:
    """test_cond_conv1d reaches into the pipeline for both branches of a cond:
    `pipeline._stages[pipeline.find_pos("quantize")].args[0].calibration_samples = samples`
    (a TypeError on hil's stand-in before: 36 checks of the folder's first 88 files). What it
    sets is what hil calibrates on (the runner reads the call's calibration_samples)."""
    from hil.executorch_ops.pipelines import TosaPipelineINT

    pipeline = TosaPipelineINT(torch.nn.ReLU(), (torch.randn(1, 2, 8),), [], tosa_extensions=["cf"])
    samples = [(torch.rand(1, 2, 8),), (-torch.rand(1, 2, 8),)]
    stage = pipeline._stages[pipeline.find_pos("quantize")].args[0]
    stage.calibration_samples = samples
    assert pipeline.call.option("calibration_samples") is samples
    assert stage.calibration_samples is samples


def test_their_transform_passes_go_to_the_arm_recipes_only() -> None:
    """The passes work around what TOSA lacks (int64 indices); the CPU's kernels have it."""
    from executorch.backends.arm._passes import InsertInt32CastsAfterInt64PlaceholdersPass

    given = call("TosaPipelineFP", transform_passes=[InsertInt32CastsAfterInt64PlaceholdersPass()])
    (name,) = mapping.variant_of(given, "tosa-fp").options["transform_passes"]
    assert name.endswith(":InsertInt32CastsAfterInt64PlaceholdersPass")
    assert mapping.variant_of(given, "portable") == mapping.Variant("fp32")
    vgf = call(
        "VgfPipeline",
        quantize=False,
        transform_passes={"forward": [given.options["transform_passes"][0]]},
    )
    assert mapping.variant_of(vgf, "vgf-fp").options["transform_passes"] == [name]
    built_with_arguments = call(
        "TosaPipelineFP",
        transform_passes=[InsertInt32CastsAfterInt64PlaceholdersPass(tfa_pass=True)],
    )
    refused = mapping.variant_of(built_with_arguments, "tosa-fp").unsupported or ""
    assert "InsertInt32CastsAfterInt64PlaceholdersPass: a pass hil cannot make again" in refused


def test_their_tester_gives_the_compile_spec_their_own_quantizer_is_built_from() -> None:
    """test_while builds a quantizer from `pipeline.tester.compile_spec` and sets it as the
    pipeline's: an edit hil's recipe does not make, so it is listed as unapplied (the case is
    then built by their pipeline, or refused naming it)."""
    stand_in = bind("TosaPipelineINT", lambda call: None)(
        torch.nn.ReLU(), (torch.zeros(2),), "torch.ops.aten.relu.default", tosa_extensions=["cf"]
    )
    assert str(stand_in.tester.compile_spec.tosa_spec) == "TOSA-1.0+INT+cf"
    stand_in.quantizer.quantizer = object()
    assert stand_in.call.unapplied == ["quantizer.quantizer = object"]


def test_control_flow_in_tosa_runs_where_the_profile_has_it(repo_devices: DeviceRegistry) -> None:
    """TOSA's cf extension: the U85's profile has it, the U55's does not."""
    loop = call("TosaPipelineINT", tosa_extensions=["cf"])
    u55 = mapping.subset_reason(loop, repo_devices.get("u55-ref"), "u55-ref") or ""
    assert "cf extension, which the Ethos-U55's profile lacks" in u55
    assert mapping.subset_reason(loop, repo_devices.get("u85-ref"), "u85-ref") is None
    assert (
        mapping.subset_reason(call("TosaPipelineINT"), repo_devices.get("u55-ref"), "u55-ref")
        is None
    )
