"""The SDK build's CMake invocations per board, and the key that names the SDK (planning
runs no compiler: the tools are given as data)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from fakes.sdk_trees import make_trees

from hil.sdk import kernels, plan, sources
from hil.sdk.boards import BOARDS, SdkBoard

TOOLS = plan.Tools(
    cmake="/opt/cmake/bin/cmake",
    cmake_version="3.31",
    compiler_version="arm-none-eabi-gcc 12.2.1",
    python="/venv/bin/python3",
    flatc=Path("/venv/executorch/data/bin/flatc"),
    ninja=True,
)
DIGESTS = {
    "executorch": "e" * 64,
    "cmsis_nn": "c" * 64,
    "ethos_u_driver": "d" * 64,
    "cmsis": "s" * 64,
}


def planned(
    tmp_path: Path,
    board: SdkBoard,
    *,
    used: tuple[str, ...] = ("aten::add.out",),
    tools: plan.Tools = TOOLS,
    digests: dict[str, str] | None = None,
    jobs: int = 2,
    trees_at: Path | None = None,
) -> plan.SdkPlan:
    trees = make_trees(trees_at or tmp_path / "src")
    chosen = sources.resolve(board, trees.executorch, trees.cmsis_nn, trees.driver, trees.cmsis)
    selection = kernels.select(kernels.catalogue(trees.executorch), used)
    names = {k: v for k, v in (digests or DIGESTS).items() if k in chosen.trees()}
    return plan.make_plan(board, chosen, selection, tools, names, tmp_path / "sdk", jobs)


def options(step: plan.Step) -> dict[str, str]:
    pairs = [w[2:].split("=", 1) for w in step.command if w.startswith("-D")]
    return {k: v for k, v in pairs}


def test_qemu_m55_builds_executorch_without_the_delegate(tmp_path: Path) -> None:
    p = planned(tmp_path, BOARDS["qemu-m55"])
    assert [s.stage for s in p.steps] == [
        "configure ExecuTorch",
        "build ExecuTorch",
        "install ExecuTorch",
    ]
    o = options(p.steps[0])
    et = p.sources.executorch
    assert o["CMAKE_TOOLCHAIN_FILE"] == str(
        et / "examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake"
    )
    assert o["EXECUTORCH_BUILD_PRESET_FILE"] == str(et / "tools/cmake/preset/arm_baremetal.cmake")
    assert o["TARGET_CPU"] == "cortex-m55"
    assert o["CMAKE_INSTALL_PREFIX"] == str(p.prefix)
    assert p.prefix.parent == (tmp_path / "sdk").resolve() and p.prefix.name.startswith("qemu-m55-")
    expected = {
        "EXECUTORCH_BAREMETAL_SKIP_INSTALL": "OFF",
        "CMAKE_POSITION_INDEPENDENT_CODE": "OFF",
        "EXECUTORCH_PAL_DEFAULT": "minimal",
        "EXECUTORCH_BUILD_KERNELS_QUANTIZED": "ON",
        "EXECUTORCH_BUILD_CORTEX_M": "ON",
        "EXECUTORCH_BUILD_ARM_BAREMETAL": "OFF",
        "EXECUTORCH_BUILD_PTHREADPOOL": "OFF",
        "EXECUTORCH_BUILD_CPUINFO": "OFF",
        "EXECUTORCH_SELECT_OPS_LIST": "aten::add.out",
        "FETCHCONTENT_FULLY_DISCONNECTED": "ON",
        "CMSIS_NN_LOCAL_PATH": str(p.sources.cmsis_nn),
        "FLATC_EXECUTABLE": str(TOOLS.flatc),
        "PYTHON_EXECUTABLE": TOOLS.python,
    }
    assert {k: o[k] for k in expected} == expected
    assert o["MAX_KERNEL_NUM"] == str(p.selection.max_kernel_num) == "7"  # 1 + 2 + 2 + 2
    assert "ETHOS_SDK_PATH" not in o
    assert p.steps[0].command[:2] == (TOOLS.cmake, "-S") and "Ninja" in p.steps[0].command
    assert p.steps[1].command[-2:] == ("--parallel", "2")


def test_corstone_300_adds_the_delegate_and_builds_the_u55_driver(tmp_path: Path) -> None:
    p = planned(tmp_path, BOARDS["corstone-300"])
    assert len(p.steps) == 5
    o = options(p.steps[0])
    assert o["EXECUTORCH_BUILD_ARM_BAREMETAL"] == "ON"
    assert o["ETHOS_SDK_PATH"] == str(p.ethos_sdk) and p.ethos_sdk is not None
    assert p.ethos_sdk.is_relative_to(p.build_dir)
    assert o["FETCH_ETHOS_U_CONTENT"] == "OFF"
    assert p.steps[3].stage == "configure the Ethos-U driver (ethos-u55-128)"
    driver = options(p.steps[3])
    assert driver["ETHOSU_TARGET_NPU_CONFIG"] == "ethos-u55-128"
    assert driver["CMSIS_PATH"] == str(p.sources.cmsis)
    assert driver["TARGET_CPU"] == "cortex-m55"
    assert p.steps[3].command[2] == str(p.sources.ethos_u_driver)


def test_corstone_320_is_an_m85_with_the_u85(tmp_path: Path) -> None:
    p = planned(tmp_path, BOARDS["corstone-320"])
    assert options(p.steps[0])["TARGET_CPU"] == "cortex-m85"
    assert options(p.steps[3])["ETHOSU_TARGET_NPU_CONFIG"] == "ethos-u85-256"
    assert BOARDS["corstone-320"].gcc_cpu == "cortex-m55"  # GCC 12 has no -mcpu=cortex-m85


def test_make_without_ninja(tmp_path: Path) -> None:
    p = planned(tmp_path, BOARDS["qemu-m55"], tools=replace(TOOLS, ninja=False))
    assert "Unix Makefiles" in p.steps[0].command


def test_the_key_is_what_changes_the_sdk_and_nothing_else(tmp_path: Path) -> None:
    board = BOARDS["corstone-300"]
    key = planned(tmp_path / "a", board).key
    assert planned(tmp_path / "b", board).key == key  # the same inputs elsewhere
    assert planned(tmp_path / "c", board, jobs=16).key == key  # jobs are not the SDK
    moved = planned(tmp_path / "d", board, trees_at=tmp_path / "elsewhere" / "deeper")
    assert moved.key == key  # trees found at another path: same content, same SDK
    changed = {
        "a tree's content": planned(
            tmp_path / "e", board, digests={**DIGESTS, "executorch": "f" * 64}
        ),
        "the kernels": planned(tmp_path / "f", board, used=("aten::add.out", "aten::relu.out")),
        "the compiler": planned(
            tmp_path / "g", board, tools=replace(TOOLS, compiler_version="gcc 13")
        ),
        "the board": planned(tmp_path / "h", BOARDS["corstone-320"]),
        "the NPU's MACs": planned(tmp_path / "i", replace(board, npu="ethos-u55-256")),
    }
    for what, other in changed.items():
        assert other.key != key, what


def test_the_key_does_not_depend_on_where_the_sdk_folder_is(tmp_path: Path) -> None:
    board = BOARDS["qemu-m55"]
    first = planned(tmp_path / "x", board)
    shutil.rmtree(tmp_path / "x")
    assert planned(tmp_path / "y" / "z", board).key == first.key
