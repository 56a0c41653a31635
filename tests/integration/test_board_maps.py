"""Each bare-metal preset's memory map and board addresses, built for real (echo engine) and
read back from the ELF, against the public values in board_maps.py."""

from __future__ import annotations

import shutil

import pytest

from hil.errors import DeployError
from hil.sdk import firmware
from tests.integration.board_maps import MAPS, BoardMap
from tests.integration.elf_facts import memory_regions, read_words, sections, symbols

pytestmark = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None,
    reason="needs gcc-arm-none-eabi libnewlib-arm-none-eabi (make setup installs them)",
)
ECHO = {"HIL_ENGINE_EXECUTORCH": "OFF", "HIL_ETHOS_U": "OFF"}


def build(preset: str, **defines: str) -> firmware.BuiltRunner:
    return firmware.build(firmware.FirmwareConfig(preset, {**ECHO, **defines}))


def region_of(board: BoardMap, address: int, size: int) -> str | None:
    for name, (origin, length) in board.regions.items():
        if origin <= address and address + size <= origin + length:
            return name
    return None


@pytest.mark.parametrize("preset", sorted(MAPS))
def test_the_preset_follows_the_public_memory_map(preset: str) -> None:
    board = MAPS[preset]
    runner = build(preset)
    elf = runner.binary
    assert memory_regions(elf.parent / "hil-runner.ld") == board.regions
    placed = {s.name: region_of(board, s.addr, s.size) for s in sections(elf) if s.size}
    assert None not in placed.values(), placed  # every section inside one of the board's regions
    table = symbols(elf)
    assert table["hil_vectors"] == board.boot  # where the core reads its reset vector
    uart0, cpu_hz, npu_base, npu_irq = read_words(elf, table["hil_board_facts"], 4)
    assert (uart0, cpu_hz) == (board.uart0, board.cpu_hz)
    assert board.npu is not None and (npu_base, npu_irq) == board.npu


def test_corstone_320_boots_from_its_rom_and_runs_from_bram() -> None:
    """The layout ExecuTorch's Corstone-320 script uses: vectors in BROM, code and data in
    BRAM, the stack in the 32 KiB DTCM."""
    elf = build("corstone-320").binary
    found = {s.name: s for s in sections(elf)}
    assert found[".vectors"].addr == 0x11000000
    assert 0x12000000 <= found[".text"].addr < 0x12200000
    assert 0x12000000 <= found[".bss"].addr < 0x12200000
    assert found[".stack"].addr + found[".stack"].size == 0x30008000


def test_a_device_file_moves_a_pool_and_resizes_it() -> None:
    """connection.firmware.defines reach the linker: the planned pool in SRAM, 1 MiB."""
    elf = build(
        "corstone-300", HIL_POOL_PLANNED_REGION="SRAM", HIL_POOL_PLANNED_SIZE="0x100000"
    ).binary
    table = symbols(elf)
    assert 0x31000000 <= table["pool_planned"] < 0x31200000
    pools = {s.name: s for s in sections(elf)}
    assert pools[".pools.sram"].size >= 0x100000


def test_a_pool_that_does_not_fit_its_region_is_refused_at_build_time() -> None:
    with pytest.raises(DeployError, match=r"(overflow|will not fit)"):
        build("corstone-320", HIL_POOL_PLANNED_REGION="SRAM", HIL_POOL_PLANNED_SIZE="0x800000")


def test_a_region_the_board_lacks_is_refused_with_its_regions() -> None:
    with pytest.raises(DeployError, match=r"HIL_CODE_REGION is 'BROM'.*does not have"):
        build("corstone-300", HIL_CODE_REGION="BROM")
