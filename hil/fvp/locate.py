"""Finding what an FVP target needs on this machine: the FVP binary and an ExecuTorch for it.

Each finder raises TargetUnavailable with the fix, so FvpTarget (which then skips every case)
and `hil doctor` (which lists it) say the same words.

The FVP binary is searched in the device file's connection.fvp_dir, then $HIL_FVP_DIR, then
PATH. The runner of an FVP links an ExecuTorch built from source for the Cortex-M with the
Ethos-U delegate: the SDK `hil sdk build` made for the board, or the install prefix
EXECUTORCH_ROOT names (its include/, lib/ and lib/cmake); the pip wheel holds host libraries
only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hil import environment
from hil.errors import TargetUnavailable
from hil.fvp import output
from hil.fvp.config import FvpConfig
from hil.fvp.errors import FvpLicenceError
from hil.sdk import firmware
from hil.sdk.firmware import FirmwareConfig
from hil.settings.fvp_platforms import install_steps

FVP_DIR_ENV = environment.FVP_DIR.name
EXECUTORCH_ENV = "EXECUTORCH_ROOT"
VERSION_TIMEOUT_S = 60.0


def search_dirs(config: FvpConfig) -> list[tuple[str, Path]]:
    """Where the binary is looked for, with how each place was named."""
    places: list[tuple[str, Path]] = []
    if config.fvp_dir:
        places.append(("connection.fvp_dir", Path(config.fvp_dir).expanduser()))
    if environment.FVP_DIR.is_set():
        places.append((f"${FVP_DIR_ENV}", environment.FVP_DIR.path()))
    return places


def find_fvp(config: FvpConfig) -> Path:
    """The FVP executable, or TargetUnavailable naming every place searched and the install."""
    binary = config.platform.binary
    looked: list[str] = []
    for label, folder in search_dirs(config):
        candidate = folder / binary
        if os.access(candidate, os.X_OK) and candidate.is_file():
            return candidate
        looked.append(f"{label} ({folder})")
    found = shutil.which(binary)
    if found:
        return Path(found)
    looked.append("PATH")
    unset = [] if config.fvp_dir else ["connection.fvp_dir"]
    unset += [] if environment.FVP_DIR.is_set() else [f"${FVP_DIR_ENV}"]
    note = f" ({' and '.join(unset)} not set)" if unset else ""
    raise TargetUnavailable(
        f"{binary} (the {config.platform.name} FVP) is not installed: not found in "
        + ", ".join(looked)
        + note,
        fix=install_steps(config.platform),
    )


def fvp_version(binary: Path) -> str:
    """The Fast Models version the FVP's --version banner states; TargetUnavailable when the
    binary does not start (missing libraries) or refuses for want of a licence."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TargetUnavailable(
            f"{binary} --version did not run: {e}",
            fix="run it by hand; an FVP needs its own libraries (LD_LIBRARY_PATH to the "
            "install's python/lib if it names libpython)",
        ) from e
    text = done.stdout + done.stderr
    problem = output.licence_problem(text)
    if problem:
        raise FvpLicenceError(f"{binary} refused to start: {problem}", fix=LICENCE_FIX)
    found = output.version(text)
    if done.returncode != 0 or found is None:
        last = text.strip().splitlines()[-3:]
        raise TargetUnavailable(
            f"{binary} --version failed (exit {done.returncode}): " + " | ".join(last),
            fix="run it by hand to see why; reinstall the FVP if it is incomplete",
        )
    return found


LICENCE_FIX = (
    "Corstone Ecosystem FVPs need no licence: use one from developer.arm.com's Arm Ecosystem "
    "FVPs page, or, for a licensed FVP, point ARMLMD_LICENSE_FILE at a reachable licence "
    "server (or activate user-based licensing) and run the FVP by hand once to confirm"
)


def executorch_install(config: FvpConfig, runner: FirmwareConfig) -> Path | None:
    """The bare-metal ExecuTorch install the runner links (None for the echo engine):
    EXECUTORCH_ROOT, else the SDK `hil sdk build` made for the platform's board."""
    if config.engine == "echo":
        return None
    from hil.sdk.boards import board_of_preset
    from hil.sdk.store import build_line

    board = board_of_preset(runner.preset, runner.npu)
    line = build_line(board, runner.device) if board is not None else "hil sdk build ..."
    steps = (
        f"build one from your ExecuTorch checkout: {line} (docs/targets/fvp.md); "
        f"or export {EXECUTORCH_ENV}=<install prefix> of one you built yourself"
    )
    prefix = firmware.bare_metal_executorch_root(runner)
    if prefix is None:
        raise TargetUnavailable(
            f"the {config.platform.name} runner links ExecuTorch built for the "
            f"{config.platform.cpu_name}: no SDK is built for it here and {EXECUTORCH_ENV} "
            "is not set",
            fix=steps,
        )
    configs = list(prefix.glob("lib/cmake/*/executorch-config.cmake")) + list(
        prefix.glob("lib/cmake/*/ExecuTorchConfig.cmake")
    )
    if not configs:
        raise TargetUnavailable(
            f"{prefix} is not an ExecuTorch install: it has no lib/cmake/*/executorch-config.cmake",
            fix=steps,
        )
    if not list(prefix.glob("lib/libexecutorch_delegate_ethos_u.a")):
        raise TargetUnavailable(
            f"the ExecuTorch install {prefix} has no Ethos-U delegate "
            "(lib/libexecutorch_delegate_ethos_u.a): models with NPU delegates would not run",
            fix=f"build an SDK for the board with its NPU: {line}",
        )
    return prefix
