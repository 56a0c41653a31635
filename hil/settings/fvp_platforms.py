"""The Corstone FVPs hil drives: binary names, parameter names and NPU configurations.

Facts here come from Arm's FVP documentation and ExecuTorch's own FVP command lines
(executorch/backends/arm/test/runner_utils.py): the Corstone-300 model keeps its NPU at the
top level (`ethosu.*`) and its CPU as `cpu0`, the Corstone-320 model puts both under
`mps4_board.subsystem`. Nothing here touches the machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class FvpPlatform:
    """One Corstone FVP: how it is called and how its parameters are spelled."""

    name: str  # "corstone-300"
    binary: str  # executable name as Arm ships it
    board: str  # prefix of board components: UART, telnet terminals, visualisation
    cpu: str  # prefix of the CPU's semihosting parameters
    npu: str  # prefix of the Ethos-U parameters
    npu_family: str  # accelerator configs this FVP's NPU accepts start with this
    macs: tuple[int, ...]  # the num_macs values the NPU model offers
    firmware_preset: str  # firmware/CMakePresets.json preset of the runner for this platform
    cpu_name: str
    quiet_params: tuple[tuple[str, str], ...] = ()  # extra parameters to run headless

    @property
    def num_macs_param(self) -> str:
        return f"{self.npu}.num_macs"

    @property
    def npu_args_param(self) -> str:
        return f"{self.npu}.extra_args"

    def terminal(self, index: int = 0) -> str:
        return f"{self.board}.telnetterminal{index}"

    def uart(self, index: int = 0) -> str:
        return f"{self.board}.uart{index}"

    def semihosting(self, what: str) -> str:
        return f"{self.cpu}.semihosting-{what}"

    def describe(self) -> str:
        npu = self.npu_family.replace("ethos-u", "Ethos-U")
        return f"{self.name} FVP ({self.binary}, {self.cpu_name} + {npu})"


PLATFORMS: Mapping[str, FvpPlatform] = MappingProxyType(
    {
        "corstone-300": FvpPlatform(
            name="corstone-300",
            binary="FVP_Corstone_SSE-300_Ethos-U55",
            board="mps3_board",
            cpu="cpu0",
            npu="ethosu",
            npu_family="ethos-u55",
            macs=(32, 64, 128, 256),
            firmware_preset="corstone-300",
            cpu_name="Cortex-M55",
            quiet_params=(("mps3_board.visualisation.disable-visualisation", "1"),),
        ),
        "corstone-320": FvpPlatform(
            name="corstone-320",
            binary="FVP_Corstone_SSE-320",
            board="mps4_board",
            cpu="mps4_board.subsystem.cpu0",
            npu="mps4_board.subsystem.ethosu",
            npu_family="ethos-u85",
            macs=(128, 256, 512, 1024, 2048),
            firmware_preset="corstone-320",
            cpu_name="Cortex-M85",
            quiet_params=(
                ("mps4_board.visualisation.disable-visualisation", "1"),
                ("vis_hdlcd.disable_visualisation", "1"),
            ),
        ),
    }
)


def npu_macs(accelerator_config: str) -> int:
    """ "ethos-u85-256" -> 256: the MAC count an accelerator config names."""
    return int(accelerator_config.rsplit("-", 1)[1])


def install_steps(platform: FvpPlatform) -> str:
    """How to get this FVP onto the machine (the fix of every 'FVP missing' message)."""
    number = platform.name.split("-")[1]
    return (
        f"install the Arm Corstone-{number} Ecosystem FVP: download it from developer.arm.com "
        "(Arm Ecosystem FVPs, Linux 64-bit), run its installer and accept the EULA "
        f"(./FVP_Corstone_SSE-{number}.sh --i-agree-to-the-contained-eula --no-interactive "
        f"-d ~/fvp/corstone-{number}), then put the folder holding {platform.binary} "
        "(models/Linux64_GCC-9.3) on PATH, or name it in $HIL_FVP_DIR or in the device file's "
        "connection.fvp_dir; `hil doctor` checks the result (docs/targets/fvp.md)"
    )
