"""Ethos-U55/U85 and Cortex-M55 without silicon, end to end through hil.Session.

Real Vela, the real TOSA reference model and ExecuTorch's real cortex_m reference operators;
tiny models so the whole module runs in a couple of minutes.
"""

from __future__ import annotations

import hashlib
import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch
from torch import nn

import hil
from hil.devices import DeviceRegistry
from hil.errors import (
    DeployError,
    ExportError,
    MissingKernel,
    OutputMismatch,
    PartitionMismatch,
    RunRefused,
)
from hil.session import Session
from hil.verdict.checks import Question
from tests.models import TinyCnn, seeded

NPU_TARGETS = ("u55-ref", "u85-ref")


def tiny(name: str = "tiny_cnn", **options: object) -> hil.Case:
    return hil.Case(name, lambda: seeded(TinyCnn), hil.seeded((1, 3, 8, 8)), **options)  # type: ignore[arg-type]


class Lrn(nn.Module):
    """Local response norm: ExecuTorch 1.5.1 decomposes it and keeps its avg_pool3d on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LocalResponseNorm(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


NO_AVG_POOL3D = {
    "avg_pool3d": "ExecuTorch 1.5.1 has no avg_pool3d.out CPU kernel (the test's point)"
}


def lrn(**options: object) -> hil.Case:
    options.setdefault("missing_kernels", NO_AVG_POOL3D)
    return hil.Case("tiny_lrn", Lrn, hil.seeded((1, 8, 8, 8)), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("target", NPU_TARGETS)
def test_tiny_model_runs_on_the_npu_stand_in(session: Session, target: str) -> None:
    result = session.check(tiny(fully_delegated=True), target)
    result.raise_for_failures()
    record = result.to_record()
    counters = record["counters"]
    assert counters["npu_cycles"] > 0 and counters["total_cycles"] >= counters["npu_cycles"]
    assert counters["sram_bytes"] > 0 and counters["flash_bytes"] > 0
    assert 0 < counters["mac_utilization"] <= 1
    assert counters["macs"] == 8 * 64 * 27 + 10 * 512  # conv + linear
    assert record["latency"]["timing"] == "estimated"
    assert record["latency"]["median_us"] == pytest.approx(counters["est_time_us"])
    assert record["partition"]["delegates"] == 1 and record["partition"]["fallbacks"] == []
    assert record["quantized_agreement"]["statement"] in ("bit-exact", "within 1 step")
    assert "TOSA reference model (delegate_0)" in result.log
    folder = result.artifact.folder
    assert (folder / "delegates" / "delegate_0" / "out.tosa").is_file()
    assert list((folder / "delegates" / "delegate_0" / "output").glob("*_summary_*.csv"))
    assert (folder / "host_program.pt2").is_file()


def test_u55_and_u85_share_the_quantized_model(session: Session) -> None:
    for target in NPU_TARGETS:
        session.check(tiny(), target)
    entries = [p for p in (session.cache.root / "shared" / "quantized").iterdir() if p.is_dir()]
    keys = {session.check(tiny(), t).artifact.details["quantized_model"] for t in NPU_TARGETS}
    assert len(keys) == 1
    (key,) = keys
    assert any(e.name.startswith(key) for e in entries)


def test_warm_run_exports_nothing_yet_executes_the_tosa_graph(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as cold:
        first = cold.check(tiny(), "u55-ref")
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as warm:
        again = warm.check(tiny(), "u55-ref")
        assert first.artifact.exported_now and not again.artifact.exported_now
        assert again.passed and "delegate_0" in again.log
        # Inputs the export never saw: only a live run of the TOSA graph can answer them.
        target = warm.target("u55-ref")
        fresh = (torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(7)),)
        run = target.run(
            target.deploy(again.artifact), fresh, repo_devices.get("u55-ref").latency.policy
        )
        store = tmp_path / "cache" / "shared" / "quantized"
        key = again.artifact.details["quantized_model"]
        entry = next(p for p in store.iterdir() if p.name.startswith(key))
        quantized = torch.export.load(entry / "program.pt2").module()
        expected = quantized(*fresh).detach().numpy()
        step = again.artifact.output_scales[0]
        assert step is not None
        assert abs(run.outputs[0] - expected).max() <= step * 1.001
        assert abs(run.outputs[0] - again.artifact.quantized_reference()[0]).max() > step
    # A damaged side file is caught before the reference model sees it.
    tosa = again.artifact.folder / "delegates" / "delegate_0" / "out.tosa"
    tosa.write_bytes(tosa.read_bytes()[:64])
    with (
        Session(devices=repo_devices, cache_dir=tmp_path / "cache") as damaged,
        pytest.raises(DeployError, match="sha256"),
    ):
        damaged.check(tiny(), "u55-ref")


def test_the_pte_is_the_one_a_plain_export_makes(session: Session) -> None:
    """Dumping TOSA and re-running Vela for the side files leaves the .pte untouched."""
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    result = session.check(tiny(), "u55-ref")
    key = result.artifact.details["quantized_model"]
    store = session.cache.root / "shared" / "quantized"
    entry = next(p for p in store.iterdir() if p.name.startswith(key))
    program = torch.export.load(entry / "program.pt2")
    spec = EthosUCompileSpec(
        "ethos-u55-128", system_config="Ethos_U55_High_End_Embedded", memory_mode="Shared_Sram"
    )
    spec._get_pass_pipeline_config()  # as sharing the spec with the quantizer does
    with redirect_stdout(io.StringIO()):
        edge = to_edge_transform_and_lower(program, partitioner=[EthosUPartitioner(spec)])
    plain = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False)).buffer
    assert hashlib.sha256(plain).hexdigest() == result.artifact.sha256


@pytest.mark.parametrize("target", NPU_TARGETS)
def test_cpu_fallback_runs_end_to_end_and_is_reported(session: Session, target: str) -> None:
    result = session.check(lrn(expected_fallback=frozenset({"avg_pool3d"})), target)
    result.raise_for_failures()
    partition = result.to_record()["partition"]
    assert [f["op"] for f in partition["fallbacks"]] == ["aten.avg_pool3d.default"]
    assert partition["fallbacks"][0]["reason"]  # the partitioner's words
    assert partition["delegates"] == 2  # the CPU operator splits the NPU graph in two
    # ...and ExecuTorch 1.5.1 has no CPU kernel for it: a device build would need one.
    assert partition["missing_kernels"] == ["aten::avg_pool3d.out"]
    assert "delegate_0, delegate_1" in result.log


def test_a_cpu_operator_without_a_device_kernel_fails_unless_expected(session: Session) -> None:
    """The stand-in runs the CPU part on PyTorch's kernels; the device's runtime would refuse
    the program, so the case fails unless it states that it expects the gap, with the reason."""
    result = session.check(
        lrn(expected_fallback=frozenset({"avg_pool3d"}), missing_kernels={}), "u85-ref"
    )
    assert result.verdict == "MISSING KERNEL" and result.outputs_ok
    with pytest.raises(MissingKernel, match=r"no kernel for aten::avg_pool3d.out"):
        result.raise_for_failures()
    expected = session.check(lrn(expected_fallback=frozenset({"avg_pool3d"})), "u85-ref")
    (kernels,) = expected.of(Question.KERNELS)
    assert expected.passed and "expected by the case: aten::avg_pool3d.out" in kernels.basis


def test_an_unexpected_fallback_fails_the_partition_verdict(session: Session) -> None:
    result = session.check(lrn(fully_delegated=True), "u85-ref")
    assert result.verdict == "PARTITION" and result.outputs_ok
    with pytest.raises(PartitionMismatch, match="avg_pool3d"):
        result.raise_for_failures()


def test_budgets_on_cycles_memory_and_estimated_time(session: Session) -> None:
    case = tiny(
        budget_ms={"u55-ref": 1e-6},
        counter_budgets={"npu_cycles": {"u55-ref": 10}, "flash_bytes": {"*": 1e9}},
    )
    result = session.check(case, "u55-ref")
    assert result.verdict == "OVER BUDGET"
    whats = [c.subject for c in result.failed_checks]
    assert "npu_cycles" in whats and "latency (median)" in whats
    assert "flash_bytes" not in whats


class BigMatmul(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def test_a_model_vela_rejects_fails_with_its_words_and_keeps_the_dump(session: Session) -> None:
    # Ethos-U55 cannot transpose a 65537-long inner dimension; Vela says so, Ethos-U85 can.
    case = hil.Case("k65537_matmul", BigMatmul, hil.seeded((1, 8, 65537), (1, 65537, 8)))
    with pytest.raises(ExportError) as caught:
        session.check(case, "u55-ref")
    message = str(caught.value)
    assert "Vela rejected the model for ethos-u55-128" in message
    assert "could not run on NPU" in message  # Vela's own words
    kept = Path(message.split("kept in ")[1].split()[0])
    assert list(kept.glob("tosa-dump/*.tosa")) and (kept / "vela.log").is_file()
    # the other cases still run
    assert session.check(tiny(), "u55-ref").passed


class Int32Add(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def test_an_unpredictable_tosa_result_is_the_programs_refusal_with_the_status(
    session: Session,
) -> None:
    """int32 addition that overflows: PyTorch wraps around, TOSA calls the result
    unpredictable. The program is outside its domain on these inputs (RunRefused, a test
    failure, which a test may expect), not a crash of the target."""

    def inputs() -> tuple[torch.Tensor, ...]:
        a = torch.tensor([[1, 2, 3, 2**31 - 1]], dtype=torch.int32)
        return a, torch.ones(1, 4, dtype=torch.int32)

    with pytest.raises(RunRefused) as caught:
        session.check(hil.Case("int32_overflow", Int32Add, inputs), "u85-ref")
    assert "TOSA_UNPREDICTABLE" in str(caught.value)
    assert "overflow" in str(caught.value)


def test_cortex_m55_reference_ops(session: Session) -> None:
    result = session.check(tiny(fully_delegated=True), "cortex-m55-ref")
    result.raise_for_failures()
    record = result.to_record()
    kernels = record["partition"]["accelerated"]
    assert kernels.get("cortex_m.quantized_conv2d.default") == 1
    assert kernels.get("cortex_m.quantized_linear.default") == 1
    assert record["quantized_agreement"]["statement"] in ("bit-exact", "within 1 step")
    assert record["counters"]["cmsis_nn_fraction"] == 1.0
    assert result.latency is None  # nothing is timed on this stand-in


def test_a_delegate_without_its_dump_is_lowered_again_and_proven(tmp_path: Path) -> None:
    """The fallback when ExecuTorch's TOSA dump of a delegate is missing or overwritten."""
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from hil.recipes.arm_partition import lowered_modules
    from hil.recipes.delegate_files import TOSA_FILE, keep_delegate

    model, inputs = tiny().model(), tiny().inputs()
    spec = EthosUCompileSpec("ethos-u85-256")
    quantizer = EthosUQuantizer(spec)
    quantizer.set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(
        torch.export.export(model, inputs).module(check_guards=False), quantizer
    )
    prepared(*inputs)
    program = torch.export.export(convert_pt2e(prepared), inputs)
    with redirect_stdout(io.StringIO()):
        edge = to_edge_transform_and_lower(program, partitioner=[EthosUPartitioner(spec)])
    (module,) = lowered_modules(edge.exported_program())
    empty = tmp_path / "no-dump"
    empty.mkdir()
    summary = keep_delegate("tiny", module, empty, tmp_path / "delegate_0", spec, set())
    assert summary.npu_cycles > 0
    assert (tmp_path / "delegate_0" / TOSA_FILE).stat().st_size > 0


class Branches(nn.Module):
    """torch.cond with a convolution in each branch. The U55 (no TOSA cf extension) keeps the
    cond on the CPU and delegates inside each branch; the U85 takes the cond whole."""

    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Conv2d(4, 4, 1)
        self.right = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda t: self.left(t) + t, lambda t: self.right(t), [x])


def test_delegates_inside_control_flow_branches_run_on_the_u55_stand_in(
    session: Session,
) -> None:
    case = hil.Case("tiny_cond", lambda: seeded(Branches), hil.seeded((1, 4, 4, 4)))
    result = session.check(case, "u55-ref")
    result.raise_for_failures()
    assert result.to_record()["partition"]["delegates"] >= 2  # one a branch
    assert "TOSA reference model (delegate_" in result.log  # the taken branch's, only


class NestedBranches(nn.Module):
    """A cond inside a cond's branch: torch.export's default capture of the quantized model
    leaves a tensor constant in the inner branch that it cannot save (ExecuTorch 1.5.1's
    test_nested_cond_conv1d_tosa_INT)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Conv1d(2, 4, 3, padding=1)
        self.outer = nn.Conv1d(2, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def inner(t: torch.Tensor) -> torch.Tensor:
            return torch.cond(t.mean() > 0.5, self.inner, lambda u: self.inner(u) * 2, [t])

        return torch.cond(x.sum() > 0, inner, self.outer, [x])


def test_a_quantized_program_the_default_capture_cannot_save_is_captured_strictly(
    session: Session,
) -> None:
    case = hil.Case(
        "tiny_nested_cond", lambda: seeded(NestedBranches), lambda: (torch.ones(1, 2, 8),)
    )
    result = session.check(case, "u85-ref")
    result.raise_for_failures()
    assert result.verdict == "PASS"


class ReadsPastItsInput(nn.Module):
    """as_strided past the input's own elements: eager reads the larger storage it was given,
    a program's CPU operator refuses (ExecuTorch's test_as_strided_copy, non_zero_offset)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.as_strided(x, (4, 4), (4, 1), 4) * 2


def test_a_cpu_operator_refusing_its_arguments_is_the_programs_refusal(
    session: Session,
) -> None:
    storage = torch.rand(20)
    case = hil.Case("reads_past", ReadsPastItsInput, lambda: (storage[:16].view(4, 4),))
    with pytest.raises(RunRefused, match="CPU refused its arguments"):
        session.check(case, "tosa-fp-ref").raise_for_failures()


class VarianceOfAll(nn.Module):
    """var over every dimension: a 0-d result, which ExecuTorch 1.5.1's Arm lowering declares
    as shape [1] in the .pte (test_var's no_dim rows)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.var()


def test_an_output_shape_not_the_models_fails_and_says_why_origins_are_missing(
    session: Session,
) -> None:
    case = hil.Case("tiny_var_all", VarianceOfAll, hil.seeded((1, 4, 4)))
    with pytest.raises(OutputMismatch) as caught:
        session.check(case, "u85-ref").raise_for_failures()
    text = str(caught.value)
    assert "output 0 has shape (1,), eager PyTorch ()" in text
    # its TOSA debug mode cannot lower the model: the fix must not be "re-export"
    assert "exporting again gives the same" in text
