"""The boards an SDK is built for: the CPU ExecuTorch is compiled for and the NPU, if any.

A board here is what decides how ExecuTorch and the Ethos-U driver are compiled, nothing
more: the runner's memory map and UART stay in firmware/ (cmake/boards.cmake). Each board
serves the firmware presets that share its CPU and NPU, and names the device whose suites
choose its kernels when `--ops-from` is not given.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType


@dataclass(frozen=True)
class SdkBoard:
    """What an SDK is built for."""

    name: str  # "qemu-m55", "corstone-300", "corstone-320"
    cpu: str  # ExecuTorch's TARGET_CPU
    npu: str | None  # the Ethos-U configuration the driver is built for; None: no delegate
    presets: tuple[str, ...]  # firmware presets whose runner links this SDK
    device: str  # the device whose suites select the kernels by default

    @property
    def gcc_cpu(self) -> str:
        """The -mcpu GCC is given: GCC 12 knows no cortex-m85, and ExecuTorch's toolchain file
        builds the M85 as Cortex-M55 code (which the M85 runs)."""
        return "cortex-m55" if self.cpu == "cortex-m85" else self.cpu

    @property
    def npu_arch(self) -> str | None:
        """ "u55", "u65" or "u85": the driver's device source and the delegate's define."""
        return self.npu.split("-")[1] if self.npu else None

    def describe(self) -> str:
        npu = f" + {self.npu}" if self.npu else ", no NPU"
        return f"{self.name} ({self.cpu}{npu})"


BOARDS: Mapping[str, SdkBoard] = MappingProxyType(
    {
        "qemu-m55": SdkBoard("qemu-m55", "cortex-m55", None, ("cortex-m55",), "qemu-m55"),
        "corstone-300": SdkBoard(
            "corstone-300",
            "cortex-m55",
            "ethos-u55-128",
            ("corstone-300", "corstone-300-board"),
            "fvp-u55",
        ),
        "corstone-320": SdkBoard(
            "corstone-320",
            "cortex-m85",
            "ethos-u85-256",
            ("corstone-320", "corstone-320-board"),
            "fvp-u85",
        ),
    }
)


def board_of_preset(preset: str, npu: str | None = None) -> SdkBoard | None:
    """The board a firmware preset's runner is built for (None: not a bare-metal preset); a
    device's own NPU configuration (more MACs, say) replaces the board's default."""
    for board in BOARDS.values():
        if preset in board.presets:
            return replace(board, npu=npu) if npu and board.npu else board
    return None


def command_line(trees: Mapping[str, str], board: SdkBoard, name: str | None = None) -> str:
    """`hil sdk build` for `board` (or the device `name`) from the source trees by name
    (executorch, cmsis_nn, ethos_u_driver, cmsis); placeholders for trees not known."""
    checkout = trees.get("executorch", "<executorch checkout>")
    words = ["hil", "sdk", "build", "--executorch", checkout]
    if "cmsis_nn" in trees:
        words += ["--cmsis-nn", trees["cmsis_nn"]]
    if board.npu:
        words += [
            "--ethos-u-driver",
            trees.get("ethos_u_driver", "<ethos-u-core-driver>"),
            "--cmsis",
            trees.get("cmsis", "<CMSIS>"),
        ]
    words += ["--board", name or board.name]
    return " ".join(w if w.startswith("<") else shlex.quote(w) for w in words)
