"""Bring-up on an emulated Cortex-M55: the bare-metal runner (echo engine) built with
arm-none-eabi-gcc for QEMU's mps3-an547 (the Corstone-300 FPGA memory map), started by the
test, reached over its emulated UART on a pty, with `-icount shift=0` for deterministic time."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from debug_builds import with_debug_commands

from hil.devices import DeviceRegistry, DeviceSpec
from hil.errors import TargetCrash, TargetUnavailable
from hil.runner import messages as m
from hil.runner.selftest import selftest
from hil.sdk import firmware
from hil.session import Session
from hil.targets.serial import runner_client

REPO = Path(__file__).resolve().parents[2]
MISSING = [tool for tool in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"{', '.join(MISSING)} not installed; fix: apt-get install qemu-system-arm "
    "gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib (make setup does)",
)


@pytest.fixture(autouse=True)
def echo_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the echo engine: build it whatever ExecuTorch the shell points at."""
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)


def test_selftest_passes_on_the_emulated_m55(repo_devices: DeviceRegistry) -> None:
    spec = repo_devices.get("qemu-m55")
    with runner_client(spec) as client:
        report = selftest(client)
        info = client.info
    assert report.ok, report.render()
    assert [s.name for s in report.steps] == [
        "handshake",
        "chunked transfer",
        "echo integrity",
        "throughput",
    ]
    assert info is not None and info.platform == "cortex-m55/mps3-an547"
    assert info.clock_kind == m.CLOCK_CYCLES and info.engine_name == "echo"
    assert info.build_id == firmware.build_id_for(firmware.firmware_config(spec))
    assert not info.debug_commands  # the default build is a release build
    assert report.rates["model transfer"] > 0 and report.rates["echo round trip"] > 0


def faulting_build(folder: Path) -> DeviceSpec:
    """qemu-m55 with a test build of its runner, which faults on request."""
    data = with_debug_commands(yaml.safe_load((REPO / "devices" / "qemu-m55.yaml").read_text()))
    data["name"] = "qemu-m55-faults"
    (folder / "qemu-m55-faults.yaml").write_text(yaml.safe_dump(data))
    return DeviceRegistry.from_dirs([folder]).get("qemu-m55-faults")


def test_fault_is_reported_with_status_and_stacked_registers_and_survives_reset(
    tmp_path: Path,
) -> None:
    spec = faulting_build(tmp_path)
    image = firmware.build(firmware.firmware_config(spec)).binary
    symbols = subprocess.run(
        ["arm-none-eabi-nm", str(image)], capture_output=True, text=True, check=True
    ).stdout
    faulting = int(re.search(r"^([0-9a-f]+) T hil_platform_fault$", symbols, re.M)[1], 16)
    with runner_client(spec) as client:
        client.hello()
        client.load(b"any bytes: the echo engine takes them")
        spec, data = m.from_numpy(np.ones(8, dtype=np.float32))
        client.set_input(0, spec, data)
        client.debug(m.DEBUG_FAULT, during_next_run=True)
        with pytest.raises(TargetCrash) as caught:
            client.run(0, 1, 1, 0.0, 1.0)
        assert "cortex-m fault" in str(caught.value)
        assert "run: 0 warm-up" in caught.value.log_tail
        # the runner reset itself; the record in .noinit survived and is read back
        client.hello()
        report = client.fault_report(clear=True)
        assert report is not None
        assert report.fields["exception"] == 6  # UsageFault
        assert report.fields["cfsr"] & (1 << 16)  # UNDEFINSTR
        assert faulting <= report.fields["pc"] < faulting + 8  # the udf in hil_platform_fault
        assert client.fault_report() is None  # cleared


def test_cycle_counts_are_deterministic_under_icount(repo_devices: DeviceRegistry) -> None:
    medians = []
    for _ in range(2):  # two QEMU boots, same work
        with runner_client(repo_devices.get("qemu-m55")) as client:
            client.hello()
            client.load(b"model")
            spec, data = m.from_numpy(np.arange(1000, dtype=np.float32))
            client.set_input(0, spec, data)
            ticks = client.run(2, 10, 10, 0.0, 1.0).ticks
            assert max(ticks) - min(ticks) <= 2  # SysTick phase against the instruction count
            medians.append(statistics.median(ticks))
    assert abs(medians[0] - medians[1]) <= 1


def test_models_on_the_echo_build_are_unavailable_with_the_reason(session: Session) -> None:
    with pytest.raises(TargetUnavailable, match=r"echo engine.*cannot run models"):
        session.target("qemu-m55")
