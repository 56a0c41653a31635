"""Checks shared by several target kinds: tools on PATH, Python packages, the runner build."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from hil.devices import DeviceSpec
from hil.doctor import MISSING, NOTE, OK, Finding, finding_from
from hil.errors import TargetUnavailable
from hil.sdk import firmware
from hil.sdk.folders import default_firmware_dir
from hil.settings.serial import SerialSettings, VirtualBoard


def tool(name: str, fix: str, *, what: str | None = None, blocking: bool = True) -> Finding:
    path = shutil.which(name)
    if path is not None:
        return Finding(what or name, OK, path)
    error = TargetUnavailable(f"{name} is not installed (not on PATH)", fix=fix)
    return Finding(what or name, MISSING, error.message, fix, error if blocking else None)


def compiler(name: str) -> Finding:
    """A toolchain that builds a runner, by the version line it prints."""

    def probe() -> str:
        path = shutil.which(name)
        if path is None:
            raise TargetUnavailable(
                f"the compiler {name} is not installed",
                fix=firmware.INSTALL_HINT.get(name, f"install {name}"),
            )
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        return (done.stdout.splitlines() or [path])[0]

    return finding_from(f"toolchain {name}", probe)


def runner_build(config: firmware.FirmwareConfig, target: str) -> Finding:
    """Whether the runner this device uses is built already (it is built on first use)."""
    what = f"runner ({config.preset})"
    try:
        digest = firmware.config_hash(config)
    except TargetUnavailable as e:
        return Finding(what, NOTE, f"cannot tell without the toolchain: {e.message}")
    record = default_firmware_dir().resolve() / digest / "runner.json"
    build_id = f"{config.preset}-{digest[:16]}"
    if record.exists():
        return Finding(what, OK, f"{build_id} built in {record.parent}")
    return Finding(
        what,
        NOTE,
        f"{build_id} not built yet: the first run builds it",
        fix=f"hil firmware build --target {target} (to build it now)",
    )


def package(module: str, distribution: str, fix: str) -> Finding:
    if importlib.util.find_spec(module) is None:
        error = TargetUnavailable(f"Python package {distribution} is not installed", fix=fix)
        return Finding(distribution, MISSING, error.message, fix, error)
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = "installed"
    return Finding(distribution, OK, version)


def check_executorch(spec: DeviceSpec) -> Iterator[Finding]:
    yield package("executorch", "executorch", "pip install executorch>=1.4 (make setup does)")
    if "cortex-m" in spec.recipe_names:
        yield cmsis_nn_bindings(only_recipe=spec.kind == "cortex_m_ref")


def cmsis_nn_bindings(only_recipe: bool) -> Finding:
    """The Cortex-M lowering's CMSIS-NN bindings, which a source build may lack. cortex-m55-ref
    runs nothing else, so its provisioning refuses without them (a skip); a board's other
    recipes still run, and its Cortex-M cases fail to export, saying this."""
    from hil.compat.cortex_m import CMSIS_NN_FIX, missing_cmsis_nn_bindings

    what = "CMSIS-NN bindings"
    missing = missing_cmsis_nn_bindings()
    if missing is None:
        return Finding(what, OK, "the Cortex-M lowering has what it needs")
    if not only_recipe:
        return Finding(what, NOTE, f"{missing}: its 'cortex-m' cases cannot export", CMSIS_NN_FIX)
    error = TargetUnavailable(missing, fix=CMSIS_NN_FIX)
    return Finding(what, MISSING, missing, CMSIS_NN_FIX, error)


def check_tosa(spec: DeviceSpec) -> Iterator[Finding]:
    """The TOSA reference model; Vela too where a recipe compiles for an Ethos-U."""
    fix = "pip install 'executorch[ethos-u]>=1.4' (brings tosa-tools and ethos-u-vela)"
    yield package("tosa_reference_model", "tosa-tools", fix)
    if "ethos-u" in spec.recipe_names:
        yield package("ethosu", "ethos-u-vela", fix)


def check_serial(spec: DeviceSpec) -> Iterator[Finding]:
    """Serial targets: a virtual board needs its emulator and toolchain; a real one its port."""
    settings = spec.settings
    if not isinstance(settings, SerialSettings):
        return
    if settings.virtual is VirtualBoard.QEMU_MPS3_AN547:
        yield tool("qemu-system-arm", "apt-get install qemu-system-arm")
        config = firmware.firmware_config(spec)
        yield _bare_metal_engine(config)
    elif settings.virtual is VirtualBoard.HOST_RUNNER:
        config = firmware.firmware_config(spec)
    else:
        port = settings.port or ""
        exists = not port.startswith("/") or os.path.exists(port)
        yield Finding(
            "port",
            OK if exists else MISSING,
            port or "(a labgrid place)",
            None if exists else "connect the board, or fix connection.port",
        )
        yield Finding("board", NOTE, "reached only when a run provisions it")
        return
    yield compiler(config.compiler)
    yield runner_build(config, spec.name)


def check_ssh(spec: DeviceSpec) -> Iterator[Finding]:
    yield tool("ssh", "apt-get install openssh-client", what="ssh client")
    yield Finding("host", NOTE, "reached only when a run provisions it")


def _bare_metal_engine(config: firmware.FirmwareConfig) -> Finding:
    """A bare-metal runner with no ExecuTorch (no SDK built, no EXECUTORCH_ROOT) gets the echo
    engine: no model runs on it. Says which install it links, or the `hil sdk build` line."""
    from hil.sdk.boards import board_of_preset
    from hil.sdk.store import build_line

    if config.defines.get("HIL_ENGINE_EXECUTORCH") == "OFF":
        return Finding("runner engine", OK, "echo (HIL_ENGINE_EXECUTORCH=OFF)")
    root = firmware.bare_metal_executorch_root(config)
    if root is not None:
        return Finding("runner engine", OK, f"ExecuTorch from {executorch_source(root)}")
    board = board_of_preset(config.preset, config.npu)
    fix = (
        build_line(board, config.device)
        if board is not None
        else "export EXECUTORCH_ROOT=<install prefix> (firmware/README.md)"
    )
    error = TargetUnavailable(
        f"no ExecuTorch SDK is built for the {config.preset} runner (and EXECUTORCH_ROOT is "
        "not set): it gets the echo engine, which runs no model (hil selftest works)",
        fix=fix,
    )
    return Finding("runner engine", MISSING, error.message, fix, error)


def executorch_source(prefix: Path | None) -> str:
    """Where a bare-metal runner's ExecuTorch comes from, as doctor says it."""
    if os.environ.get("EXECUTORCH_ROOT"):
        return f"EXECUTORCH_ROOT={prefix}"
    return f"the SDK {prefix} (hil sdk build)"
