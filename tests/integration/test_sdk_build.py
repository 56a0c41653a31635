"""`hil sdk build` end to end with real CMake and the real arm-none-eabi-gcc, over small
stand-in source trees (tests/fakes/sdk_trees.py: CI has no ExecuTorch sources and cannot
fetch them). The stand-ins configure, compile and install as the real trees do and write the
operator lists ExecuTorch's codegen writes; what they cannot show, a real ExecuTorch booting
on the board, was checked by hand (firmware/README.md, "ExecuTorch for bare metal")."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch
from fakes.sdk_trees import CORTEX_M, PRIM, QUANTIZED, Trees, make_trees

from hil import Case, cli, seeded
from hil.errors import SdkBuildFailed
from hil.sdk import build, sources, store
from hil.sdk.boards import BOARDS, SdkBoard
from hil.session import Session

MISSING = [t for t in ("arm-none-eabi-gcc", "ninja") if shutil.which(t) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not installed (make setup installs them)"
)


def planned(trees: Trees, board: SdkBoard, sdk_root: Path, used: tuple[str, ...]) -> build.SdkPlan:
    chosen = sources.resolve(board, trees.executorch, trees.cmsis_nn, trees.driver, trees.cmsis)
    return build.plan_sdk(board, chosen, [], jobs=2, sdk_root=sdk_root, used=used)


def test_qemu_m55_sdk_is_built_recorded_and_found_again_at_once(tmp_path: Path) -> None:
    trees = make_trees(tmp_path / "src")
    lines: list[str] = []
    plan = planned(trees, BOARDS["qemu-m55"], tmp_path / "sdk", ("aten::add.out", QUANTIZED[0]))
    done = build.build_sdk(plan, lines.append, device="qemu-m55")
    assert done.built_now
    sdk = done.sdk.prefix
    assert lines[0].startswith("[1/3] configure ExecuTorch") and lines[-1].startswith("SDK ready")
    for library in (
        "executorch",
        "executorch_selected_kernels",
        "quantized_ops_lib",
        "cortex_m_ops_lib",
    ):
        assert (sdk / "lib" / f"lib{library}.a").is_file()
    assert not (sdk / "lib" / "libexecutorch_delegate_ethos_u.a").exists()
    assert (sdk / "lib/cmake/ExecuTorch/executorch-config.cmake").is_file()
    assert not plan.build_dir.exists()  # scratch removed; the log kept
    log = (sdk / store.LOG).read_text()
    assert "### configure ExecuTorch" in log and "-DEXECUTORCH_SELECT_OPS_LIST=aten::add.out" in log
    assert "fake executorch: offline" in log  # FETCHCONTENT_FULLY_DISCONNECTED reached CMake
    version = (sdk / "version.txt").read_text().splitlines()
    assert version[0] == "1.5.0" and version[1].startswith("tree-")
    registered = json.loads((sdk / store.KERNELS).read_text())
    assert set(registered["operators"]) == {"aten::add.out", *QUANTIZED, *CORTEX_M, *PRIM}
    assert registered["max_kernel_num"] == 7
    record = json.loads((sdk / store.RECORD).read_text())
    assert record["board"] == {"name": "qemu-m55", "cpu": "cortex-m55", "npu": None}
    assert record["device"] == "qemu-m55" and record["key"] == plan.key
    assert record["sources"]["executorch"] == str(trees.executorch)

    started = time.monotonic()
    again = planned(trees, BOARDS["qemu-m55"], tmp_path / "sdk", ("aten::add.out", QUANTIZED[0]))
    second = build.build_sdk(again, lines.append)
    assert not second.built_now and second.sdk.prefix == sdk
    assert time.monotonic() - started < 30  # nothing compiled (a generous bound, not a goal)
    found = store.find_sdk(BOARDS["qemu-m55"], "qemu-m55", tmp_path / "sdk")
    assert found is not None and found.prefix == sdk

    (trees.executorch / "runtime" / "executor" / "program.h").write_text("// edited\n")
    assert planned(trees, BOARDS["qemu-m55"], tmp_path / "sdk", ("aten::add.out",)).key != plan.key


def test_corstone_300_sdk_carries_the_delegate_and_the_u55_driver(tmp_path: Path) -> None:
    trees = make_trees(tmp_path / "src")
    plan = planned(trees, BOARDS["corstone-300"], tmp_path / "sdk", ("aten::relu.out",))
    sdk = build.build_sdk(plan, lambda line: None).sdk.prefix
    assert (sdk / "lib/libexecutorch_delegate_ethos_u.a").is_file()
    assert (sdk / "lib/libethosu_core_driver.a").is_file()
    assert (sdk / "include/ethosu_driver.h").is_file() and (sdk / "include/pmu_ethosu.h").is_file()
    log = (sdk / store.LOG).read_text()
    assert "-DETHOSU_TARGET_NPU_CONFIG=ethos-u55-128" in log
    assert json.loads((sdk / store.RECORD).read_text())["board"]["npu"] == "ethos-u55-128"


def test_a_failed_stage_keeps_its_log_and_leaves_no_sdk(tmp_path: Path) -> None:
    trees = make_trees(tmp_path / "src")
    cmake = trees.executorch / "CMakeLists.txt"
    good = cmake.read_text()
    cmake.write_text(good.replace("if(FAIL_ON_PURPOSE)", "if(TRUE)"))
    plan = planned(trees, BOARDS["qemu-m55"], tmp_path / "sdk", ("aten::add.out",))
    with pytest.raises(SdkBuildFailed) as caught:
        build.build_sdk(plan, lambda line: None)
    assert caught.value.message.startswith("configure ExecuTorch failed (exit 1)")
    assert "fake executorch: failing as asked" in caught.value.message
    assert Path(caught.value.log_path).is_file()
    assert store.read_sdk(plan.prefix) is None
    assert store.find_sdk(BOARDS["qemu-m55"], None, tmp_path / "sdk") is None
    cmake.write_text(good)
    fixed = planned(trees, BOARDS["qemu-m55"], tmp_path / "sdk", ("aten::add.out",))
    assert build.build_sdk(fixed, lambda line: None).built_now


class Tiny(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + x


def test_the_command_takes_kernels_from_a_real_program_and_prints_the_sdk(
    tmp_path: Path,
    session: Session,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--ops-from a .pte exported by hil (the portable recipe): its operator table decides the
    select list; the printed path is the SDK the qemu-m55 runner then links by itself."""
    pte = session.export(Case("sdk_tiny", Tiny, seeded((1, 8))), "host", "portable").pte_path
    trees = make_trees(tmp_path / "src")
    monkeypatch.setenv("HIL_SDK_DIR", str(tmp_path / "sdk"))
    monkeypatch.delenv("EXECUTORCH_ROOT", raising=False)
    argv = [
        "sdk",
        "build",
        "--executorch",
        str(trees.executorch),
        "--cmsis-nn",
        str(trees.cmsis_nn),
        "--board",
        "qemu-m55",
        "--ops-from",
        str(pte),
    ]
    assert cli.main([*argv, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "-DEXECUTORCH_SELECT_OPS_LIST=aten::add.out,aten::relu.out" in dry
    assert "2 portable operators from 1 programs" in dry
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    from hil.sdk import firmware

    config = firmware.firmware_config(session.devices.get("qemu-m55"))
    assert firmware.bare_metal_executorch_root(config) == Path(printed)

    # the same request again answers from what it stored: no program is read, nothing planned
    monkeypatch.setattr(
        "hil.sdk_command._programs", lambda *a: pytest.fail("the programs were read again")
    )
    assert cli.main(argv) == 0
    again = capsys.readouterr().out
    assert "already built for this very request" in again
    assert again.strip().splitlines()[-1] == printed
    monkeypatch.undo()
    monkeypatch.setenv("HIL_SDK_DIR", str(tmp_path / "sdk"))
    # an edited source of the tree is another request: collected and planned again
    (trees.executorch / "runtime" / "executor" / "program.h").write_text("// edited\n")
    assert cli.main([*argv, "--dry-run"]) == 0
    assert "2 portable operators from 1 programs" in capsys.readouterr().out
