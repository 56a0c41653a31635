"""FvpTarget end to end with the fake FVP (tests/fakes/fvp, CONTRACT.md says what it honours):
a real Ethos-U export, the real bare-metal runner ELF (echo engine: no ExecuTorch for Cortex-M
here) in QEMU mps3-an547 behind the fake's raw telnet terminal, the real runner protocol, and
the fake's PMU stand-in (Vela's estimate sent as the runner's PMU report lines).

Each failure class is produced by what causes it on a real FVP: a hard fault in the runner, a
runner that hangs until the FVP's --timelimit, a runner that goes silent, a licence refusal,
an FVP parameter the model lacks, an over-long semihosting command line.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from fakes.fvp import ARTIFACTS_ENV, LICENCE_ENV, install
from fvp_devices import device

import hil
from hil.devices import DeviceRegistry
from hil.errors import (
    DeviceSpecError,
    InfrastructureError,
    LinkTimeout,
    TargetCrash,
    TargetUnavailable,
)
from hil.fvp.errors import FvpLicenceError, FvpStartError, FvpTimeLimit
from hil.runner import messages as m
from hil.sdk import firmware
from hil.session import Session
from hil.targets.fvp import FvpTarget
from hil.verdict.checks import Question, Status

MISSING = [tool for tool in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"{', '.join(MISSING)} not installed (the fake FVP runs the runner in QEMU); fix: "
    "apt-get install qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi",
)


def non_negative() -> tuple[torch.Tensor, ...]:
    return (torch.rand(1, 8, 8, 8, generator=torch.Generator().manual_seed(0)),)


def conv() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU())


# The echo runner's outputs are its inputs, never a model verdict: every output check of these
# cases is NOT JUDGED with that cause, while the FVP path around it (deploy, PMU counters,
# budgets, failure classes) is judged for real.
IDENTITY = hil.Case(
    "relu_non_negative",
    torch.nn.ReLU,
    non_negative,
    counter_budgets={"npu_cycles": {"*": 1_000_000}},
)
CONV = hil.Case("conv_relu", conv, non_negative)


def only_outputs_unjudged(result: hil.CheckResult) -> bool:
    """Echo engine: the device's outputs are not judged as the model's; everything else was
    judged, the lowering too (its TOSA graphs in the reference model, apart from the FVP)."""
    unjudged = [c.question for c in result.unjudged]
    cause = result.unjudged[0].cause if result.unjudged else ""
    lowering = result.of(Question.LOWERING)
    return (
        result.verdict == "NOT JUDGED"
        and unjudged == [Question.DEVICE]
        and "echo engine" in cause
        and bool(lowering)
        and all(c.judged for c in lowering)
        and not result.failed_checks
    )


@pytest.fixture
def fake_fvp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache: Path) -> Path:
    """The fake FVP first on PATH; its PMU stand-in reads Vela estimates from the test cache."""
    folder = install(tmp_path / "fvp-bin")
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    monkeypatch.setenv(ARTIFACTS_ENV, str(shared_cache))
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("HIL_FVP_DIR", raising=False)
    return folder


Opener = Callable[..., Session]


@pytest.fixture
def open_session(fake_fvp: Path, shared_cache: Path, tmp_path: Path) -> Iterator[Opener]:
    """open_session(name, npu=..., **connection): write the device file, open a Session on it."""
    with contextlib.ExitStack() as stack:

        def open_(name: str, npu: str = "ethos-u55-128", **connection: Any) -> Session:
            folder = tmp_path / "devices"
            folder.mkdir(exist_ok=True)
            device(folder, name, npu, **connection)  # debug_commands=True: a test build
            registry = DeviceRegistry.from_dirs([folder])
            return stack.enter_context(
                Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "results")
            )

        yield open_


def fvp_target(session: Session, name: str) -> FvpTarget:
    target = session.target(name)
    assert isinstance(target, FvpTarget)
    return target


def test_export_to_parsed_cycles_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo")
    target = fvp_target(session, "fvp-u55-echo")
    assert target.fvp is not None
    pid = target.fvp.pid

    first = session.check(IDENTITY, "fvp-u55-echo")
    vela = first.artifact.details["vela"]["npu_cycles"]
    assert only_outputs_unjudged(first), first.checks
    assert first.counters["vela_npu_cycles"] == vela > 0
    assert first.counters["npu_cycles"] == vela  # the fake's PMU stand-in reports Vela's count
    assert first.counters["npu_invocations"] == 1
    assert first.counters["cpu_cycles"] > 0  # the runner's SysTick, per execution
    assert first.counters["model_pool_peak_bytes"] == first.artifact.size
    assert first.latency is not None and first.latency.timing == "emulated"
    assert first.target_info["fvp_version"] == "0.0.0 (hil fake FVP)"
    assert first.target_info["num_macs"] == "128"

    again = session.check(IDENTITY, "fvp-u55-echo")
    assert again.deploy_bytes == 0  # the runner still holds the model

    other = session.check(CONV, "fvp-u55-echo")
    assert only_outputs_unjudged(other)  # its inputs back: wrong for a conv, but no verdict
    assert other.counters["npu_cycles"] == other.artifact.details["vela"]["npu_cycles"]
    assert target.fvp is not None and target.fvp.pid == pid  # one FVP for every case
    log = target.fvp.log_path.read_text()
    assert "[hil info] runner ready: engine echo" in log  # semihosting console, through QEMU
    assert "-C ethosu.num_macs=128" in log  # the command line heads the log


def test_corstone_320_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u85-echo", npu="ethos-u85-256")
    result = session.check(IDENTITY, "fvp-u85-echo")
    assert only_outputs_unjudged(result), result.checks
    assert result.counters["npu_cycles"] == result.artifact.details["vela"]["npu_cycles"]
    target = fvp_target(session, "fvp-u85-echo")
    assert target.fvp is not None
    assert "mps4_board.subsystem.ethosu.num_macs=256" in target.fvp.command.argv
    assert target.describe()["runner_platform"] == "cortex-m85/corstone-320"


def test_npu_cycle_budget_is_judged_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo")
    tight = hil.Case(
        "relu_non_negative",
        torch.nn.ReLU,
        non_negative,
        counter_budgets={"npu_cycles": {"fvp-u55-echo": 10}},
    )
    result = session.check(tight, "fvp-u55-echo")
    assert result.verdict == "OVER BUDGET"
    assert [c.subject for c in result.failed_checks] == ["npu_cycles"]


def test_fast_mode_cycles_are_kept_apart_and_not_judged_with_fake_fvp(
    open_session: Opener,
) -> None:
    session = open_session("fvp-u55-echo", mode="fast")
    tight = hil.Case(
        "relu_non_negative", torch.nn.ReLU, non_negative, counter_budgets={"npu_cycles": {"*": 10}}
    )
    result = session.check(tight, "fvp-u55-echo")
    assert "npu_cycles" not in result.counters and result.counters["npu_cycles_fast"] > 0
    # Arm's --fast NPU model: its cycle counts are kept apart, so the npu_cycles budget has
    # nothing to judge (NOT JUDGED, never met)
    budget = next(c for c in result.checks if c.subject == "npu_cycles")
    assert budget.status is Status.NOT_JUDGED and not result.failed_checks
    target = fvp_target(session, "fvp-u55-echo")
    assert target.fvp is not None
    assert "ethosu.extra_args=--fast" in target.fvp.command.argv


def test_fvp_is_replaced_before_its_time_limit_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo", time_limit_s=600)
    assert only_outputs_unjudged(session.check(IDENTITY, "fvp-u55-echo"))
    target = fvp_target(session, "fvp-u55-echo")
    assert target.fvp is not None
    old = target.fvp.pid
    target._started -= 0.8 * 600  # as if the FVP had used most of its --timelimit
    assert only_outputs_unjudged(session.check(IDENTITY, "fvp-u55-echo"))
    assert target.fvp is not None and target.fvp.pid != old  # a fresh FVP, no error


def test_hard_fault_is_a_target_crash_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo", debug_commands=True)
    target = fvp_target(session, "fvp-u55-echo")
    assert target.fvp is not None
    crashed_pid = target.fvp.pid
    assert only_outputs_unjudged(session.check(IDENTITY, "fvp-u55-echo"))  # the runner holds it now
    target.client.debug(m.DEBUG_FAULT, during_next_run=True)  # (a model load would disarm it)
    with pytest.raises(TargetCrash) as caught:
        session.check(IDENTITY, "fvp-u55-echo")
    assert "cortex-m fault" in caught.value.message and "pc=0x" in caught.value.message
    assert "FVP log: " in str(caught.value)
    assert session.broken_cause("fvp-u55-echo") is None  # a crash does not retire the target
    assert only_outputs_unjudged(session.check(IDENTITY, "fvp-u55-echo"))  # on a fresh FVP
    fresh = fvp_target(session, "fvp-u55-echo").fvp
    assert fresh is not None and fresh.pid != crashed_pid


def test_hang_past_the_time_limit_is_infrastructure_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo", time_limit_s=20, run_timeout_s=300, debug_commands=True)
    target = fvp_target(session, "fvp-u55-echo")
    session.check(IDENTITY, "fvp-u55-echo")
    target.client.debug(m.DEBUG_HANG, during_next_run=True)
    with pytest.raises(FvpTimeLimit) as caught:
        session.check(IDENTITY, "fvp-u55-echo")
    assert isinstance(caught.value, InfrastructureError)
    assert "--timelimit of 20 s" in caught.value.message and "FVP log:" in caught.value.message
    assert session.broken_cause("fvp-u55-echo") is caught.value  # out of service, first cause


def test_silent_runner_is_a_link_timeout_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo", run_timeout_s=3, debug_commands=True)
    target = fvp_target(session, "fvp-u55-echo")
    session.check(IDENTITY, "fvp-u55-echo")
    target.client.debug(m.DEBUG_HANG, during_next_run=True)
    with pytest.raises(LinkTimeout) as caught:
        session.check(IDENTITY, "fvp-u55-echo")
    assert not isinstance(caught.value, FvpTimeLimit)
    assert "the FVP still runs" in caught.value.message
    assert isinstance(session.broken_cause("fvp-u55-echo"), InfrastructureError)


def test_licence_refusal_is_unavailable_with_fake_fvp(
    open_session: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = open_session("fvp-u55-echo")
    monkeypatch.setenv(LICENCE_ENV, "expired")
    with pytest.raises(FvpLicenceError) as caught:
        session.target("fvp-u55-echo")
    assert isinstance(caught.value, TargetUnavailable)  # so the plugin skips every case
    assert "FlexNet Licensing error:-5,357" in caught.value.message
    assert caught.value.fix is not None and "ARMLMD_LICENSE_FILE" in caught.value.fix


def test_unknown_fvp_parameter_is_a_start_error_with_fake_fvp(open_session: Opener) -> None:
    session = open_session("fvp-u55-echo", params={"mps3_board.no_such_thing": 1})
    with pytest.raises(FvpStartError) as caught:
        session.target("fvp-u55-echo")
    assert "unknown parameter 'mps3_board.no_such_thing'" in caught.value.message
    assert "ended before offering its UART" in caught.value.message


def test_over_long_semihosting_command_line_never_reaches_the_fake_fvp(
    open_session: Opener, tmp_path: Path
) -> None:
    with pytest.raises(DeviceSpecError, match="the FVP keeps only 255"):  # when the file loads
        open_session("fvp-u55-echo", runner_args=["--model", "m" * 250])
    assert not (tmp_path / "results" / "boards" / "fvp-u55-echo.log").exists()  # never started


def run_fake(tmp_path: Path, fvp: str, elf: Path, *params: str) -> subprocess.CompletedProcess[str]:
    folder = install(tmp_path / "fvp-bin")
    argv = [str(folder / fvp), "-a", str(elf), "--timelimit", "5"]
    for param in params:
        argv += ["-C", param]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_fake_refuses_an_image_its_platform_could_not_boot(tmp_path: Path) -> None:
    """The fake checks an application against its platform's memory map and INITSVTOR (the
    SSE-300 boots from ITCM at 0x10000000, the SSE-320 from its boot ROM at 0x11000000)."""
    echo = {"HIL_ENGINE_EXECUTORCH": "OFF", "HIL_ETHOS_U": "OFF"}
    sse300 = firmware.build(firmware.FirmwareConfig("corstone-300", echo)).binary
    sse320 = firmware.build(firmware.FirmwareConfig("corstone-320", echo)).binary
    wrong = run_fake(tmp_path, "FVP_Corstone_SSE-320", sse300)
    assert wrong.returncode == 1
    assert "lies outside the FVP_MPS4_Corstone_SSE_320 memory map" in wrong.stderr  # 512K ITCM
    unmoved = run_fake(
        tmp_path,
        "FVP_Corstone_SSE-320",
        sse320,
        "mps4_board.subsystem.iotss3_systemcontrol.INITSVTOR_RST=0x10000000",
    )
    assert unmoved.returncode == 1 and "nothing is loaded at 0x10000000" in unmoved.stderr
    own_map = run_fake(tmp_path, "FVP_Corstone_SSE-320", sse320)
    assert own_map.returncode == 1
    assert "fits the FVP_MPS4_Corstone_SSE_320 map, but the fake runs it in QEMU" in own_map.stderr
