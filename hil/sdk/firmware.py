"""Building the runner in firmware/ for a target, cached by configuration hash.

A device file names the runner it needs in `connection.firmware`: a CMake preset of
firmware/CMakePresets.json, optionally with extra cache variables:

    connection:
      firmware: host                      # or
      firmware: {preset: cortex-m55, defines: {HIL_DEBUG_COMMANDS: "OFF"}}

The configuration hash covers the firmware sources, the preset, the defines, the compiler's
identity, the executorch package version (the ExecuTorch engine on posix) and, for a bare-metal
preset, the ExecuTorch install it links (EXECUTORCH_ROOT: its path, version file and a digest
of its libraries and CMake exports; none without one, the echo build). It is
compiled into the runner as its build id, so the handshake tells whether a board runs exactly
this build, and the build lives in `<firmware dir>/<hash>/`: CI builds each configuration once.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from hil.bundled import firmware_dir
from hil.compat.runtime import require_runtime_package
from hil.devices import DeviceSpec
from hil.errors import DeployError, TargetUnavailable
from hil.locks import file_lock
from hil.runner.kernels import KernelList
from hil.sdk.aarch64 import executorch_root, runner_bundle
from hil.sdk.folders import default_firmware_dir
from hil.sdk.kernels import read_kernel_list
from hil.sdk.store import sdk_for_preset
from hil.settings import FvpSettings, SerialSettings, SshSettings
from hil.settings.common import FIRMWARE_PRESETS, FirmwareChoice

log = logging.getLogger("hil.sdk.firmware")

SOURCE_DIR: Path | None = None  # another copy of the sources (tests); None: the bundled one


def source_dir() -> Path:
    """The runner's sources: firmware/ in a checkout, hil/_firmware in an installed wheel."""
    return SOURCE_DIR if SOURCE_DIR is not None else firmware_dir()


PRESETS = FIRMWARE_PRESETS
INSTALL_HINT = {
    "c++": "apt-get install g++",
    "aarch64-linux-gnu-g++": "apt-get install g++-aarch64-linux-gnu",
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi "
    "libstdc++-arm-none-eabi-newlib",
}


@dataclass(frozen=True)
class FirmwareConfig:
    preset: str
    defines: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Which SDK a bare-metal runner links when nothing names one (hil.sdk.store): the SDK of
    # this device's NPU, built for this device first. Not part of the build's identity: the
    # install it chooses is.
    npu: str | None = field(default=None, compare=False)
    device: str | None = field(default=None, compare=False)

    @property
    def compiler(self) -> str:
        return PRESETS[self.preset][0]


@dataclass(frozen=True)
class BuiltRunner:
    """A built runner: its binary and the build id it reports in the handshake."""

    config: FirmwareConfig
    build_id: str
    binary: Path
    built_now: bool


def firmware_config(spec: DeviceSpec, default_preset: str | None = None) -> FirmwareConfig:
    """The runner configuration a device file asks for (its preset was checked at load)."""
    choice: FirmwareChoice = getattr(spec.settings, "firmware", None) or FirmwareChoice()
    preset = choice.preset or default_preset or default_preset_of(spec)
    return FirmwareConfig(preset, choice.defines, npu=spec.npu, device=spec.name)


def default_preset_of(spec: DeviceSpec) -> str:
    """The runner a device of this kind runs when its file names none."""
    settings = spec.settings
    if isinstance(settings, SerialSettings):
        return settings.default_preset
    if isinstance(settings, SshSettings):
        return "linux-aarch64"
    if isinstance(settings, FvpSettings):
        return settings.platform.firmware_preset
    return "host"


@functools.lru_cache(maxsize=8)
def _compiler_identity(compiler: str) -> str:
    path = shutil.which(compiler)
    if path is None:
        raise TargetUnavailable(
            f"the compiler {compiler} is not installed",
            fix=INSTALL_HINT.get(compiler, f"install {compiler}"),
        )
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()[0] if out.stdout else path


def _executorch_root() -> Path:
    import executorch

    return Path(next(iter(executorch.__path__)))


def _source_digest() -> str:
    digest = hashlib.sha256()
    sources = source_dir()
    for path in sorted(sources.rglob("*")):
        relative = path.relative_to(sources)
        if path.is_file() and relative.parts[0] != "build":
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def bare_metal_executorch_root(config: FirmwareConfig) -> Path | None:
    """The ExecuTorch install a bare-metal preset links: `EXECUTORCH_ROOT` from the defines,
    else from the environment (the presets read `$env{EXECUTORCH_ROOT}`), else the SDK `hil
    sdk build` made for the board; None for the echo build (none of them, or
    HIL_ENGINE_EXECUTORCH=OFF)."""
    if PRESETS[config.preset][1] or config.defines.get("HIL_ENGINE_EXECUTORCH") == "OFF":
        return None
    raw = config.defines.get("EXECUTORCH_ROOT", os.environ.get("EXECUTORCH_ROOT", ""))
    if raw:
        return Path(raw).resolve()
    sdk = sdk_for_preset(config.preset, config.npu, config.device)
    return sdk.prefix if sdk is not None else None


def registered_kernels(config: FirmwareConfig) -> KernelList | None:
    """The operators a bare-metal runner's ExecuTorch registers, when its install lists them
    (an SDK's kernels.json; an install built by hand has none)."""
    root = bare_metal_executorch_root(config)
    return read_kernel_list(root / "kernels.json") if root is not None else None


def install_identity(root: Path) -> dict[str, str]:
    """What makes one ExecuTorch install differ from another: where it is, its version file
    and a digest of its libraries and CMake exports (a rebuilt install gets a new build id)."""
    digest = hashlib.sha256()
    for folder in (root / "lib",):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if path.is_file() and (path.suffix == ".a" or path.suffix == ".cmake"):
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    version = root / "version.txt"
    return {
        "root": str(root),
        "version": version.read_text().strip() if version.is_file() else "",
        "libraries": digest.hexdigest(),
    }


def config_hash(config: FirmwareConfig) -> str:
    """The hash that names a build and becomes its build id."""
    material: dict[str, object] = {
        "sources": _source_digest(),
        "preset": config.preset,
        "defines": dict(sorted(config.defines.items())),
        "compiler": _compiler_identity(config.compiler),
    }
    if PRESETS[config.preset][1] and config.defines.get("HIL_ENGINE_EXECUTORCH", "ON") != "OFF":
        material["executorch"] = importlib.metadata.version("executorch")
    root = bare_metal_executorch_root(config)
    if root is not None:
        material["executorch_install"] = install_identity(root)
        driver = config.defines.get("ETHOSU_DRIVER_ROOT", os.environ.get("ETHOSU_DRIVER_ROOT", ""))
        if driver:
            material["ethosu_driver"] = str(Path(driver).resolve())
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def build_id_for(config: FirmwareConfig) -> str:
    return f"{config.preset}-{config_hash(config)[:16]}"


CMAKE_MINIMUM = (3, 28)


def _pip_cmake() -> Path | None:
    """The binary of pip's cmake package, wherever the package is importable from (also a
    venv whose scripts are elsewhere, or one borrowing another's packages)."""
    try:
        import cmake
    except ImportError:
        return None
    binary = Path(cmake.CMAKE_BIN_DIR) / "cmake"
    return binary if binary.exists() else None


def find_cmake() -> str:
    """pip's cmake first: the executorch package needs CMake >= 3.28, and the system's may be
    older (Debian 12 ships 3.25) or be first on PATH. Its version is not checked here."""
    beside = Path(sys.executable).parent / "cmake"
    pip_cmake = beside if beside.exists() else _pip_cmake()
    found = str(pip_cmake) if pip_cmake is not None else shutil.which("cmake")
    if found is None:
        raise TargetUnavailable("cmake is not installed", fix=CMAKE_FIX)
    return found


CMAKE_FIX = "pip install 'cmake>=3.28' into hil's environment (make setup does)"


def _cmake() -> str:
    """The CMake the runner builds with, refused when older than 3.28."""
    found = find_cmake()
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    numbers = re.search(r"(\d+)\.(\d+)", version)
    if numbers is None or tuple(map(int, numbers.groups())) < CMAKE_MINIMUM:
        seen = numbers.group(0) if numbers else "of unknown version"
        raise TargetUnavailable(
            f"{found} is cmake {seen}; the runner needs 3.28 or newer", fix=CMAKE_FIX
        )
    return found


def _run(command: list[str], what: str, log_file: Path) -> None:
    log.info("%s: %s", what, " ".join(command))
    with log_file.open("a") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        try:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=900)
        except subprocess.TimeoutExpired as e:
            raise DeployError(f"{what} took over 15 minutes; log: {log_file}") from e
    if done.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-25:])
        raise DeployError(
            f"{what} failed (exit {done.returncode}); last lines of {log_file}:\n{tail}",
            fix="fix the firmware sources or the toolchain; the full log is in the file above",
        )


def build(config: FirmwareConfig, *, force: bool = False, root: Path | None = None) -> BuiltRunner:
    """Build (or reuse) the runner for `config`."""
    digest = config_hash(config)
    build_id = f"{config.preset}-{digest[:16]}"
    folder = (root or default_firmware_dir()).resolve() / digest
    record = folder / "runner.json"

    def unwritable(e: OSError) -> DeployError:
        return DeployError(f"cannot write the firmware build folder {folder.parent}: {e}")

    with file_lock(folder.parent / f"{digest}.lock", unwritable):
        if record.exists() and not force:
            binary = Path(json.loads(record.read_text())["binary"])
            if binary.exists():
                return BuiltRunner(config, build_id, binary, built_now=False)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        log_file = folder / "build.log"
        defines = {"HIL_BUILD_ID": build_id, **config.defines}
        if PRESETS[config.preset][1] and config.preset == "host":
            defines.setdefault("EXECUTORCH_ROOT", str(_executorch_root()))
        bare_root = bare_metal_executorch_root(config)
        if not PRESETS[config.preset][1]:  # what the hash saw, not what CMake's cache may hold
            defines["EXECUTORCH_ROOT"] = str(bare_root) if bare_root else ""
        linked = config.defines.get("HIL_ENGINE_EXECUTORCH") != "OFF"
        if config.preset == "linux-aarch64" and linked:  # the aarch64 wheel of this version
            defines.setdefault("EXECUTORCH_ROOT", str(executorch_root()))
        if PRESETS[config.preset][1] and linked and defines.get("EXECUTORCH_ROOT"):
            require_runtime_package(Path(defines["EXECUTORCH_ROOT"]))
        build_dir = folder / "build"
        command = [
            _cmake(),
            "-S",
            str(source_dir()),
            "--preset",
            config.preset,
            "-B",
            str(build_dir),
        ]
        if shutil.which("ninja") is None:
            command += ["-G", "Unix Makefiles"]
        command += [f"-D{k}={v}" for k, v in defines.items()]
        started = time.monotonic()
        _run(command, f"configuring the {config.preset} runner", log_file)
        _run(
            [_cmake(), "--build", str(build_dir), "--parallel"],
            f"building the {config.preset} runner",
            log_file,
        )
        found = [p for p in (build_dir / "hil-runner", build_dir / "hil-runner.elf") if p.exists()]
        if not found:
            raise DeployError(f"the {config.preset} build made no hil-runner; see {log_file}")
        binary = found[0]
        record.write_text(
            json.dumps(
                {
                    "build_id": build_id,
                    "preset": config.preset,
                    "defines": dict(config.defines),
                    "binary": str(binary),
                    "seconds": round(time.monotonic() - started, 1),
                },
                indent=2,
            )
        )
        log.info("built %s in %.1f s: %s", build_id, time.monotonic() - started, binary)
        return BuiltRunner(config, build_id, binary, built_now=True)


def build_firmware(spec: DeviceSpec, force: bool = False) -> Path:
    """`hil firmware build --target NAME`: the built runner's path (for a Linux board, the
    folder with the runner and the libraries it is shipped with)."""
    config = firmware_config(spec)
    if config.preset != "linux-aarch64":
        return build(config, force=force).binary
    executorch_root(fetch=True)  # a set-up step: the aarch64 wheel is fetched here, once
    return runner_bundle(build(config, force=force).binary).folder
