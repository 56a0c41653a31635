"""The virtual board end to end: the host build of the firmware runner on a pty, real serial
framing, the real ExecuTorch engine, driven through hil.Session like any board."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.sdk import firmware
from hil.session import Session
from hil.targets.serial import SerialTarget
from hil.verdict.result import CheckResult

REPO = Path(__file__).resolve().parents[2]


def tiny_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 7 * 7, 10)
    )


TINY = Case("tiny_cnn", tiny_cnn, seeded((1, 3, 16, 16)), classifier=True)


class Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0 + 1.0


class Lookup(nn.Module):
    """Two inputs, one of them int64: each input is typed and placed by its own index."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = nn.Embedding(10, 4)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids) * x


def outputs(result: CheckResult) -> list[np.ndarray]:
    with np.load(result.arrays_path) as arrays:
        return [arrays[k] for k in sorted(arrays.files) if k.startswith("output")]


@pytest.mark.parametrize("recipe", ["portable", "xnnpack-fp32", "xnnpack-int8"])
def test_vboard_gives_the_same_outputs_as_host(session: Session, recipe: str) -> None:
    board = session.check(TINY, "vboard", recipe)
    host = session.check(TINY, "host", recipe)
    assert board.passed, board.failure_message()
    for ours, theirs in zip(outputs(board), outputs(host), strict=True):
        assert np.array_equal(ours, theirs)  # same .pte, same kernels: bit-exact
    policy = session.devices.get("vboard").latency.policy
    assert board.latency is not None and board.latency.timing == "measured"
    assert policy.min_runs <= board.latency.runs <= policy.max_runs
    assert board.counters["planned_pool_peak_bytes"] > 0
    assert board.counters["model_pool_peak_bytes"] == board.artifact.size


def test_an_unchanged_model_is_not_sent_again(session: Session) -> None:
    first = session.check(TINY, "vboard", "portable")
    again = session.check(TINY, "vboard", "portable")
    other = session.check(TINY, "vboard", "xnnpack-fp32")
    back = session.check(TINY, "vboard", "portable")
    assert first.deploy_bytes in (0, first.artifact.size)  # 0 if an earlier test loaded it
    assert again.deploy_bytes == 0
    assert other.deploy_bytes == other.artifact.size
    assert back.deploy_bytes == back.artifact.size  # the runner holds one model at a time


def test_tensors_larger_than_a_frame_cross_in_pieces(session: Session) -> None:
    case = Case("scale_big", Scale, seeded((1, 3, 360, 360)))  # 1.5 MB in, 1.5 MB out
    result = session.check(case, "vboard", "portable")
    assert result.passed, result.failure_message()
    assert outputs(result)[0].shape == (1, 3, 360, 360)


def test_several_inputs_of_several_dtypes(session: Session) -> None:
    case = Case(
        "lookup", Lookup, lambda: (torch.rand(3, 4), torch.tensor([1, 7, 3], dtype=torch.int64))
    )
    result = session.check(case, "vboard", "portable")
    assert result.passed, result.failure_message()


def test_the_runner_reports_the_build_made_for_its_configuration(session: Session) -> None:
    target = session.target("vboard")
    assert isinstance(target, SerialTarget)
    facts = target.describe()
    assert facts["build_id"] == firmware.build_id_for(firmware.FirmwareConfig("host"))
    assert facts["engine"] == "executorch" and facts["executorch"].startswith("1.5.1")


def test_a_memory_budget_fails_a_case_by_the_runners_measured_peak(
    tmp_path: Path, shared_cache: Path
) -> None:
    """memory.ram_max_bytes is judged against the pools' high-water marks the runner
    reported (method + planned + temp + io), as on a Cortex-M board's device file."""
    devices = tmp_path / "devices"
    devices.mkdir()
    text = (REPO / "devices" / "vboard.yaml").read_text()
    (devices / "vboard.yaml").write_text(text.replace("memory: {}", "memory: {ram_max_bytes: 64}"))
    with Session(
        devices=DeviceRegistry.from_dirs([devices]),
        cache_dir=shared_cache,
        results_dir=tmp_path / "results",
    ) as small:
        result = small.check(TINY, "vboard", "portable")
    (memory,) = [c for c in result.checks if c.subject == "ram_peak_bytes"]
    assert memory.failed and result.verdict == "OVER BUDGET", result.failure_message()
    peak = result.counters["ram_peak_bytes"]
    assert peak > 64 and peak == sum(
        result.counters[f"{pool}_pool_peak_bytes"] for pool in ("method", "planned", "temp", "io")
    )
    assert "memory.ram_max_bytes of vboard.yaml" in memory.basis


def test_a_kernel_list_refuses_a_program_before_any_byte_is_sent(
    session: Session, tmp_path: Path
) -> None:
    """A board whose SDK lists its kernels (kernels.json) is judged by that list: a program
    calling an operator outside it is MISSING KERNEL before deploy, and the runner is fine.
    The list here is written by hand onto the virtual board's driver; hil sets it from the
    SDK for qemu-m55, FVPs and boards (tests/integration/test_sdk_build.py)."""
    from hil.errors import MissingKernel
    from hil.runner.kernels import KernelList

    scale = Case("sdk_listed_scale", Scale, seeded((1, 8)))
    target = session.target("vboard")
    assert isinstance(target, SerialTarget)
    target.driver.kernels = KernelList(
        frozenset({"aten::mul.out"}),
        frozenset({"aten::add.out"}),
        "hil sdk build --executorch /et --board qemu-m55",
        tmp_path / "kernels.json",
    )
    try:
        with pytest.raises(MissingKernel) as caught:
            session.check(scale, "vboard", "portable")
        assert caught.value.operator == "aten::add.out"
        assert "not selected when the SDK was built" in caught.value.message
        assert "--ops-from suites" in (caught.value.fix or "")
        artifact = session.export(scale, "vboard", "portable")
        assert not target.driver.holds(artifact.sha256)  # refused before the load
    finally:
        target.driver.kernels = None
    assert session.check(scale, "vboard", "portable").passed  # the runner is fine afterwards
