"""SerialTarget on a network serial port: the runner's pty served over TCP by socat (as
ser2net or a terminal server would serve a board's UART), reached with a socket:// URL."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from hil import Case, seeded
from hil.devices import DeviceRegistry
from hil.resources.virtual_boards import HostRunnerBoard
from hil.sdk import firmware
from hil.session import Session

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def network_port(tmp_path: Path) -> Iterator[str]:
    if shutil.which("socat") is None:
        pytest.skip("socat is not installed; fix: apt-get install socat")
    board = HostRunnerBoard("net-runner", firmware.build(firmware.FirmwareConfig("host")).binary)
    pty = board.start()
    port = free_port()
    log = tmp_path / "socat.log"
    with log.open("w") as sink:
        server = subprocess.Popen(  # fork: a child per connection, as ser2net serves each client
            [
                "socat",
                "-d",
                "-d",
                f"TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork",
                f"FILE:{pty},raw,echo=0",
            ],
            stderr=sink,
        )
    # Wait for socat's own "listening" line: a probe connection would fork a child that holds
    # the pty too and, while it lingers, reads the runner's replies meant for hil.
    deadline = time.monotonic() + 10
    while "listening on" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"socket://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=5)
    board.stop()


def test_a_board_behind_socket_url_runs_cases_like_a_local_one(
    network_port: str, tmp_path: Path, shared_cache: Path
) -> None:
    folder = tmp_path / "devices"
    folder.mkdir()
    spec = {
        "name": "net-board",
        "kind": "serial",
        "recipes": ["portable", "xnnpack-fp32"],
        "latency": {"warmup": 1, "min_runs": 3, "min_time_s": 0.01, "max_runs": 20},
        "connection": {"port": network_port, "reply_timeout_s": 3.0},
    }
    (folder / "net-board.yaml").write_text(yaml.safe_dump(spec))
    registry = DeviceRegistry.from_dirs([REPO / "devices", folder])
    case = Case("conv_net", lambda: torch.nn.Conv2d(3, 16, 3, padding=1), seeded((1, 3, 64, 64)))
    with Session(devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "r") as s:
        for recipe in ("portable", "xnnpack-fp32"):
            remote = s.check(case, "net-board", recipe)
            local = s.check(case, "host", recipe)
            assert remote.passed, remote.failure_message()
            with np.load(remote.arrays_path) as a, np.load(local.arrays_path) as b:
                assert np.array_equal(a["output0"], b["output0"])  # 256 KiB over TCP, exact
