"""The public memory maps the bare-metal presets must follow, written down apart from the
firmware's own table (firmware/cmake/boards.cmake, boards/board.h) so a change there is checked
against the sources, not against itself.

Sources: ExecuTorch's Arm runner linker scripts (examples/arm/executor_runner/Corstone-300.ld,
Corstone-320.ld, commit cff6f4dd), Zephyr's MPS3 Corstone-300 and MPS4 Corstone-320 board files
(boards/arm/mps3, boards/arm/mps4: UART0, NPU, clocks), QEMU 7.2's mps3-an547 (`info mtree`).
Where they disagree the firmware follows ExecuTorch's map and the README says so (Corstone-320:
Zephyr boots from and runs code in SRAM at 0x31000000 with INITSVTOR set to 0; ExecuTorch
keeps the FVP's default INITSVTOR, the boot ROM at 0x11000000, and runs code from BRAM).
"""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class BoardMap:
    preset: str
    regions: dict[str, tuple[int, int]]  # name -> (origin, size)
    boot: int  # where the vector table must be: the core's reset VTOR
    uart0: int
    cpu_hz: int
    npu: tuple[int, int] | None  # (register base, interrupt)


MAPS = {
    "cortex-m55": BoardMap(  # QEMU mps3-an547, the non-secure aliases (QEMU maps both)
        preset="cortex-m55",
        regions={
            "ITCM": (0x00000000, 512 * KIB),
            "DTCM": (0x20000000, 512 * KIB),
            "SRAM": (0x21000000, 4 * MIB),
            "DDR": (0x60000000, 1024 * MIB),
        },
        boot=0x00000000,  # alias of 0x10000000, where QEMU's SSE-300 boots
        uart0=0x49303000,
        cpu_hz=32_000_000,
        npu=(0x48102000, 56),
    ),
    "corstone-300": BoardMap(
        preset="corstone-300",
        regions={
            "ITCM": (0x10000000, 512 * KIB),
            "BRAM": (0x11000000, 1 * MIB),
            "DTCM": (0x30000000, 512 * KIB),
            "SRAM": (0x31000000, 2 * MIB),
            "DDR": (0x70000000, 0x60000000),
        },
        boot=0x10000000,
        uart0=0x49303000,
        cpu_hz=25_000_000,
        npu=(0x48102000, 56),
    ),
    "corstone-320": BoardMap(
        preset="corstone-320",
        regions={
            "ITCM": (0x10000000, 32 * KIB),
            "BROM": (0x11000000, 128 * KIB),
            "BRAM": (0x12000000, 2 * MIB),
            "DTCM": (0x30000000, 32 * KIB),
            "SRAM": (0x31000000, 4 * MIB),
            "DDR": (0x70000000, 256 * MIB),
        },
        boot=0x11000000,  # the SSE-320 FVP's default INITSVTOR
        uart0=0x58203000,
        cpu_hz=25_000_000,
        npu=(0x50004000, 16),
    ),
}
