"""Device-file keys of serial targets: boards, flash steps and link policy are parsed when the
file loads, and a wrong value names the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import DeviceSpec, parse_device
from hil.errors import DeviceSpecError, TargetUnavailable
from hil.resources.boards import PortBoard, make_board
from hil.resources.flashing import CommandFlasher, LabgridFlasher, make_flasher
from hil.sdk.firmware import FirmwareConfig, firmware_config
from hil.settings import SerialSettings


def spec(connection: dict[str, Any], tmp_path: Path) -> DeviceSpec:
    data = {"name": "board", "kind": "serial", "recipes": ["portable"], "connection": connection}
    return parse_device(data, tmp_path / "board.yaml")


def settings(connection: dict[str, Any], tmp_path: Path) -> SerialSettings:
    parsed = spec(connection, tmp_path).settings
    assert isinstance(parsed, SerialSettings)
    return parsed


def test_a_port_makes_a_port_board(tmp_path: Path) -> None:
    board = make_board("board", settings({"port": "socket://lab:4000"}, tmp_path), None, tmp_path)
    assert isinstance(board, PortBoard) and board.start() == "socket://lab:4000"
    assert board.gone() is None  # a real board cannot say


def test_neither_port_nor_virtual_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"key 'connection' must be exactly one of port"):
        spec({}, tmp_path)


def test_unknown_virtual_board_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        DeviceSpecError,
        match=r"'connection\.virtual' must be one of host-runner, "
        r"qemu-mps3-an547, got 'fvp'",
    ):
        spec({"virtual": "fvp"}, tmp_path)


def test_flash_steps(tmp_path: Path) -> None:
    assert settings({"port": "x"}, tmp_path).flash is None
    step = settings(
        {"port": "x", "flash": {"command": ["pyocd", "flash", "{image}"]}}, tmp_path
    ).flash
    assert step is not None
    command = make_flasher(step)
    assert isinstance(command, CommandFlasher) and command.argv == ["pyocd", "flash", "{image}"]
    step = settings({"port": "x", "flash": {"labgrid": {"config": "lab.yaml"}}}, tmp_path).flash
    assert step is not None
    lab = make_flasher(step)
    assert isinstance(lab, LabgridFlasher) and lab.driver == "OpenOCDDriver"
    with pytest.raises(DeviceSpecError, match=r"'connection.flash' must be a mapping"):
        spec({"port": "x", "flash": "pyocd"}, tmp_path)
    with pytest.raises(DeviceSpecError, match=r"'connection.flash' must be \{command"):
        spec({"port": "x", "flash": {"timeout_s": 3}}, tmp_path)


def test_a_missing_flash_tool_is_unavailable_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TargetUnavailable, match="not installed"):
        CommandFlasher(["no-such-flasher-tool", "{image}"]).flash(tmp_path / "runner.elf")


def test_link_policy_from_the_device_file(tmp_path: Path) -> None:
    policy = settings({"port": "x", "reply_timeout_s": 0.5, "retries": 7}, tmp_path).policy
    assert policy.reply_timeout_s == 0.5 and policy.retries == 7
    with pytest.raises(
        DeviceSpecError,
        match=r"'connection.retries' must be a whole number "
        ">= 0, got 'many'",
    ):
        spec({"port": "x", "retries": "many"}, tmp_path)


def test_firmware_entry(tmp_path: Path) -> None:
    assert firmware_config(spec({"port": "x"}, tmp_path)) == FirmwareConfig("host")
    config = firmware_config(
        spec(
            {
                "port": "x",
                "firmware": {"preset": "cortex-m55", "defines": {"HIL_DEBUG_COMMANDS": "OFF"}},
            },
            tmp_path,
        )
    )
    assert config.preset == "cortex-m55" and dict(config.defines) == {"HIL_DEBUG_COMMANDS": "OFF"}
    with pytest.raises(
        DeviceSpecError,
        match=r"'connection\.firmware' must be one of host, "
        r".*got 'stm32'",
    ):
        spec({"port": "x", "firmware": "stm32"}, tmp_path)
