"""Where SDKs live (`.hil/sdk/<board>-<key>/`) and how a runner build finds one by itself.

An SDK folder is an ExecuTorch install prefix (include/, lib/, lib/cmake/) with hil's files
beside it: `sdk.json` (board, sources, options, kernels, times; written last, so a folder
without it is an unfinished build and never used), `kernels.json` (every operator the SDK
registers), `version.txt` (version and commit, which the runner reports in its handshake) and
`build.log`. A firmware preset finds the SDK of its board: the one built for the device when
there is one, else the newest. `EXECUTORCH_ROOT` always wins over this search.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil import environment
from hil.runner.kernels import KernelList
from hil.sdk.boards import SdkBoard, board_of_preset, command_line
from hil.sdk.kernels import read_kernel_list

RECORD = "sdk.json"
KERNELS = "kernels.json"
LOG = "build.log"


def default_sdk_dir() -> Path:
    return environment.SDK_DIR.path()


@dataclass(frozen=True)
class Sdk:
    """A finished SDK."""

    prefix: Path
    record: dict[str, Any]

    @property
    def board(self) -> str:
        return str(self.record.get("board", {}).get("name", ""))

    @property
    def npu(self) -> str | None:
        npu = self.record.get("board", {}).get("npu")
        return str(npu) if npu else None

    @property
    def device(self) -> str | None:
        device = self.record.get("device")
        return str(device) if device else None

    @property
    def key(self) -> str:
        return str(self.record.get("key", ""))

    @property
    def built_at(self) -> float:
        return float(self.record.get("built_at", 0.0))

    def kernels(self) -> KernelList | None:
        return read_kernel_list(self.prefix / KERNELS)

    def describe(self) -> str:
        kernels = self.record.get("kernels", {})
        return (
            f"{self.prefix} ({self.board}, ExecuTorch {self.record.get('version', '?')}, "
            f"{len(kernels.get('registered', []))} operators)"
        )


def read_sdk(prefix: Path) -> Sdk | None:
    """The SDK in `prefix`, or None when it is not a finished one."""
    try:
        record = json.loads((prefix / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not (prefix / "lib").is_dir():
        return None
    return Sdk(prefix.resolve(), record)


def list_sdks(root: Path | None = None) -> list[Sdk]:
    """Every finished SDK, newest first."""
    folder = root or default_sdk_dir()
    found = [read_sdk(p) for p in sorted(folder.iterdir())] if folder.is_dir() else []
    return sorted((s for s in found if s is not None), key=lambda s: -s.built_at)


def find_sdk(board: SdkBoard, device: str | None = None, root: Path | None = None) -> Sdk | None:
    """The SDK for `board` (same name and NPU): the one built for `device` first, else the
    newest."""
    matching = [s for s in list_sdks(root) if s.board == board.name and s.npu == board.npu]
    return next((s for s in matching if device and s.device == device), None) or next(
        iter(matching), None
    )


def sdk_for_preset(preset: str, npu: str | None = None, device: str | None = None) -> Sdk | None:
    """The SDK a firmware preset's runner links when nothing names one (None: no bare-metal
    board, or none built yet)."""
    board = board_of_preset(preset, npu)
    return find_sdk(board, device) if board is not None else None


def build_line(board: SdkBoard, name: str | None = None) -> str:
    """The `hil sdk build` a user should run for a board (`name`: the device, when it is not
    the board's own): with the source paths of an SDK built here before, when there is one
    (the same checkouts serve every board)."""
    earlier = next(iter(list_sdks()), None)
    trees = dict(earlier.record.get("sources", {})) if earlier else {}
    return command_line(trees, board, name)
