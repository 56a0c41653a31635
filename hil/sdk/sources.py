"""The source trees an SDK is built from, and every piece they must hold, checked first.

`hil sdk build` builds sources the user already has; it never downloads. So before anything
is configured each tree is checked for what the build will read, and each missing piece is
named with what to do: an empty submodule, an ExecuTorch without the bare-metal preset, a
CMSIS-NN or CMSIS without its headers, an Ethos-U driver that lacks a function the delegate or
hil's runner calls (too old) or the board's NPU, an Arm compiler that lacks the CPU or newlib,
CMake too old. All problems are reported at once, in one SdkSourceMissing.

Where a tree is not given, it is looked for where ExecuTorch's examples/arm/setup.sh puts it
(`examples/arm/arm-scratch/ethos-u/core_software/{core_driver,cmsis,cmsis-nn}`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hil.bundled import firmware_dir
from hil.errors import SdkSourceMissing, TargetUnavailable
from hil.sdk import firmware
from hil.sdk.boards import SdkBoard
from hil.sdk.firmware import CMAKE_FIX, CMAKE_MINIMUM

SCRATCH = Path("examples/arm/arm-scratch/ethos-u/core_software")
TOOLCHAIN_FILE = Path("examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake")
PRESET_FILE = Path("tools/cmake/preset/arm_baremetal.cmake")
# Submodules ExecuTorch's CMake reads on a bare-metal build, even where unused there.
SUBMODULES = (
    "third-party/flatbuffers",
    "third-party/flatcc",
    "third-party/gflags",
    "third-party/json",
    "backends/xnnpack/third-party/FXdiv",
)
DELEGATE_SOURCES = (
    "backends/arm/runtime/EthosUBackend.cpp",
    "backends/arm/runtime/EthosUBackend_Cortex_M.cpp",
)
DRIVER_CALL = re.compile(r"\b((?:ethosu|ETHOSU_PMU)_\w+)\s*\(")
WEAK_DECLARATION = re.compile(r"__attribute__\s*\(\(\s*weak\s*\)\)[^;{(]*?\b(ethosu_\w+)\s*\(")
CMSIS_NN_PIN = re.compile(r'set\(\s*CMSIS_NN_VERSION\s+"([0-9a-f]{7,40})"')


@dataclass(frozen=True)
class Sources:
    """The trees one SDK is built from; the driver and CMSIS only for a board with an NPU."""

    executorch: Path
    cmsis_nn: Path
    ethos_u_driver: Path | None
    cmsis: Path | None

    def trees(self) -> dict[str, Path]:
        named = {"executorch": self.executorch, "cmsis_nn": self.cmsis_nn}
        if self.ethos_u_driver is not None:
            named["ethos_u_driver"] = self.ethos_u_driver
        if self.cmsis is not None:
            named["cmsis"] = self.cmsis
        return named


@dataclass(frozen=True)
class Problem:
    what: str
    fix: str


def executorch_version(tree: Path) -> str:
    version = tree / "version.txt"
    return version.read_text().strip() if version.is_file() else "unknown"


def git_commit(tree: Path) -> str | None:
    """The checkout's commit, when the tree is a git work tree (None for an unpacked archive)."""
    if not (tree / ".git").exists() or shutil.which("git") is None:
        return None
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def cmsis_nn_pin(executorch: Path) -> str | None:
    """The CMSIS-NN commit this ExecuTorch fetches by default (its own CMakeLists)."""
    cmake = executorch / "backends/cortex_m/CMakeLists.txt"
    found = CMSIS_NN_PIN.search(cmake.read_text()) if cmake.is_file() else None
    return found.group(1) if found else None


def resolve(
    board: SdkBoard,
    executorch: Path,
    cmsis_nn: Path | None = None,
    ethos_u_driver: Path | None = None,
    cmsis: Path | None = None,
) -> Sources:
    """The trees to build from: the ones given, else where ExecuTorch's setup.sh puts them.
    Nothing is checked here (see `check`)."""
    et = executorch.expanduser().resolve()
    scratch = et / SCRATCH

    def pick(given: Path | None, name: str) -> Path:
        return (given.expanduser() if given else scratch / name).resolve()

    npu = board.npu is not None
    return Sources(
        executorch=et,
        cmsis_nn=pick(cmsis_nn, "cmsis-nn"),
        ethos_u_driver=pick(ethos_u_driver, "core_driver") if npu else None,
        cmsis=pick(cmsis, "cmsis") if npu else None,
    )


def check(sources: Sources, board: SdkBoard, cmake_version: tuple[int, int] | None) -> None:
    """Raise SdkSourceMissing naming every missing piece, or return: the build may start."""
    problems = [
        *_executorch_problems(sources.executorch),
        *_cmsis_nn_problems(sources.cmsis_nn, sources.executorch),
        *_driver_problems(sources, board),
        *_compiler_problems(board),
        *_cmake_problems(cmake_version),
    ]
    if problems:
        lines = [f"  - {p.what}\n    fix: {p.fix}" for p in problems]
        raise SdkSourceMissing(
            f"cannot build an ExecuTorch SDK for {board.describe()}: "
            f"{len(problems)} missing piece{'s' if len(problems) > 1 else ''}\n" + "\n".join(lines),
            fix="get each piece as its line says, then run the same `hil sdk build` again",
        )


def _executorch_problems(tree: Path) -> Iterable[Problem]:
    if not (tree / "CMakeLists.txt").is_file() or not (tree / "runtime").is_dir():
        yield Problem(
            f"{tree} is not an ExecuTorch checkout (no CMakeLists.txt and runtime/)",
            "pass --executorch the folder of `git clone https://github.com/pytorch/"
            "executorch` (the version of the installed package)",
        )
        return
    if tree.name != "executorch":  # its CMakeLists.txt refuses any other name, 2 min in
        yield Problem(
            f"{tree} is not in a folder named `executorch`: ExecuTorch's CMake refuses to "
            "configure anywhere else (pytorch/executorch#6475)",
            f"rename it: mv {tree} {tree.parent / 'executorch'}, or clone into .../executorch",
        )
    for needed in (PRESET_FILE, TOOLCHAIN_FILE):
        if not (tree / needed).is_file():
            yield Problem(
                f"{tree} has no {needed}: an ExecuTorch too old for hil's bare-metal "
                "build (the Arm bare-metal preset arrived in 1.0)",
                "check out ExecuTorch 1.0 or newer (the installed package's version is best)",
            )
    for sub in SUBMODULES:
        folder = tree / sub
        if not folder.is_dir() or not any(folder.iterdir()):
            yield Problem(
                f"the submodule {sub} is empty ({folder}): ExecuTorch's CMake reads it",
                f"git -C {tree} submodule update --init {sub}",
            )


def _cmsis_nn_problems(tree: Path, executorch: Path) -> Iterable[Problem]:
    if (tree / "Include" / "arm_nnfunctions.h").is_file() and (tree / "CMakeLists.txt").is_file():
        return
    pin = cmsis_nn_pin(executorch)
    at = f" && git -C CMSIS-NN checkout {pin}" if pin else ""
    yield Problem(
        f"no CMSIS-NN at {tree} (Include/arm_nnfunctions.h and CMakeLists.txt): the "
        "cortex_m kernels are built on it",
        f"git clone https://github.com/ARM-software/CMSIS-NN{at}, then pass --cmsis-nn CMSIS-NN",
    )


def _driver_problems(sources: Sources, board: SdkBoard) -> Iterable[Problem]:
    driver, cmsis = sources.ethos_u_driver, sources.cmsis
    if driver is None or cmsis is None or board.npu is None:
        return
    clone = (
        "git clone https://gitlab.arm.com/artificial-intelligence/ethos-u/"
        "ethos-u-core-driver, then pass --ethos-u-driver ethos-u-core-driver (or run "
        "ExecuTorch's examples/arm/setup.sh)"
    )
    headers = sorted((driver / "include").glob("*.h"))
    if not headers or not (driver / "CMakeLists.txt").is_file():
        yield Problem(
            f"no Ethos-U core driver at {driver} (include/ethosu_driver.h and "
            f"CMakeLists.txt): {board.name}'s {board.npu} needs it",
            clone,
        )
    else:
        declared = "\n".join(h.read_text(errors="replace") for h in headers)
        missing = [
            call
            for call in sorted(driver_calls(sources.executorch))
            if not re.search(rf"\b{call}\s*\(", declared)
        ]
        if missing:
            yield Problem(
                f"the Ethos-U driver at {driver} is too old: its headers declare no "
                f"{', '.join(missing)} (called by ExecuTorch's delegate or hil's "
                "runner)",
                "update it to the release your ExecuTorch names "
                "(examples/arm/setup.sh), or pass a newer --ethos-u-driver",
            )
        family = "u85" if board.npu_arch == "u85" else "u55_u65"
        device = driver / "src" / f"ethosu_device_{family}.c"
        if not device.is_file():
            yield Problem(
                f"the Ethos-U driver at {driver} has no {device.name}: it cannot "
                f"drive the {board.npu}",
                "pass a driver release that supports it (the U85 arrived in 24.05)",
            )
    if not (cmsis / "CMSIS" / "Core" / "Include" / "cmsis_compiler.h").is_file():
        yield Problem(
            f"no CMSIS core headers at {cmsis} (CMSIS/Core/Include/cmsis_compiler.h): "
            "the Ethos-U driver includes them",
            "git clone https://github.com/ARM-software/CMSIS_6 (or CMSIS_5), then "
            "pass --cmsis that folder",
        )


def driver_calls(executorch: Path) -> set[str]:
    """The driver functions the build will call: the delegate's (minus those it declares weak
    itself, with a fallback) and those of hil's runner start-up and PMU report."""
    calls: set[str] = set()
    for relative in DELEGATE_SOURCES:
        path = executorch / relative
        if path.is_file():
            text = path.read_text(errors="replace")
            weak = set(WEAK_DECLARATION.findall(text))
            calls |= {c for c in DRIVER_CALL.findall(text) if c not in weak}
    glue = firmware_dir() / "src" / "platform" / "cortex_m" / "ethos_u"
    for path in sorted(glue.glob("*.c")):
        calls |= set(DRIVER_CALL.findall(path.read_text(errors="replace")))
    return calls


def _compiler_problems(board: SdkBoard) -> Iterable[Problem]:
    install = (
        "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi "
        "libstdc++-arm-none-eabi-newlib (or Arm GNU Toolchain 13+ on PATH)"
    )
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-g++"):
        if shutil.which(tool) is None:
            yield Problem(f"{tool} is not on PATH", install)
            return
    probe = subprocess.run(
        [
            "arm-none-eabi-gcc",
            f"-mcpu={board.gcc_cpu}",
            "-mthumb",
            "-mfloat-abi=hard",
            "-x",
            "c",
            "-c",
            "-o",
            "/dev/null",
            "-",
        ],
        input="int hil_probe;\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        said = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        yield Problem(
            f"arm-none-eabi-gcc cannot compile for -mcpu={board.gcc_cpu} ({said})",
            "install an Arm GNU toolchain that knows the CPU (GCC 11+ for the M55)",
        )
    for library in ("libc.a", "libstdc++.a"):
        found = subprocess.run(
            [
                "arm-none-eabi-gcc",
                f"-mcpu={board.gcc_cpu}",
                "-mthumb",
                "-mfloat-abi=hard",
                f"-print-file-name={library}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
        if not Path(found).is_absolute():
            yield Problem(
                f"arm-none-eabi-gcc has no {library} for {board.gcc_cpu} (newlib)", install
            )


def _cmake_problems(version: tuple[int, int] | None) -> Iterable[Problem]:
    if version is None:
        yield Problem("cmake is not installed", CMAKE_FIX)
    elif version < CMAKE_MINIMUM:
        yield Problem(
            f"cmake {version[0]}.{version[1]} is too old: ExecuTorch's install and "
            f"hil's runner need {CMAKE_MINIMUM[0]}.{CMAKE_MINIMUM[1]}",
            CMAKE_FIX,
        )


def cmake_binary() -> tuple[str | None, tuple[int, int] | None]:
    """The CMake the firmware builds with (pip's first) and its version; (None, None) when
    there is none at all."""
    try:
        binary = firmware.find_cmake()
    except TargetUnavailable:
        return None, None
    text = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"(\d+)\.(\d+)", text)
    return binary, (int(found.group(1)), int(found.group(2))) if found else None
