"""Building the runner (cached by configuration hash, identity in the handshake), the CLI
commands around it, and the flash step that runs only when a board's build id differs."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml

from hil import Case, cli, seeded
from hil.devices import DeviceRegistry
from hil.errors import DeployError
from hil.resources.virtual_boards import HostRunnerBoard
from hil.runner.client import LinkPolicy, RunnerClient
from hil.sdk import firmware
from hil.session import Session
from hil.transports.serial_link import SerialLink

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ECHO_HOST = firmware.FirmwareConfig("host", {"HIL_ENGINE_EXECUTORCH": "OFF"})


def test_builds_are_cached_by_configuration_hash() -> None:
    first = firmware.build(ECHO_HOST)
    again = firmware.build(ECHO_HOST)
    assert again.binary == first.binary and not again.built_now
    assert first.binary.parent.parent.name == firmware.config_hash(ECHO_HOST)
    assert first.build_id == f"host-{firmware.config_hash(ECHO_HOST)[:16]}"


def test_the_build_id_follows_sources_and_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = firmware.config_hash(ECHO_HOST)
    assert firmware.config_hash(firmware.FirmwareConfig("host")) != before
    copy = tmp_path / "firmware"
    shutil.copytree(firmware.source_dir(), copy, ignore=shutil.ignore_patterns("build"))
    monkeypatch.setattr(firmware, "SOURCE_DIR", copy)
    assert firmware.config_hash(ECHO_HOST) == before
    server = copy / "src" / "protocol" / "server.c"
    server.write_text(server.read_text() + "\n/* a change */\n")
    assert firmware.config_hash(ECHO_HOST) != before


def test_the_runner_reports_its_build_id_in_the_handshake() -> None:
    runner = firmware.build(ECHO_HOST)
    board = HostRunnerBoard("build-id", runner.binary)
    link = SerialLink(board.start()).open()
    try:
        assert RunnerClient(link).hello().build_id == runner.build_id
    finally:
        link.close()
        board.stop()


def test_linux_aarch64_preset_builds_and_runs_under_qemu_user() -> None:
    if shutil.which("aarch64-linux-gnu-g++") is None or shutil.which("qemu-aarch64") is None:
        pytest.skip("needs g++-aarch64-linux-gnu and qemu-user (apt-get install them)")
    runner = firmware.build(
        firmware.FirmwareConfig("linux-aarch64", {"HIL_ENGINE_EXECUTORCH": "OFF"})
    )

    class Emulated(HostRunnerBoard):
        def _spawn(self, argv: list[str], **popen: object) -> None:
            super()._spawn(
                ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "cortex-a76", *argv],
                **popen,
            )

    board = Emulated("aarch64", runner.binary)
    link = SerialLink(board.start()).open()
    try:
        client = RunnerClient(link, policy=LinkPolicy(reply_timeout_s=5.0))
        info = client.hello()
        assert info.platform == "posix-aarch64" and info.build_id == runner.build_id
        assert client.echo(b"\x00\xa5\x5a\xff" * 100) == b"\x00\xa5\x5a\xff" * 100
    finally:
        link.close()
        board.stop()


def test_cli_firmware_build_prints_the_runner(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli.main(["--devices", str(REPO / "devices"), "firmware", "build", "--target", "vboard"])
        == 0
    )
    printed = Path(capsys.readouterr().out.strip())
    assert printed == firmware.build(firmware.FirmwareConfig("host")).binary


def test_cli_selftest_on_the_virtual_board(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--devices", str(REPO / "devices"), "selftest", "--target", "vboard"]) == 0
    out = capsys.readouterr().out
    assert "ok   chunked transfer" in out and out.rstrip().endswith("PASS")


class SupervisedBoard(HostRunnerBoard):
    """A HostRunnerBoard whose pty process is fake_board.py's supervisor, not a runner."""

    def __init__(self, state: Path) -> None:
        super().__init__("flashable", Path(sys.executable))
        self.state = state

    def _spawn(self, argv: list[str], **popen: object) -> None:
        super()._spawn(
            [sys.executable, str(HERE / "fake_board.py"), str(self.state), "--", "--stdio"], **popen
        )


@pytest.fixture
def flashable_board(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A board on a pty that runs the echo build until it is flashed with something else."""
    state = tmp_path / "board"
    state.mkdir()
    (state / "image").write_text(str(firmware.build(ECHO_HOST).binary))
    board = SupervisedBoard(state)
    yield board.start(), state
    board.stop()


def flash_command(state: Path) -> list[str]:
    return [sys.executable, str(HERE / "fake_board.py"), "--flash", str(state), "{image}"]


def serial_device(folder: Path, port: str, flash: list[str]) -> None:
    folder.mkdir(exist_ok=True)
    spec = {
        "name": "lab-board",
        "kind": "serial",
        "recipes": ["portable"],
        "latency": {"warmup": 0, "min_runs": 2, "min_time_s": 0.01, "max_runs": 10},
        "connection": {
            "port": port,
            "firmware": "host",
            "reply_timeout_s": 3.0,
            "flash": {"command": flash},
        },
    }
    (folder / "lab-board.yaml").write_text(yaml.safe_dump(spec))


def test_a_board_with_another_build_is_flashed_once_then_reused(
    flashable_board: tuple[str, Path], tmp_path: Path, shared_cache: Path
) -> None:
    port, state = flashable_board
    folder = tmp_path / "devices"
    serial_device(folder, port, flash_command(state))
    registry = DeviceRegistry.from_dirs([folder])
    case = Case("linear", lambda: torch.nn.Linear(8, 4), seeded((1, 8)))
    built = firmware.build(firmware.FirmwareConfig("host"))
    with Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "r") as s:
        result = s.check(case, "lab-board", "portable")
        assert result.passed
        assert s.target("lab-board").describe()["build_id"] == built.build_id
    flashed = (state / "flashed").read_text().splitlines()
    assert flashed == [str(built.binary)]
    # the record: the build hil expected and the sha256 of the binary it flashed
    assert result.target_info["expected_build_id"] == built.build_id
    assert result.target_info["runner_path"] == str(built.binary)
    assert (
        result.target_info["runner_sha256"] == hashlib.sha256(built.binary.read_bytes()).hexdigest()
    )
    with Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "r2") as s:
        again = s.check(case, "lab-board", "portable")
        assert again.passed
    assert (state / "flashed").read_text().splitlines() == flashed  # not flashed again
    # not flashed this time: the build id agrees, but which bytes the board holds hil cannot say
    assert again.target_info["expected_build_id"] == again.target_info["build_id"]
    assert "runner_sha256" not in again.target_info


def test_a_flash_that_does_not_take_is_an_error_naming_both_builds(
    flashable_board: tuple[str, Path], tmp_path: Path, shared_cache: Path
) -> None:
    port, state = flashable_board
    folder = tmp_path / "devices"
    serial_device(folder, port, [sys.executable, "-c", "pass", "{image}"])  # does nothing
    registry = DeviceRegistry.from_dirs([folder])
    with (
        Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "r") as s,
        pytest.raises(DeployError) as caught,
    ):
        s.target("lab-board")
    old = firmware.build(ECHO_HOST).build_id
    new = firmware.build_id_for(firmware.FirmwareConfig("host"))
    assert f"still reports build {old}, not {new}" in str(caught.value)
    assert not (state / "flashed").exists()


def test_the_executorch_engine_compiles_for_cortex_m55(tmp_path: Path) -> None:
    """No bare-metal ExecuTorch can be linked here, but the engine's source must be bare-metal
    clean (no exceptions, RTTI or heap): compiled for the M55 against ExecuTorch's headers."""
    if shutil.which("arm-none-eabi-g++") is None:
        pytest.skip("needs gcc-arm-none-eabi and libstdc++-arm-none-eabi-newlib")
    headers = firmware._executorch_root() / "include"
    source = firmware.source_dir() / "src"
    obj = tmp_path / "executorch_engine.o"
    done = subprocess.run(
        [
            "arm-none-eabi-g++",
            "-mcpu=cortex-m55",
            "-mthumb",
            "-mfloat-abi=hard",
            "-std=c++17",
            "-O2",
            "-fno-exceptions",
            "-fno-rtti",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{headers}",
            f"-I{headers}/executorch/runtime/core/portable_type/c10",
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            "-DHIL_WITH_EXECUTORCH=1",
            f"-I{source}",
            "-c",
            str(source / "engine" / "executorch_engine.cpp"),
            "-o",
            str(obj),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    symbols = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True)
    assert re.search(r" [RD] hil_executorch_engine$", symbols.stdout, re.M), symbols.stdout
