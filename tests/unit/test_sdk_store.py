"""Tree digests, finished SDKs, and which one a bare-metal runner links by itself."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hil.sdk import firmware, identity, store
from hil.sdk.boards import BOARDS


def test_a_tree_digest_is_its_content(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.c").write_text("int a;\n")
    memo = tmp_path / "memo.json"
    first = identity.tree_digest(tree, memo)
    os.utime(tree / "src" / "a.c", (1, 1))  # touched, not changed
    assert identity.tree_digest(tree, memo) == first
    (tree / "src" / "a.c").write_text("int b;\n")
    assert identity.tree_digest(tree, memo) != first
    copy = tmp_path / "copy"
    (copy / "src").mkdir(parents=True)
    (copy / "src" / "a.c").write_text("int a;\n")
    assert identity.tree_digest(copy, memo) == first  # a copy is the same tree


def test_build_outputs_and_setup_scratch_are_not_the_tree(tmp_path: Path) -> None:
    tree = tmp_path / "executorch"
    (tree / "runtime").mkdir(parents=True)
    (tree / "runtime" / "x.h").write_text("x")
    before = identity.content_digest(tree)
    for junk in (
        ".git/HEAD",
        "cmake-out-arm/CMakeCache.txt",
        "arm_test/a.o",
        "examples/arm/arm-scratch/FVP/big.bin",
        "runtime/__pycache__/x.pyc",
        "third-party/flatcc/bin/flatcc",
        "third-party/flatcc/lib/libflatcc.a",
    ):
        (tree / junk).parent.mkdir(parents=True, exist_ok=True)
        (tree / junk).write_text("junk")
    assert identity.content_digest(tree) == before


def test_an_untouched_tree_is_not_read_again(tmp_path: Path) -> None:
    """The memo trusts an unchanged listing (path, size, mtime of every file): a same-size
    edit with its mtime put back is the one change it cannot see (documented trade-off)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_text("aaaa")
    memo = tmp_path / "memo.json"
    first = identity.tree_digest(tree, memo)
    stat = (tree / "f").stat()
    (tree / "f").write_text("bbbb")
    os.utime(tree / "f", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert identity.tree_digest(tree, memo) == first
    assert json.loads(memo.read_text())[str(tree.resolve())]["content"] == first


def sdk(
    root: Path,
    name: str,
    board: str,
    npu: str | None,
    device: str | None,
    built_at: float,
    finished: bool = True,
) -> Path:
    prefix = root / name
    (prefix / "lib").mkdir(parents=True)
    if finished:
        (prefix / store.RECORD).write_text(
            json.dumps(
                {
                    "key": name,
                    "board": {"name": board, "npu": npu},
                    "device": device,
                    "built_at": built_at,
                    "version": "1.5.0",
                }
            )
        )
    return prefix


def test_the_sdk_built_for_the_device_wins_then_the_newest(tmp_path: Path) -> None:
    now = time.time()
    old_u55 = sdk(tmp_path, "a", "corstone-300", "ethos-u55-128", "fvp-u55", now - 100)
    new_u55 = sdk(tmp_path, "b", "corstone-300", "ethos-u55-128", "rack-u55", now)
    sdk(tmp_path, "c", "corstone-300", "ethos-u55-256", "fvp-u55", now + 1)  # another NPU
    sdk(tmp_path, "d", "corstone-300", "ethos-u55-128", "fvp-u55", now + 2, finished=False)
    board = BOARDS["corstone-300"]
    found = store.find_sdk(board, "fvp-u55", tmp_path)
    assert found is not None and found.prefix == old_u55.resolve()
    found = store.find_sdk(board, "somewhere-else", tmp_path)
    assert found is not None and found.prefix == new_u55.resolve()
    assert store.find_sdk(BOARDS["qemu-m55"], None, tmp_path) is None


def test_a_bare_metal_runner_links_the_boards_sdk_and_executorch_root_still_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    monkeypatch.setenv("HIL_SDK_DIR", str(tmp_path / "sdk"))
    config = firmware.FirmwareConfig("cortex-m55", device="qemu-m55")
    assert firmware.bare_metal_executorch_root(config) is None  # none built: the echo engine
    prefix = sdk(tmp_path / "sdk", "qemu-m55-1", "qemu-m55", None, "qemu-m55", time.time())
    assert firmware.bare_metal_executorch_root(config) == prefix.resolve()
    own = tmp_path / "own-install"
    monkeypatch.setenv("EXECUTORCH_ROOT", str(own))
    assert firmware.bare_metal_executorch_root(config) == own.resolve()
    defined = firmware.FirmwareConfig("cortex-m55", {"EXECUTORCH_ROOT": str(tmp_path)})
    assert firmware.bare_metal_executorch_root(defined) == tmp_path.resolve()
    echo = firmware.FirmwareConfig("cortex-m55", {"HIL_ENGINE_EXECUTORCH": "OFF"})
    assert firmware.bare_metal_executorch_root(echo) is None
    assert firmware.bare_metal_executorch_root(firmware.FirmwareConfig("host")) is None
