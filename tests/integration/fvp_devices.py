"""FVP device files for the fake FVP (tests/fakes/fvp): the echo runner, the only bare-metal
runner buildable here, under QEMU mps3-an547 behind the fake's terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from debug_builds import with_debug_commands

RECIPE_OPTIONS = {
    "ethos-u55-128": {"system_config": "Ethos_U55_High_End_Embedded", "memory_mode": "Shared_Sram"},
    "ethos-u85-256": {"system_config": "Ethos_U85_SYS_DRAM_Mid", "memory_mode": "Sram_Only"},
}


# The fake runs every image in QEMU mps3-an547 (the SSE-300 map). A Corstone-320 runner built
# for the SSE-320's own map (boot ROM at 0x11000000, BRAM at 0x12000000, UART0 at 0x58203000)
# cannot run there: these defines and the FVP's INITSVTOR parameter move it onto memory both
# maps have, booting from ITCM, with QEMU's UART0 (tests/fakes/fvp/CONTRACT.md).
QEMU_320 = {
    "firmware": {
        "preset": "corstone-320",
        "defines": {
            "HIL_VECTOR_REGION": "ITCM",
            "HIL_CODE_REGION": "DDR",
            "HIL_DATA_REGION": "SRAM",
            "HIL_UART0_BASE": "0x49303000",
        },
    },
    "params": {"mps4_board.subsystem.iotss3_systemcontrol.INITSVTOR_RST": "0x10000000"},
}


def device(
    folder: Path,
    name: str,
    npu: str = "ethos-u55-128",
    *,
    debug_commands: bool = False,
    **connection: Any,
) -> None:
    """An FVP device file for the echo runner (the only bare-metal runner buildable here);
    `debug_commands`: a test build of it, which hangs or faults on request."""
    platform = "corstone-300" if "u55" in npu else "corstone-320"
    if platform == "corstone-320":
        connection = {**QEMU_320, **connection}
    data = {
        "name": name,
        "kind": "fvp",
        "npu": npu,
        "recipes": [
            {"name": "ethos-u", "options": {"accelerator_config": npu, **RECIPE_OPTIONS[npu]}}
        ],
        "latency": {
            "timing": "emulated",
            "warmup": 1,
            "min_runs": 3,
            "min_time_s": 0.001,
            "max_runs": 5,
        },
        "connection": {
            "platform": platform,
            "engine": "echo",
            "firmware": platform,
            "time_limit_s": 300,
            "boot_timeout_s": 60,
            "reply_timeout_s": 5,
            "bytes_per_s": 10000,
            "run_timeout_s": 60,
            **connection,
        },
    }
    if debug_commands:
        data = with_debug_commands(data)
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
