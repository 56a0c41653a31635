"""The device explains itself: a runner whose `aten::add.out` kernel is wrong on purpose (a
test build, HIL_PLANTED_FAULT) is named as the first divergent operator from that runner's own
ETDump, while the same program re-run on this machine's runtime is correct. Real runner, real
pty, real ExecuTorch devtools; only the fault is planted."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.errors import ProtocolError, TraceUnavailable
from hil.explain.cpu import explain_program
from hil.recipes import make_recipe
from hil.runner import messages as m
from hil.session import Session
from hil.verdict.checks import Question

REPO = Path(__file__).resolve().parents[2]
PLANTED = "aten::add.out"


class Residual(nn.Module):
    """A linear layer and a residual add (the planted kernel), whose output is the model's."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + x


CASE = Case("residual_add", Residual, seeded((2, 8)))


PI5_EMU_TOOLS = (
    os.path.exists("/usr/sbin/sshd")
    and shutil.which("qemu-aarch64")
    and shutil.which("aarch64-linux-gnu-g++")
    and os.geteuid() == 0
)
BOARDS = [
    pytest.param(("vboard", "host"), id="vboard"),
    pytest.param(
        ("pi5-emu", "linux-aarch64"),
        id="pi5-emu",
        marks=pytest.mark.skipif(
            not PI5_EMU_TOOLS,
            reason="needs root, openssh-server, qemu-user and g++-aarch64-linux-gnu (make test "
            "installs them)",
        ),
    ),
]


@pytest.fixture(params=BOARDS)
def planted(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    shared_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Session, str]]:
    """A board (vboard, pi5-emu) whose runner is built with one kernel wrong on purpose."""
    board, preset = request.param
    monkeypatch.setenv("HIL_EMU_DIR", str(tmp_path / "emu"))
    spec = yaml.safe_load((REPO / "devices" / f"{board}.yaml").read_text())
    name = spec["name"] = f"{board}-planted"
    spec["connection"]["firmware"] = {"preset": preset, "defines": {"HIL_PLANTED_FAULT": PLANTED}}
    folder = tmp_path / "devices"
    folder.mkdir()
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    registry = DeviceRegistry.from_dirs([REPO / "devices", folder])
    with Session(
        devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "results"
    ) as session:
        yield session, name


def test_a_wrong_device_kernel_is_named_from_the_devices_own_etdump(
    planted: tuple[Session, str], tmp_path: Path
) -> None:
    session, board = planted
    result = session.check(CASE, board, "portable")
    # the same program on this machine's runtime is right: the device, not the program
    assert result.verdict == "DEVICE MISMATCH", result.checks
    assert all(c.judged and not c.failed for c in result.of(Question.LOWERING))
    assert result.altered == (  # a planted runner's run is never certified
        f"the runner was built with a kernel wrong on purpose (HIL_PLANTED_FAULT={PLANTED})",
    )
    divergence = result.divergence
    assert divergence is not None and divergence.first is not None, result.explained
    assert divergence.first.operator == PLANTED
    assert "from the device's runtime" in divergence.message()
    # the same program on this machine's runtime: every operator within its limit
    again = explain_program(
        CASE.build(), result.artifact, make_recipe("portable"), tmp_path / "host-rerun"
    )
    assert again is not None and again.first is None


def test_the_judged_runs_have_no_recorder_attached(planted: tuple[Session, str]) -> None:
    """After an explaining run the runner holds the model without the recorder, as the
    judged runs had it: nothing recorded is left to read."""
    session, board = planted
    session.check(CASE, board, "portable")
    target = session.target(board)
    client = target.client  # type: ignore[attr-defined]
    assert client.info.trace
    with pytest.raises(ProtocolError, match="no trace"):
        client.get_trace(m.TRACE_ETDUMP)  # the explaining run's recorder is gone


def test_a_runner_without_etdump_says_so_and_the_host_rerun_stands_in(
    planted: tuple[Session, str], tmp_path: Path
) -> None:
    session, board = planted
    result = session.check(CASE, board, "portable")
    target = session.target(board)
    client = target.client  # type: ignore[attr-defined]
    client.info = client.info.__class__(**{**client.info.__dict__, "trace": False})
    with pytest.raises(TraceUnavailable, match="records no ETDump"):
        client.trace(True, 1024)
    found = explain_program(
        CASE.build(),
        result.artifact,
        make_recipe("portable"),
        tmp_path / "fallback",
        target=board,
        device=lambda size: target.trace(target.deploy(result.artifact), CASE.build().inputs, size),
    )
    assert found is not None and found.first is None  # the host's runtime: correct
    assert f"not {board}'s" in found.message() and "records no ETDump" in found.message()


def test_each_check_on_a_runner_target_has_its_operators_timed_by_the_device(
    tmp_path: Path, shared_cache: Path
) -> None:
    """vboard's runner records a profile in runs apart from the judged ones: every
    instruction timed in the runner's clock, named from the program, layout work marked."""
    with Session(cache_dir=shared_cache, results_dir=tmp_path / "results") as session:
        result = session.check(CASE, "vboard", "portable")
    assert result.verdict == "PASS"
    profile = result.profile
    assert profile is not None, result.profiled
    assert profile.unit == "ns" and profile.runs == 5 and profile.total > 0
    names = [o.operator for o in profile.operators]
    assert sorted(names) == sorted(["aten::permute_copy.out", "aten::addmm.out", "aten::add.out"])
    assert [o.layout for o in profile.operators if o.operator.startswith("aten::permute")] == [True]
    assert 0.5 < profile.covered <= 1.0  # the instructions within the whole inference
    line = result.to_record()["profile_line"]
    assert "an inference (median of 5, the device's ETDump)" in line and "layout copies" in line
