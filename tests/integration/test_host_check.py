"""End to end on the host target: the real exporter, the real ExecuTorch runtime, real numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import hil
from hil import Case, seeded
from hil.errors import BudgetExceeded, CaseError, ExportError, OutputMismatch, RunRefused
from hil.session import Session
from hil.verdict.checks import Question


def tiny_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 7 * 7, 10)
    )


TINY = Case("tiny_cnn", tiny_cnn, seeded((1, 3, 16, 16)), classifier=True)


class Perturbed(nn.Module):
    """Eager output nudged by 0.05 on one element; the exported program is not."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if not torch.compiler.is_exporting():
            y = y + torch.nn.functional.one_hot(torch.tensor(2), 4) * 0.05
        return y


class DataDependent(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # a Python branch on a value: torch.export cannot trace it
            return x * 2
        return x


@pytest.mark.parametrize("recipe", ["portable", "xnnpack-fp32", "xnnpack-int8"])
def test_tiny_cnn_passes_on_every_host_recipe(session: Session, recipe: str) -> None:
    result = session.check(TINY, "host", recipe)
    assert result.passed, result.failure_message()
    assert result.metrics is not None and result.metrics.top1 == 1.0
    assert result.latency is not None and result.latency.runs >= 5
    assert result.eager_latency is not None
    assert result.arrays_path.exists()
    if recipe == "xnnpack-int8":
        (target,) = result.of(Question.TARGET)
        assert target.reference == "the quantized PyTorch model" and "steps of" in target.basis
        assert target.observed["max_steps"] <= 1.0
        (quantization,) = [c for c in result.of(Question.QUANTIZATION) if c.subject == "output 0"]
        assert quantization.observed["sqnr_db"] >= 25.0
    else:
        assert result.artifact.details.get("delegates", 0) == (0 if recipe == "portable" else 1)


def test_warm_session_exports_nothing_and_moves_no_bytes(
    session: Session,
    repo_devices,
    shared_cache: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    session.check(TINY, "host", "xnnpack-fp32")
    with Session(devices=repo_devices, cache_dir=shared_cache, results_dir=tmp_path) as warm:
        first = warm.check(TINY, "host", "xnnpack-fp32")
        again = warm.check(TINY, "host", "xnnpack-fp32")
    assert not first.artifact.exported_now and not again.artifact.exported_now
    assert again.deploy_bytes == 0


def test_perturbed_output_fails_naming_metric_tolerance_and_array_file(session: Session) -> None:
    result = session.check(Case("perturbed", Perturbed, seeded((2, 8))), "host", "portable")
    assert not result.passed and result.verdict == "MISMATCH"
    with pytest.raises(OutputMismatch) as info:
        result.raise_for_failures()
    message = str(info.value)
    assert "the target's outputs are wrong (is the target right?)" in message
    assert "output 0 vs eager PyTorch: max_abs = 0.05" in message and "limit <=" in message
    assert "fp32: 1e-05 + 0.0001 x peak" in message
    assert str(result.arrays_path) in message
    with np.load(result.arrays_path) as arrays:
        diff = np.abs(arrays["reference0"] - arrays["output0"])
    assert diff[:, 2] == pytest.approx(0.05, abs=1e-6)


def test_unexportable_model_fails_with_the_exporters_message(session: Session) -> None:
    with pytest.raises(ExportError) as info:
        session.check(Case("branchy", DataDependent, seeded((4,))), "host", "portable")
    assert "torch.export failed" in str(info.value)
    assert "branchy" in str(info.value)
    assert session.check(TINY, "host", "portable").passed  # the others still run


def test_a_kernel_that_refuses_its_arguments_is_the_programs_failure_naming_the_operator(
    session: Session,
) -> None:
    """The portable convolution kernel takes 3-D or 4-D inputs; a Conv3d program exports but
    execute() returns InvalidArgument (ExecuTorch's test_conv3d FP rows on host). That is the
    program's failure on this runtime (RunRefused), with the kernel's own check, not a crash."""

    def conv3d() -> nn.Module:
        torch.manual_seed(0)
        return nn.Conv3d(2, 2, 3, bias=False)

    case = Case("conv3d_on_cpu", conv3d, seeded((1, 2, 4, 8, 8)))
    with pytest.raises(RunRefused) as refused:
        session.check(case, "host", "portable")
    assert "refused to run the model in aten::convolution.out" in refused.value.message
    assert "Expect input tensor to be 3-D or 4-D" in refused.value.log_tail


def test_a_model_of_no_inputs_is_exported_run_and_judged(session: Session) -> None:
    """ExecuTorch's test_full_tosa_FP_only passes `()`: a program with no inputs is a program
    (it was refused as a CaseError)."""

    class Full(nn.Module):
        def forward(self) -> torch.Tensor:
            return torch.full((2, 3), 1.5)

    result = session.check(hil.case_from_module("full_no_inputs", Full(), ()), "host", "portable")
    assert result.verdict == "PASS"


def test_truncated_cached_pte_is_rebuilt_and_reported(
    repo_devices,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    cache = tmp_path / "cache"
    with Session(devices=repo_devices, cache_dir=cache, results_dir=tmp_path) as first:
        pte = first.check(TINY, "host", "portable").artifact.pte_path
    pte.write_bytes(pte.read_bytes()[:100])
    with Session(devices=repo_devices, cache_dir=cache, results_dir=tmp_path) as second:
        result = second.check(TINY, "host", "portable")
    assert result.passed
    assert result.artifact.rebuilt_because and "truncated" in result.artifact.rebuilt_because
    assert result.to_record()["artifact"]["rebuilt_because"] == result.artifact.rebuilt_because


def test_latency_budget_breach_fails_with_both_numbers(session: Session) -> None:
    case = Case(
        "tiny_cnn", tiny_cnn, seeded((1, 3, 16, 16)), budget_vs_eager={"host/portable": 1e-3}
    )
    result = session.check(case, "host", "portable")
    assert result.outputs_ok and result.verdict == "OVER BUDGET"
    (budget,) = [c for c in result.checks if c.question is Question.BUDGET]
    assert "best of 3 target windows" in budget.basis  # a breach is timed again, twice
    with pytest.raises(
        BudgetExceeded,
        match=r"latency \(min\) vs eager PyTorch on this machine: vs_eager = .*, limit <= 0.001",
    ):
        result.raise_for_failures()


def test_an_absolute_budget_on_the_host_is_refused_as_a_case_error(session: Session) -> None:
    case = Case("tiny_cnn", tiny_cnn, seeded((1, 3, 16, 16)), budget_ms={"host/portable": 1.0})
    with pytest.raises(CaseError, match="whatever machine runs hil"):
        session.check(case, "host", "portable")


def test_accuracy_drop_is_judged_on_labelled_inputs(session: Session) -> None:
    inputs = seeded((16, 3, 16, 16), seed=3)
    labels = tiny_cnn()(inputs()[0]).argmax(-1)
    case = Case("tiny_acc", tiny_cnn, inputs, labels=lambda: labels, max_accuracy_drop=0.0)
    result = session.check(case, "host", "xnnpack-fp32")
    (accuracy,) = [c for c in result.checks if c.subject == "accuracy"]
    assert accuracy.question is Question.TARGET  # a float program: the target's own accuracy
    assert accuracy.observed["eager_accuracy"] == 1.0 and accuracy.observed["accuracy"] == 1.0
    assert result.passed


def test_library_api_without_pytest_plugin(shared_cache: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HIL_CACHE_DIR", str(shared_cache))
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    result = hil.check(tiny_cnn(), torch.randn(1, 3, 16, 16), target="host", recipe="xnnpack-fp32")
    assert result.passed and result.target == "host" and result.recipe == "xnnpack-fp32"


def test_an_in_process_target_moves_no_bytes_even_on_first_deploy(
    repo_devices,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    with Session(devices=repo_devices, cache_dir=tmp_path / "cold", results_dir=tmp_path) as cold:
        first = cold.check(TINY, "host", "portable")
    assert first.artifact.exported_now and first.artifact.size > 0
    assert first.deploy_bytes == 0  # nothing crossed a link: the runtime is in this process


def test_programs_run_on_the_targets_thread_count_and_torchs_is_restored(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ExecuTorch 1.4.1 runs some portable kernels in torch's thread pool: while the host target
    times a program, torch holds the target's count (1, as eager is timed), not the caller's."""
    import hil.targets.host as host

    seen: list[int] = []
    real = host.timed_runs

    def observed(once, policy):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return real(once, policy)

    monkeypatch.setattr(host, "timed_runs", observed)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        result = session.check(TINY, "host", "portable")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert result.passed, result.failure_message()
    assert seen and set(seen) == {1}
