"""The SDK build as data: every CMake invocation for a board, and the key that names it.

Planning touches no compiler: it turns a board, the source trees, the kernel selection and
the tools into the commands `hil.sdk.build` runs, in order, and into the key of the SDK they
make. The key covers what changes the result (each tree's content digest, the board's CPU
and NPU, every CMake option with the trees' paths replaced by their names, the selected
kernels and the registry size, the compiler's and CMake's versions) and nothing that does
not (where the trees are, how many jobs).

What the options are, and why (each was a failure once, see firmware/README.md):

    EXECUTORCH_BUILD_PRESET_FILE     ExecuTorch's Arm bare-metal preset, with its toolchain file
    EXECUTORCH_BAREMETAL_SKIP_INSTALL=OFF, CMAKE_INSTALL_PREFIX
                                     an install hil's runner can find_package()
    CMAKE_POSITION_INDEPENDENT_CODE=OFF
                                     -fPIC exported to the runner makes its reset handler read
                                     __data_start through a GOT nothing copied: a fault at boot
    EXECUTORCH_PAL_DEFAULT=minimal   the posix PAL needs clock_gettime
    EXECUTORCH_BUILD_KERNELS_QUANTIZED, EXECUTORCH_BUILD_CORTEX_M (+ CMSIS_NN_LOCAL_PATH)
                                     int8 programs: quantized_decomposed and CMSIS-NN kernels
    EXECUTORCH_BUILD_ARM_BAREMETAL   the Ethos-U delegate, only where the board has an NPU
                                     (ETHOS_SDK_PATH: a folder holding the driver's headers)
    EXECUTORCH_BUILD_PTHREADPOOL=OFF, EXECUTORCH_BUILD_CPUINFO=OFF
                                     no threads on bare metal (ExecuTorch turns them off only
                                     with the Ethos-U delegate)
    EXECUTORCH_BUILD_ARM_ETDUMP, EXECUTORCH_BUILD_DEVTOOLS
                                     ETDump (the runner's TRACE): the preset turns the event
                                     tracer on and builds etdump and flatccrt for the CPU
    EXECUTORCH_SELECT_OPS_LIST, MAX_KERNEL_NUM
                                     only the programs' portable kernels, a registry for all
    FLATC_EXECUTABLE                 the flatc the executorch package ships (its pinned one)
    FETCHCONTENT_FULLY_DISCONNECTED  nothing is ever downloaded: a missing piece stops the build
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.sdk.boards import SdkBoard
from hil.sdk.kernels import Selection
from hil.sdk.sources import PRESET_FILE, TOOLCHAIN_FILE, Sources


@dataclass(frozen=True)
class Tools:
    """The programs the build runs, and how they identify themselves (part of the key)."""

    cmake: str
    cmake_version: str
    compiler_version: str  # arm-none-eabi-gcc --version's first line
    python: str  # runs ExecuTorch's codegen
    flatc: Path  # the executorch package's own
    ninja: bool  # Ninja when installed, else Unix Makefiles


@dataclass(frozen=True)
class Step:
    """One command of the build, with the stage name its progress line shows."""

    stage: str
    command: tuple[str, ...]


@dataclass(frozen=True)
class SdkPlan:
    key: str
    board: SdkBoard
    sources: Sources
    selection: Selection
    prefix: Path  # the SDK: the install prefix the runner links (EXECUTORCH_ROOT)
    build_dir: Path  # scratch, removed after a successful build
    steps: tuple[Step, ...]
    material: Mapping[str, Any]  # what the key covers, recorded in sdk.json

    @property
    def ethos_sdk(self) -> Path | None:
        """ExecuTorch's Ethos-U CMake wants an "SDK" folder: core_platform/ and
        core_software/core_driver; the build makes one of links to the given trees."""
        return self.build_dir / "ethos-u" if self.board.npu else None

    @property
    def driver_build(self) -> Path:
        return self.build_dir / "ethos-u-driver"

    @property
    def executorch_build(self) -> Path:
        return self.build_dir / "executorch"


def executorch_options(
    board: SdkBoard,
    sources: Sources,
    selection: Selection,
    tools: Tools,
    prefix: Path,
    ethos_sdk: Path | None,
) -> dict[str, str]:
    et = sources.executorch
    options = {
        "CMAKE_TOOLCHAIN_FILE": str(et / TOOLCHAIN_FILE),
        "TARGET_CPU": board.cpu,
        "EXECUTORCH_BUILD_PRESET_FILE": str(et / PRESET_FILE),
        "CMAKE_BUILD_TYPE": "Release",
        "CMAKE_INSTALL_PREFIX": str(prefix),
        "EXECUTORCH_BAREMETAL_SKIP_INSTALL": "OFF",
        "CMAKE_POSITION_INDEPENDENT_CODE": "OFF",
        "EXECUTORCH_PAL_DEFAULT": "minimal",
        "EXECUTORCH_BUILD_KERNELS_QUANTIZED": "ON",
        "EXECUTORCH_BUILD_CORTEX_M": "ON",
        "CMSIS_NN_LOCAL_PATH": str(sources.cmsis_nn),
        "EXECUTORCH_BUILD_ARM_BAREMETAL": "ON" if board.npu else "OFF",
        "EXECUTORCH_BUILD_PTHREADPOOL": "OFF",
        "EXECUTORCH_BUILD_CPUINFO": "OFF",
        "EXECUTORCH_BUILD_DEVTOOLS": "ON",
        "EXECUTORCH_BUILD_ARM_ETDUMP": "ON",
        "EXECUTORCH_ENABLE_LOGGING": "ON",
        "EXECUTORCH_SELECT_OPS_LIST": ",".join(selection.portable),
        "MAX_KERNEL_NUM": str(selection.max_kernel_num),
        "FLATC_EXECUTABLE": str(tools.flatc),
        "PYTHON_EXECUTABLE": tools.python,
        "FETCHCONTENT_FULLY_DISCONNECTED": "ON",
    }
    if ethos_sdk is not None:
        options["ETHOS_SDK_PATH"] = str(ethos_sdk)
        options["FETCH_ETHOS_U_CONTENT"] = "OFF"
    return options


def driver_options(board: SdkBoard, sources: Sources) -> dict[str, str]:
    assert board.npu is not None and sources.cmsis is not None
    return {
        "CMAKE_TOOLCHAIN_FILE": str(sources.executorch / TOOLCHAIN_FILE),
        "TARGET_CPU": board.cpu,
        "CMAKE_BUILD_TYPE": "Release",
        "ETHOSU_TARGET_NPU_CONFIG": board.npu,
        "CMSIS_PATH": str(sources.cmsis),
    }


def _configure(
    tools: Tools, source: Path, build: Path, options: Mapping[str, str]
) -> tuple[str, ...]:
    generator = ("-G", "Ninja") if tools.ninja else ("-G", "Unix Makefiles")
    return (
        tools.cmake,
        "-S",
        str(source),
        "-B",
        str(build),
        *generator,
        *(f"-D{k}={v}" for k, v in options.items()),
    )


def _abstract(options: Mapping[str, str], places: Mapping[str, Path]) -> dict[str, str]:
    """Options with the trees' (and the SDK's) paths named, so a moved tree keeps its key."""
    named = {}
    for key, value in options.items():
        for name, path in sorted(places.items(), key=lambda item: -len(str(item[1]))):
            value = value.replace(str(path), f"<{name}>")
        named[key] = value
    return named


def make_plan(
    board: SdkBoard,
    sources: Sources,
    selection: Selection,
    tools: Tools,
    digests: Mapping[str, str],
    sdk_root: Path,
    jobs: int,
) -> SdkPlan:
    """The whole build for `board`; `digests` are the trees' content digests by name."""
    placeholder = Path("/@sdk")  # options are keyed before the SDK's folder is known
    build_placeholder = placeholder / "build"
    ethos_sdk = build_placeholder / "ethos-u" if board.npu else None
    et_options = executorch_options(board, sources, selection, tools, placeholder, ethos_sdk)
    drv_options = driver_options(board, sources) if board.npu else {}
    places = {
        **sources.trees(),
        "sdk": placeholder,
        "flatc": tools.flatc,
        "python": Path(tools.python),
    }
    material: dict[str, Any] = {
        "board": {"name": board.name, "cpu": board.cpu, "npu": board.npu},
        "trees": dict(sorted(digests.items())),
        "executorch_options": _abstract(et_options, places),
        "driver_options": _abstract(drv_options, places),
        "kernels": {
            "portable": list(selection.portable),
            "max_kernel_num": selection.max_kernel_num,
        },
        "compiler": tools.compiler_version,
        "cmake": tools.cmake_version,
        "generator": "Ninja" if tools.ninja else "Unix Makefiles",
    }
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    prefix = (sdk_root / f"{board.name}-{key[:16]}").resolve()
    build = prefix / "build"

    def real(options: Mapping[str, str]) -> dict[str, str]:
        return {k: v.replace(str(placeholder), str(prefix)) for k, v in options.items()}

    steps = [
        Step(
            "configure ExecuTorch",
            _configure(tools, sources.executorch, build / "executorch", real(et_options)),
        ),
        Step(
            "build ExecuTorch",
            (tools.cmake, "--build", str(build / "executorch"), "--parallel", str(jobs)),
        ),
        Step("install ExecuTorch", (tools.cmake, "--install", str(build / "executorch"))),
    ]
    if board.npu and sources.ethos_u_driver is not None:
        driver_build = build / "ethos-u-driver"
        steps += [
            Step(
                f"configure the Ethos-U driver ({board.npu})",
                _configure(tools, sources.ethos_u_driver, driver_build, drv_options),
            ),
            Step(
                "build the Ethos-U driver",
                (tools.cmake, "--build", str(driver_build), "--parallel", str(jobs)),
            ),
        ]
    return SdkPlan(key, board, sources, selection, prefix, build, tuple(steps), material)


def find_flatc() -> Path:
    """The flatc the executorch package ships (the version its schema was generated with)."""
    import executorch

    return Path(next(iter(executorch.__path__))) / "data" / "bin" / "flatc"


def has_ninja() -> bool:
    return shutil.which("ninja") is not None
