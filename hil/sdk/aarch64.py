"""The aarch64 ExecuTorch SDK and the Pi's runner bundle.

The runner for a Raspberry Pi is cross-built against the aarch64 wheel of the same executorch
version this venv runs (its `include/`, `lib/*.so` and CMake package; XNNPACK, the optimized
and quantized kernels and the threadpool included). The wheel is fetched once with pip from
PyPI by a set-up step (`make setup`, `hil firmware build`), never at test time, and unpacked
under the firmware folder.

A bundle is what goes to the Pi: the runner and exactly the wheel libraries it needs (found
from the ELF files' DT_NEEDED entries), side by side, so the runner's `$ORIGIN` RUNPATH finds
them without LD_LIBRARY_PATH. The C/C++ runtime comes from the Pi's own system.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hil.errors import TargetUnavailable
from hil.hashing import file_sha256
from hil.sdk.folders import default_firmware_dir

log = logging.getLogger("hil.sdk.aarch64")

PLATFORM = "manylinux_2_28_aarch64"
WHEEL_PYTHON = "3.11"  # the C++ parts do not depend on it; the tag just has to exist
PARTS = ("executorch/include/", "executorch/lib/", "executorch/share/")


@dataclass(frozen=True)
class BundleFile:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class RunnerBundle:
    """The runner and its libraries in one folder, with their hashes."""

    folder: Path
    files: tuple[BundleFile, ...]

    @property
    def runner(self) -> str:
        return "hil-runner"


def sdk_dir() -> Path:
    """Where the unpacked aarch64 package lives (beside the firmware builds, shared by all)."""

    version = importlib.metadata.version("executorch")
    return default_firmware_dir().resolve() / "sdk" / f"executorch-{version}-aarch64"


def executorch_root(*, fetch: bool = False) -> Path:
    """The unpacked aarch64 package folder (EXECUTORCH_ROOT of the linux-aarch64 preset).

    Only set-up steps fetch (`make setup`, `hil firmware build`,
    `python -m hil.sdk.aarch64`): a test run never downloads, it reports the target
    unavailable with that fix instead."""
    folder = sdk_dir()
    root = folder / "executorch"
    if (root / "share" / "cmake" / "executorch-config.cmake").exists():
        return root
    if not fetch:
        raise TargetUnavailable(
            f"the aarch64 executorch SDK is not set up ({folder} is missing)",
            fix="run the set-up once (make setup, or .venv/bin/python -m "
            "hil.sdk.aarch64, or .venv/bin/hil firmware build --target pi5-emu): it "
            "fetches the aarch64 executorch "
            "wheel from PyPI",
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "share" / "cmake" / "executorch-config.cmake").exists():
            _fetch(folder)
    return root


def _fetch(folder: Path) -> None:
    version = importlib.metadata.version("executorch")
    with tempfile.TemporaryDirectory(prefix="hil-aarch64-wheel-") as scratch:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            PLATFORM,
            "--python-version",
            WHEEL_PYTHON,
            f"executorch=={version}",
            "-d",
            scratch,
        ]
        log.info("fetching the aarch64 executorch %s wheel: %s", version, " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        wheels = list(Path(scratch).glob("executorch-*.whl"))
        if done.returncode != 0 or not wheels:
            raise TargetUnavailable(
                f"cannot fetch the aarch64 executorch {version} wheel: "
                f"{(done.stderr or done.stdout).strip()[-400:]}",
                fix=f"reach PyPI (pip download executorch=={version} --platform {PLATFORM} "
                f"--only-binary=:all: --no-deps), or unpack that wheel's executorch/ folder "
                f"into {folder}",
            )
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if name.startswith(PARTS):
                    wheel.extract(name, unpacked)
        if folder.exists():
            shutil.rmtree(folder)
        shutil.move(str(unpacked), str(folder))
    log.info("aarch64 executorch SDK in %s", folder)


def needed_libraries(elf: Path) -> list[str]:
    """The DT_NEEDED names of an ELF file (any architecture)."""
    readelf = shutil.which("readelf") or shutil.which("aarch64-linux-gnu-readelf")
    if readelf is None:
        raise TargetUnavailable("readelf is not installed", fix="apt-get install binutils")
    out = subprocess.run(
        [readelf, "-d", str(elf)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return [
        line.split("[", 1)[1].rstrip("]")
        for line in out.splitlines()
        if "(NEEDED)" in line and "[" in line
    ]


def make_bundle(runner: Path, sdk_root: Path, folder: Path) -> RunnerBundle:
    """Copy the runner and the SDK libraries it needs (transitively) into `folder`."""
    lib_dir = sdk_root / "lib"
    wanted: dict[str, Path] = {"hil-runner": runner}
    pending = [runner]
    while pending:
        for name in needed_libraries(pending.pop()):
            candidate = lib_dir / name
            if name not in wanted and candidate.exists():
                wanted[name] = candidate
                pending.append(candidate)
    staging = Path(tempfile.mkdtemp(prefix=".bundle-", dir=folder.parent))
    files = []
    for name, source in sorted(wanted.items()):
        shutil.copy2(source, staging / name)
        files.append(BundleFile(name, file_sha256(staging / name), (staging / name).stat().st_size))
    (staging / "MANIFEST").write_text("".join(f"{f.sha256}  {f.name}\n" for f in files))
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(staging, folder)
    return RunnerBundle(folder, tuple(files))


def read_bundle(folder: Path) -> RunnerBundle | None:
    """A bundle made before, if it is complete."""
    manifest = folder / "MANIFEST"
    if not manifest.exists():
        return None
    files = []
    for line in manifest.read_text().splitlines():
        digest, name = line.split(None, 1)
        path = folder / name
        if not path.exists():
            return None
        files.append(BundleFile(name, digest, path.stat().st_size))
    return RunnerBundle(folder, tuple(files))


def runner_bundle(binary: Path) -> RunnerBundle:
    """The bundle of a built linux-aarch64 runner (`<build>/hil-runner` -> `<build>/../bundle`),
    made on first use."""
    folder = binary.parent.parent / "bundle"
    with (binary.parent.parent / "bundle.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        existing = read_bundle(folder)
        if existing is not None:
            return existing
        return make_bundle(binary, executorch_root(), folder)


if __name__ == "__main__":  # the set-up step: `python -m hil.sdk.aarch64` fetches it once
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(executorch_root(fetch=True))
