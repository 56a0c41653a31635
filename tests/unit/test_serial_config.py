"""Device-file keys of serial targets: boards, flash steps and link policy are parsed at the
boundary, and a wrong value names the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import DeviceSpec, parse_device
from hil.errors import DeviceSpecError, TargetUnavailable
from hil.runner.firmware import FirmwareConfig, firmware_config
from hil.targets.board import PortBoard, make_board
from hil.targets.flashing import CommandFlasher, LabgridFlasher, make_flasher
from hil.targets.serial import link_policy


def spec(connection: dict[str, Any], tmp_path: Path) -> DeviceSpec:
    data = {"name": "board", "kind": "serial", "recipes": ["portable"], "connection": connection}
    return parse_device(data, tmp_path / "board.yaml")


def test_a_port_makes_a_port_board(tmp_path: Path) -> None:
    board = make_board(spec({"port": "socket://lab:4000"}, tmp_path), None)
    assert isinstance(board, PortBoard) and board.start() == "socket://lab:4000"
    assert board.alive() is None  # a real board cannot say


def test_neither_port_nor_virtual_is_refused_naming_both(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"connection\.port.*connection\.virtual"):
        make_board(spec({}, tmp_path), None)


def test_unknown_virtual_board_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match="host-runner, qemu-mps3-an547"):
        make_board(spec({"virtual": "fvp"}, tmp_path), Path("/bin/true"))


def test_flash_steps(tmp_path: Path) -> None:
    assert make_flasher(spec({"port": "x"}, tmp_path)) is None
    command = make_flasher(spec({"port": "x", "flash": {"command": ["pyocd", "flash", "{image}"]}},
                                tmp_path))
    assert isinstance(command, CommandFlasher) and command.argv == ["pyocd", "flash", "{image}"]
    lab = make_flasher(spec({"port": "x", "flash": {"labgrid": {"config": "lab.yaml"}}}, tmp_path))
    assert isinstance(lab, LabgridFlasher) and lab.driver == "OpenOCDDriver"
    with pytest.raises(DeviceSpecError, match=r"connection\.flash must be"):
        make_flasher(spec({"port": "x", "flash": "pyocd"}, tmp_path))


def test_a_missing_flash_tool_is_unavailable_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TargetUnavailable, match="not installed"):
        CommandFlasher(["no-such-flasher-tool", "{image}"]).flash(tmp_path / "runner.elf")


def test_link_policy_from_the_device_file(tmp_path: Path) -> None:
    policy = link_policy(spec({"port": "x", "reply_timeout_s": 0.5, "retries": 7}, tmp_path)
                         .connection)
    assert policy.reply_timeout_s == 0.5 and policy.retries == 7
    with pytest.raises(DeviceSpecError, match="must be numbers"):
        link_policy(spec({"port": "x", "retries": "many"}, tmp_path).connection)


def test_firmware_entry(tmp_path: Path) -> None:
    assert firmware_config(spec({"port": "x"}, tmp_path)) == FirmwareConfig("host")
    config = firmware_config(spec({"port": "x", "firmware": {
        "preset": "cortex-m55", "defines": {"HIL_DEBUG_COMMANDS": "OFF"}}}, tmp_path))
    assert config.preset == "cortex-m55" and dict(config.defines) == {"HIL_DEBUG_COMMANDS": "OFF"}
    with pytest.raises(DeviceSpecError, match="preset 'stm32'"):
        firmware_config(spec({"port": "x", "firmware": "stm32"}, tmp_path))
