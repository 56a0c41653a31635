"""`hil sdk build` checks the trees first and names every missing piece with its fix (against
small stand-in trees: tests/fakes/sdk_trees.py; the compiler probes run the real
arm-none-eabi-gcc)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.sdk_trees import DRIVER_API, Trees, make_trees

from hil.errors import SdkSourceMissing
from hil.sdk import sources
from hil.sdk.boards import BOARDS, SdkBoard

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None,
    reason="arm-none-eabi-gcc not installed (make setup installs it)",
)
QEMU, U55, U85 = BOARDS["qemu-m55"], BOARDS["corstone-300"], BOARDS["corstone-320"]
NEW_CMAKE = (3, 31)


def resolved(trees: Trees, board: SdkBoard) -> sources.Sources:
    return sources.resolve(board, trees.executorch, trees.cmsis_nn, trees.driver, trees.cmsis)


def problems(trees: Trees, board: SdkBoard, cmake: tuple[int, int] | None = NEW_CMAKE) -> str:
    with pytest.raises(SdkSourceMissing) as caught:
        sources.check(resolved(trees, board), board, cmake)
    return caught.value.message


@pytest.mark.parametrize("board", [QEMU, U55, U85], ids=lambda b: b.name)
def test_complete_trees_pass_for_every_board(tmp_path: Path, board: SdkBoard) -> None:
    sources.check(resolved(make_trees(tmp_path), board), board, NEW_CMAKE)


def test_a_board_without_an_npu_needs_no_driver(tmp_path: Path) -> None:
    trees = make_trees(tmp_path)
    shutil.rmtree(trees.driver)
    shutil.rmtree(trees.cmsis)
    chosen = resolved(trees, QEMU)
    assert chosen.ethos_u_driver is None and chosen.cmsis is None
    sources.check(chosen, QEMU, NEW_CMAKE)


def test_an_empty_submodule_is_named_with_the_git_command(tmp_path: Path) -> None:
    trees = make_trees(tmp_path)
    shutil.rmtree(trees.executorch / "third-party/flatcc")
    (trees.executorch / "third-party/flatcc").mkdir()
    text = problems(trees, QEMU)
    assert "the submodule third-party/flatcc is empty" in text
    assert f"git -C {trees.executorch} submodule update --init third-party/flatcc" in text


def test_every_missing_piece_is_reported_at_once(tmp_path: Path) -> None:
    trees = make_trees(tmp_path)
    (trees.executorch / "tools/cmake/preset/arm_baremetal.cmake").unlink()
    shutil.rmtree(trees.cmsis_nn)
    shutil.rmtree(trees.cmsis)
    text = problems(trees, U55, cmake=(3, 25))
    assert text.startswith(
        "cannot build an ExecuTorch SDK for corstone-300 (cortex-m55 + "
        "ethos-u55-128): 4 missing pieces"
    )
    assert "too old for hil's bare-metal build" in text
    # the CMSIS-NN commit ExecuTorch pins is part of the fix
    assert (
        "git clone https://github.com/ARM-software/CMSIS-NN && git -C CMSIS-NN checkout "
        "dbf45dbfcc515421dd6099037d3e2637b90748c8" in text
    )
    assert "no CMSIS core headers" in text
    assert "cmake 3.25 is too old" in text


def test_a_driver_without_a_function_the_build_calls_is_too_old(tmp_path: Path) -> None:
    api = tuple(name for name in DRIVER_API if name != "ethosu_invoke_v3")
    trees = make_trees(tmp_path, driver_api=(*api, "ETHOSU_PMU_Enable"))
    text = problems(trees, U55)
    assert "is too old: its headers declare no ETHOSU_PMU_CNTR_Enable" in text
    assert "ethosu_invoke_v3" in text
    # the delegate's own weak fallbacks are not required of the driver
    assert "ethosu_reserve_driver_ex" not in text


def test_a_u85_board_needs_a_driver_that_drives_the_u85(tmp_path: Path) -> None:
    trees = make_trees(tmp_path)
    (trees.driver / "src/ethosu_device_u85.c").unlink()
    sources.check(resolved(trees, U55), U55, NEW_CMAKE)  # the U55 is served
    assert "has no ethosu_device_u85.c: it cannot drive the ethos-u85-256" in problems(trees, U85)


def test_a_compiler_that_does_not_know_the_cpu_is_named(tmp_path: Path) -> None:
    odd = replace(QEMU, name="odd", cpu="cortex-m99")
    text = problems(make_trees(tmp_path), odd)
    assert "arm-none-eabi-gcc cannot compile for -mcpu=cortex-m99" in text


def test_the_trees_default_to_where_executorch_setup_puts_them(tmp_path: Path) -> None:
    et = make_trees(tmp_path).executorch
    chosen = sources.resolve(U85, et)
    scratch = et / "examples/arm/arm-scratch/ethos-u/core_software"
    assert (chosen.cmsis_nn, chosen.ethos_u_driver, chosen.cmsis) == (
        scratch / "cmsis-nn",
        scratch / "core_driver",
        scratch / "cmsis",
    )


def test_not_an_executorch_checkout(tmp_path: Path) -> None:
    trees = make_trees(tmp_path)
    text = problems(replace(trees, executorch=tmp_path / "nowhere"), QEMU)
    assert "is not an ExecuTorch checkout" in text


def test_a_checkout_not_named_executorch_is_refused_before_cmake_would(tmp_path: Path) -> None:
    """ExecuTorch's CMakeLists.txt refuses any other folder name, after minutes of exports."""
    trees = make_trees(tmp_path)
    renamed = trees.executorch.rename(trees.executorch.parent / "et-src")
    text = problems(replace(trees, executorch=renamed), QEMU)
    assert "not in a folder named `executorch`" in text and "mv " in text
