"""The runner says what it is, and hil records it beside what it expected (protocol 1.4).

Whether a kernel is wrong on purpose comes from the runner's own handshake, compiled into it,
never from a device file: a board running a planted build is recorded as one even when its
device file asks for a release build. Each test runs the real host runner on a real pty."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
import yaml

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.resources.virtual_boards import HostRunnerBoard
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.sdk import firmware
from hil.session import Session
from hil.transports.serial_link import SerialLink

PLANTED = "aten::add.out"
# no add: the planted kernel is never called, so the check passes, and is altered all the same
LINEAR = Case("identity_linear", lambda: torch.nn.Linear(8, 4), seeded((1, 8)))


def test_a_planted_runner_says_so_whatever_its_device_file_says(
    tmp_path: Path, shared_cache: Path
) -> None:
    """A board someone else flashed with a planted build, under a device file that names the
    release preset and no fault: the handshake names the fault, the record shows both build
    ids (the run goes on with the board as it is), and no binary hil never had."""
    planted = firmware.build(firmware.FirmwareConfig("host", {"HIL_PLANTED_FAULT": PLANTED}))
    release_id = firmware.build_id_for(firmware.FirmwareConfig("host"))
    board = HostRunnerBoard("planted-runner", planted.binary)
    port = board.start()
    try:
        link = SerialLink(port).open()
        try:
            info = RunnerClient(link, name="planted").hello()
        finally:
            link.close()
        assert info.protocol == m.PROTOCOL_VERSION
        assert info.planted_fault == PLANTED and info.build == "test"
        spec = {
            "name": "flashed-elsewhere",
            "kind": "serial",
            "recipes": ["portable"],
            "latency": {"warmup": 0, "min_runs": 2, "min_time_s": 0.01, "max_runs": 10},
            "connection": {"port": port, "firmware": "host", "reply_timeout_s": 3.0},
        }
        (tmp_path / "devices").mkdir()
        (tmp_path / "devices" / "flashed-elsewhere.yaml").write_text(yaml.safe_dump(spec))
        registry = DeviceRegistry.from_dirs([tmp_path / "devices"])
        assert (
            "HIL_PLANTED_FAULT" not in firmware.firmware_config(registry.get(spec["name"])).defines
        )
        with Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "r") as s:
            result = s.check(LINEAR, "flashed-elsewhere", "portable")
    finally:
        board.stop()
    facts = result.target_info
    assert result.passed
    assert facts["planted_fault"] == PLANTED and facts["build"] == "test"
    assert facts["build_id"] == planted.build_id != release_id
    assert facts["expected_build_id"] == release_id
    assert "runner_sha256" not in facts and "runner_path" not in facts
    assert any(f"HIL_PLANTED_FAULT={PLANTED}" in why for why in result.altered)


def test_a_release_vboard_records_its_build_and_the_binary_hil_started(
    session: Session, repo_devices: DeviceRegistry
) -> None:
    result = session.check(LINEAR, "vboard", "portable")
    built = firmware.build(firmware.firmware_config(repo_devices.get("vboard")))
    facts = result.target_info
    assert facts["build"] == "release" and facts["debug_commands"] == "refused"
    assert "planted_fault" not in facts and not result.altered
    assert facts["expected_build_id"] == facts["build_id"] == built.build_id
    assert facts["runner_path"] == str(built.binary)
    assert facts["runner_sha256"] == hashlib.sha256(built.binary.read_bytes()).hexdigest()
