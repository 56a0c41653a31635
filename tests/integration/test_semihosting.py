"""Semihosting on the bare-metal runner, under QEMU mps3-an547 (echo engine, no ExecuTorch).

A semihosting call is a `bkpt 0xAB` that a debugger or emulator answers; on a board with
nobody attached it is a HardFault. A board build (HIL_SEMIHOSTING=AUTO: only while DHCSR says
a debugger is attached, or OFF) must boot and answer over its UART where nothing serves
semihosting, and an emulator build (ON) must survive being started without it. Where it is
served, the runner loads models from the host's disk through it (LOAD_FILE)."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from hil.devices import DeviceRegistry, DeviceSpec
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.runner.file_load import StaleModelFile, load_file
from hil.targets.serial import client_on, prepare_board

MISSING = [tool for tool in ("qemu-system-arm", "arm-none-eabi-gcc") if shutil.which(tool) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"{', '.join(MISSING)} not installed; fix: apt-get install "
    "qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi (make setup does)",
)


def spec_for(tmp_path: Path, mode: str, served: bool, preset: str = "corstone-300") -> DeviceSpec:
    """An echo runner of `preset` with HIL_SEMIHOSTING=`mode` ("" = the preset's own)."""
    name = f"sh-{preset}-{mode.lower() or 'preset'}-{int(served)}"
    semihosting = f', HIL_SEMIHOSTING: "{mode}"' if mode else ""
    if preset.startswith("corstone-320"):  # onto QEMU's SSE-300 map (test_qemu_executorch.py)
        semihosting += (
            ", HIL_VECTOR_REGION: ITCM, HIL_CODE_REGION: DDR, HIL_DATA_REGION: SRAM, "
            'HIL_UART0_BASE: "0x49303000"'
        )
    (tmp_path / f"{name}.yaml").write_text(f"""
name: {name}
kind: serial
description: {preset} runner, echo engine, HIL_SEMIHOSTING={mode}, QEMU semihosting {served}
recipes: [portable]
latency: {{timing: emulated}}
memory: {{}}
connection:
  virtual: qemu-mps3-an547
  semihosting: {str(served).lower()}
  firmware:
    preset: {preset}
    defines: {{HIL_ENGINE_EXECUTORCH: "OFF", HIL_ETHOS_U: "OFF"{semihosting}}}
  reply_timeout_s: 5.0
  bytes_per_s: 10000
""")
    return DeviceRegistry.from_dirs([tmp_path]).get(name)


class Booted:
    def __init__(self, spec: DeviceSpec) -> None:
        self.runner, self.board = prepare_board(spec)
        self.link, self.client = client_on(spec, self.board.start())

    def close(self) -> str:
        self.link.close()
        log = self.board.log_tail(40)
        self.board.stop()
        return log


def semihosting_calls(elf: Path) -> int:
    out = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    return len(re.findall(r"\bbkpt\s+0x00ab\b", out))


@pytest.mark.parametrize(
    ("preset", "mode"),
    [("corstone-300-board", ""), ("corstone-320-board", ""), ("corstone-300", "OFF")],
)
def test_a_board_build_boots_and_answers_where_nothing_serves_semihosting(
    tmp_path: Path,
    preset: str,
    mode: str,
) -> None:
    """The board presets (AUTO: DHCSR.C_DEBUGEN reads 0 under QEMU, as on a board with no
    debugger) and an OFF build never execute a semihosting call."""
    booted = Booted(spec_for(tmp_path, mode, served=False, preset=preset))
    try:
        info = booted.client.hello()
        echo_ok = echo_once(booted.client)
        fault = booted.client.fault_report()
    finally:
        booted.close()
    assert info.platform.endswith(preset.removesuffix("-board")) and echo_ok
    assert fault is None  # it never took a fault: no bkpt ran
    assert not info.file_load  # no LOAD_FILE without semihosting
    if mode == "OFF":
        assert booted.runner is not None and semihosting_calls(booted.runner.binary) == 0


def test_an_emulator_build_started_without_semihosting_recovers_from_its_first_call(
    tmp_path: Path,
) -> None:
    """HIL_SEMIHOSTING=ON calls semihosting at boot; QEMU without it takes the HardFault,
    which the fault handler recognises (a bkpt 0xAB) and turns into 'semihosting is off'."""
    booted = Booted(spec_for(tmp_path, "ON", served=False))
    try:
        info = booted.client.hello()
        echo_ok = echo_once(booted.client)
        fault = booted.client.fault_report()
    finally:
        booted.close()
    assert echo_ok and fault is None and not info.file_load


def echo_once(client: RunnerClient) -> bool:
    client.load(b"echo")
    data = np.arange(16, dtype=np.float32)
    spec, raw = m.from_numpy(data)
    client.set_input(0, spec, raw)
    client.run(0, 1, 1, 0.0, 1.0)
    out = client.get_output(0)
    return bool(np.array_equal(np.asarray(out).reshape(-1), data))


def test_load_file_reads_the_model_from_the_host_through_semihosting(tmp_path: Path) -> None:
    """With semihosting served the handshake offers LOAD_FILE; the runner reads the file into
    its model pool, checks size and sha256, and a wrong one is refused as stale."""
    model = tmp_path / "model.bin"
    payload = bytes(range(256)) * 4096  # 1 MiB
    model.write_bytes(payload)
    sha = hashlib.sha256(payload).hexdigest()
    booted = Booted(spec_for(tmp_path, "ON", served=True, preset="cortex-m55"))
    try:
        assert booted.client.hello().file_load
        started = time.monotonic()
        outcome = load_file(booted.client, str(model), sha, len(payload))
        file_s = time.monotonic() - started
        assert outcome.bytes_sent == 0  # nothing crossed the UART
        held = booted.client.hello()
        assert held.holds_model and held.held_sha256 == sha
        with pytest.raises(StaleModelFile, match="announced"):
            load_file(booted.client, str(model), "00" * 32, len(payload))
        with pytest.raises(StaleModelFile, match="cannot open"):
            load_file(booted.client, str(tmp_path / "missing.pte"), sha, len(payload))
    finally:
        booted.close()
    print(f"LOAD_FILE over semihosting: {len(payload) / file_s / 2**20:.1f} MiB/s")
