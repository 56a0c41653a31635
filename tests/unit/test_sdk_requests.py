"""A `hil sdk build` asked again answers from the remembered request only while nothing that
decides its programs or its build changed (hil.sdk.requests)."""

from __future__ import annotations

import json
from pathlib import Path

from hil.sdk import requests
from hil.sdk.boards import BOARDS
from hil.sdk.plan import Tools
from hil.sdk.store import RECORD, read_sdk

TOOLS = Tools("cmake", "3.31", "arm-none-eabi-gcc 12.2", "python", Path("flatc"), True)
TREES = {"executorch": "a" * 64, "cmsis_nn": "b" * 64}


def key(suites: Path, devices: Path, *, full: bool = False, tools: Tools = TOOLS) -> str:
    board = BOARDS["qemu-m55"]
    return requests.request_key(board, "qemu-m55", TREES, tools, [str(suites)], [devices], full)


def test_the_key_follows_the_suites_the_device_files_the_options_and_the_tools(
    tmp_path: Path,
) -> None:
    suites, devices = tmp_path / "suites", tmp_path / "devices"
    suites.mkdir()
    devices.mkdir()
    (suites / "test_ops.py").write_text("CASES = []\n")
    (devices / "qemu-m55.yaml").write_text("name: qemu-m55\n")
    first = key(suites, devices)
    assert key(suites, devices) == first  # nothing changed: the same request
    (suites / "__pycache__").mkdir()
    (suites / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert key(suites, devices) == first  # caches do not count
    (suites / "test_ops.py").write_text("CASES = [1]\n")
    edited_suite = key(suites, devices)
    assert edited_suite != first
    (devices / "qemu-m55.yaml").write_text("name: qemu-m55\nrecipes: [portable]\n")
    assert key(suites, devices) != edited_suite
    assert key(suites, devices, full=True) != key(suites, devices)
    newer = Tools("cmake", "3.31", "arm-none-eabi-gcc 13.3", "python", Path("flatc"), True)
    assert key(suites, devices, tools=newer) != key(suites, devices)


def test_a_remembered_answer_is_only_a_finished_sdk(tmp_path: Path) -> None:
    prefix = tmp_path / "sdk" / "qemu-m55-1234"
    (prefix / "lib").mkdir(parents=True)
    (prefix / RECORD).write_text(json.dumps({"board": {"name": "qemu-m55"}}))
    sdk = read_sdk(prefix)
    assert sdk is not None
    requests.remember(tmp_path / "sdk", "f" * 64, sdk)
    found = requests.remembered(tmp_path / "sdk", "f" * 64)
    assert found is not None and found.prefix == sdk.prefix
    assert requests.remembered(tmp_path / "sdk", "e" * 64) is None  # another request
    (prefix / RECORD).unlink()  # the SDK was removed or is being rebuilt
    assert requests.remembered(tmp_path / "sdk", "f" * 64) is None
