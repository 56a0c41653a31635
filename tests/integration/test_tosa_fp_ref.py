"""The TOSA floating-point profile without a device (tosa-fp-ref), end to end through
hil.Session: ExecuTorch's real Arm TOSA backend and Arm's real TOSA reference model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from torch import nn

import hil
from hil.case import case_from_module
from hil.devices import DeviceRegistry, RecipeSpec
from hil.errors import DeployError
from hil.session import Session
from hil.verdict.checks import Question, Status
from tests.models import TinyCnn, seeded

TARGET = "tosa-fp-ref"


def tiny() -> hil.Case:
    return hil.Case("tiny_cnn_fp", lambda: seeded(TinyCnn), hil.seeded((1, 3, 8, 8)))  # type: ignore[arg-type]


class Conv(nn.Module):
    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(2, 2, 1).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def test_a_float_model_runs_its_tosa_graph_in_the_reference_model(session: Session) -> None:
    result = session.check(tiny(), TARGET)
    result.raise_for_failures()
    assert result.verdict == "PASS"
    record = result.to_record()
    assert record["partition"]["delegates"] == 1 and record["partition"]["fallbacks"] == []
    assert record["counters"]["delegated_fraction"] == 1.0
    assert "TOSA reference model (delegate_0)" in result.log and "no timing" in result.log
    assert result.latency is None  # no device behind it: nothing to time
    graph = result.artifact.folder / "delegates" / "delegate_0" / "out.tosa"
    assert (
        hashlib.sha256(graph.read_bytes()).hexdigest()
        == result.artifact.details["delegates"][0]["tosa_sha256"]
    )
    assert result.artifact.details["tosa_spec"] == "TOSA-1.0+FP"


def test_a_bfloat16_model_is_lowered_with_the_extension_and_judged_in_bf16(
    session: Session,
) -> None:
    case = case_from_module(
        "conv_bf16",
        Conv(torch.bfloat16),
        (torch.randn(1, 2, 8, 8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16),),
    )
    result = session.check(case, TARGET, RecipeSpec("tosa-fp", {"extensions": ["bf16"]}))
    result.raise_for_failures()
    assert result.artifact.details["tosa_spec"] == "TOSA-1.0+FP+bf16"
    assert result.to_record()["partition"]["delegates"] == 1
    (lowering,) = result.of(Question.LOWERING)  # the stand-in runs the lowered reference
    assert lowering.status is Status.PASS and lowering.basis.startswith("bf16: 4 ulps")


def test_a_model_eager_cannot_run_is_not_judged_and_says_why(session: Session) -> None:
    """torch has no float8 convolution on the CPU; the TOSA graph has one. With no eager
    outputs there is nothing to compare: NOT JUDGED, naming eager's own refusal."""
    x = torch.rand(1, 2, 8, 8, generator=torch.Generator().manual_seed(2)).to(torch.float8_e4m3fn)
    case = case_from_module("conv_fp8", Conv(torch.float8_e4m3fn), (x,))
    result = session.check(case, TARGET, RecipeSpec("tosa-fp", {"extensions": ["fp8e4m3"]}))
    assert result.verdict == "NOT JUDGED"
    (lowering,) = result.of(Question.LOWERING)
    assert lowering.status is Status.NOT_JUDGED
    assert "eager PyTorch cannot run the model" in lowering.cause and "Float8" in lowering.cause
    # the device against its program needs no eager: answered (by construction on a stand-in)
    assert all(c.judged and not c.failed for c in result.of(Question.DEVICE))


def test_a_damaged_tosa_graph_is_refused_before_it_runs(
    repo_devices: DeviceRegistry, tmp_path: Path
) -> None:
    with Session(devices=repo_devices, cache_dir=tmp_path / "cache") as first:
        result = first.check(tiny(), TARGET)
    graph = result.artifact.folder / "delegates" / "delegate_0" / "out.tosa"
    graph.write_bytes(graph.read_bytes()[:64])
    with (
        Session(devices=repo_devices, cache_dir=tmp_path / "cache") as again,
        pytest.raises(DeployError, match="sha256"),
    ):
        again.check(tiny(), TARGET)


def test_an_artifact_of_another_recipe_is_refused(session: Session) -> None:
    artifact = session.export(tiny(), "host", "portable")
    target = session.target(TARGET)
    with pytest.raises(DeployError, match="not lowered through ExecuTorch's Arm TOSA backend"):
        target.deploy(artifact)


class Gather(nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


INT32_CASTS = (
    "executorch.backends.arm._passes.insert_int32_casts_after_int64_placeholders:"
    "InsertInt32CastsAfterInt64PlaceholdersPass"
)


def test_a_test_s_transform_passes_are_run_before_partitioning(session: Session) -> None:
    """TOSA has no int64: ExecuTorch's gather test casts its int64 index to int32 with a pass
    of its own, without which the gather stays on the CPU."""
    generator = torch.Generator().manual_seed(3)
    inputs = (
        torch.randn(3, 5, generator=generator),
        torch.randint(0, 5, (3, 2), generator=generator),
    )
    case = case_from_module("gather_int64_index", Gather(), inputs)
    plain = session.check(case, TARGET)
    assert plain.to_record()["partition"]["delegates"] == 0
    cast = session.check(case, TARGET, RecipeSpec("tosa-fp", {"transform_passes": [INT32_CASTS]}))
    cast.raise_for_failures()
    assert cast.verdict == "PASS"
    assert cast.to_record()["partition"]["delegates"] == 1
    assert cast.artifact.key != plain.artifact.key
