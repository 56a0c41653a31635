"""Helpers of the lab tests: a virtual rack (real coordinator, exporters, ser2net, runners on
ptys), device files that lease its boards, a board killer, and the lab's state afterwards."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from hil.lab.client import LabClient
from hil.lab.virtual_rack import VirtualRack, ser2net_path
from hil.sdk import firmware

REPO = Path(__file__).resolve().parents[2]
FIRMWARE_DIR = REPO / ".hil" / "firmware"

needs_lab = pytest.mark.skipif(
    ser2net_path() is None
    or not (
        shutil.which("labgrid-exporter")
        or (Path(sys.executable).parent / "labgrid-exporter").exists()
    ),
    reason="needs ser2net and labgrid (make test installs them)",
)


def host_runner() -> Path:
    return firmware.build(firmware.FirmwareConfig("host"), root=FIRMWARE_DIR).binary


@contextmanager
def virtual_rack(folder: Path, boards: list[str], **tags: str) -> Iterator[VirtualRack]:
    folder.mkdir(parents=True, exist_ok=True)
    with VirtualRack(folder, host_runner(), boards, tags or {"board": "vboard"}).start() as rack:
        yield rack


def rack_device(
    folder: Path,
    name: str,
    coordinator: str,
    *,
    recipes: tuple[str, ...] = ("portable",),
    **labgrid: Any,
) -> Path:
    """A serial device file whose boards are the rack's places tagged board=vboard."""
    pool: dict[str, Any] = {} if "place" in labgrid else {"tags": {"board": "vboard"}}
    link = {
        k: labgrid.pop(k) for k in ("reply_timeout_s", "run_timeout_s", "retries") if k in labgrid
    }
    spec = {
        "name": name,
        "kind": "serial",
        "recipes": list(recipes),
        "description": "host runner boards in the virtual labgrid rack",
        "latency": {"warmup": 0, "min_runs": 2, "min_time_s": 0.01, "max_runs": 10},
        "connection": {
            "labgrid": {
                "coordinator": coordinator,
                **pool,
                "wait_s": 120,
                "power_delay_s": 0.3,
                **labgrid,
            },
            "firmware": "host",
            "reply_timeout_s": 2.0,
            "run_timeout_s": 5.0,
            **link,
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class BoardKiller:
    """Kills, once, the rack board whose runner logs `marker` (a run starting), `delay_s`
    after it does: a board dying in the middle of that case, whichever board runs it."""

    def __init__(self, rack: VirtualRack, marker: bytes, delay_s: float = 0.3) -> None:
        self.rack = rack
        self.marker = marker
        self.delay_s = delay_s
        self.killed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> BoardKiller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _watch(self) -> None:
        starts = {
            n: b.log_path.stat().st_size if b.log_path.exists() else 0
            for n, b in self.rack.boards.items()
        }
        while not self._stop.wait(0.02):
            for name, board in self.rack.boards.items():
                if (
                    board.log_path.exists()
                    and self.marker in board.log_path.read_bytes()[starts[name] :]
                ):
                    time.sleep(self.delay_s)
                    self.rack.kill_board(name)
                    self.killed = name
                    return


def lab_state(coordinator: str) -> tuple[dict[str, str | None], int]:
    """(place -> holder or None, number of reservations) as the coordinator sees them now."""
    client = LabClient(coordinator).connect()
    try:
        places = {name: p.acquired for name, p in client.places().items()}
        return places, len(client.reservations())
    finally:
        client.close()
