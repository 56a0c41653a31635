"""A virtual lab rack: a real labgrid coordinator and exporters on loopback, serving virtual
boards (the host runner on ptys, hil/lab/virtual_board.py) through ser2net.

The stand-in for a rack of Cortex-M boards on USB UARTs with a network PDU: each board has its
own exporter (as if on a lab host of its own) exporting its pty as a RawSerialPort (ser2net
started on acquire, as for a real UART) and its power switch as a NetworkPowerPort (labgrid's
`simplerest` model); each is a place of its own name, tagged with the rack's tags, so a device
file can take any of them by tag. Nothing is simulated on the lab side: the coordinator,
exporters, ser2net and power driver are labgrid's and Debian's.

    with VirtualRack(folder, runner, ["vb1", "vb2"], {"board": "vboard"}).start() as rack:
        rack.coordinator        # "127.0.0.1:PORT" for connection.labgrid.coordinator
        rack.kill_board("vb1")  # its exporter stopped (ser2net with it) and the board killed

Used by the lab tests and bench/lab_speedup.py. Needs ser2net (Debian package). With `baud`,
the boards' UARTs move bytes at that rate, as a board's console UART does; without, at memory
speed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

import yaml

from hil.errors import TargetUnavailable, TransportError
from hil.lab.client import LabClient
from hil.processes import stop_process

START_TIMEOUT_S = 30.0


def ser2net_path() -> str | None:
    return shutil.which("ser2net") or next(
        (p for p in ("/usr/sbin/ser2net", "/usr/bin/ser2net") if os.path.exists(p)), None
    )


def labgrid_tool(name: str) -> str:
    beside = Path(sys.executable).parent / name  # the venv's scripts, when not on PATH
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise TargetUnavailable(f"{name} is not installed", fix="pip install labgrid")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RackBoard:
    name: str
    board: subprocess.Popen[bytes]
    exporter: subprocess.Popen[bytes] | None
    pty: str
    power_url: str
    log_path: Path  # the runner's stderr and the power switch's notes
    exporter_log: Path


class VirtualRack:
    def __init__(
        self,
        folder: Path,
        runner: Path,
        boards: Sequence[str],
        tags: Mapping[str, str],
        runner_args: Sequence[str] = (),
        baud: int | None = None,
    ) -> None:
        """`baud`: the boards' UARTs run at this rate (exported as the ports' speed); None:
        bytes move at memory speed (the fast default for tests)."""
        self.folder = folder
        self.baud = baud
        self.runner = runner
        self.names = list(boards)
        self.tags = dict(tags)
        self.runner_args = list(runner_args)
        self.port = 0
        self.boards: dict[str, RackBoard] = {}
        self.services: dict[str, subprocess.Popen[bytes]] = {}  # exporters of export_place
        self._coordinator: subprocess.Popen[bytes] | None = None
        self._logs: list[IO[bytes]] = []
        self.log = logging.getLogger(f"hil.lab.VirtualRack({folder.name})")

    @property
    def coordinator(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- start -----------------------------------------------------------------------------

    def start(self) -> VirtualRack:
        if ser2net_path() is None:
            raise TargetUnavailable(
                "ser2net is not installed (labgrid's exporter serves serial ports with it)",
                fix="apt-get install ser2net",
            )
        try:
            self._start_coordinator()
            for name in self.names:
                self._start_board(name)
            client = LabClient(self.coordinator).connect()
            try:
                for name in self.names:
                    client.add_place(name)
                    client.add_match(name, f"{self._exporter_name(name)}/{name}/*")
                    client.set_tags(name, self.tags)
                self._await_exports(client)
            finally:
                client.close()
        except BaseException:
            self.stop()
            raise
        return self

    def _log(self, name: str) -> IO[bytes]:
        log = (self.folder / name).open("ab")
        self._logs.append(log)
        return log

    def _start_coordinator(self) -> None:
        home = self.folder / "coordinator"  # it keeps places.yaml in its working folder
        home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._coordinator = subprocess.Popen(
            [labgrid_tool("labgrid-coordinator"), "-l", self.coordinator],
            cwd=home,
            stdout=self._log("coordinator.log"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self._coordinator.poll() is not None:
                break
            time.sleep(0.05)
        raise TransportError(
            f"the labgrid coordinator did not start on {self.coordinator}; "
            f"see {self.folder / 'coordinator.log'}"
        )

    def _exporter_name(self, board: str) -> str:
        return f"{self.folder.name}-{board}"

    def _start_board(self, name: str) -> None:
        log_path = self.folder / f"{name}.log"
        board = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hil.lab.virtual_board",
                "--name",
                name,
                "--runner",
                str(self.runner),
                "--log",
                str(log_path),
                *([f"--baud={self.baud}"] if self.baud else []),
                *(f"--runner-arg={a}" for a in self.runner_args),
            ],
            stdout=subprocess.PIPE,
            stderr=self._log(f"{name}.board.log"),
            start_new_session=True,
        )
        assert board.stdout is not None
        line = board.stdout.readline()
        try:
            facts = json.loads(line)
        except ValueError as e:
            board.kill()
            raise TransportError(
                f"virtual board {name} did not start: {line!r}; see "
                f"{self.folder / (name + '.board.log')}"
            ) from e
        exporter = self._start_exporter(
            name,
            {
                "RawSerialPort": {"port": facts["pty"], "speed": self.baud or 115200},
                "NetworkPowerPort": {"model": "simplerest", "host": facts["power_url"], "index": 0},
            },
        )
        self.boards[name] = RackBoard(
            name,
            board,
            exporter,
            facts["pty"],
            facts["power_url"],
            log_path,
            self.folder / f"{name}.exporter.log",
        )

    def _start_exporter(self, group: str, resources: dict[str, object]) -> subprocess.Popen[bytes]:
        """labgrid-exporter serving one group (the place of the same name) of `resources`."""
        exporter_yaml = self.folder / f"{group}.exporter.yaml"
        exporter_yaml.write_text(yaml.safe_dump({group: resources}))
        return subprocess.Popen(
            [
                labgrid_tool("labgrid-exporter"),
                "-c",
                self.coordinator,
                "-n",
                self._exporter_name(group),
                "--hostname",
                "127.0.0.1",
                str(exporter_yaml),
            ],
            cwd=self.folder,
            stdout=self._log(f"{group}.exporter.log"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def _await_exports(self, client: LabClient, names: Sequence[str] | None = None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        names = self.names if names is None else names
        wanted = {(self._exporter_name(n), n) for n in names}
        while time.monotonic() < deadline:
            exported = client.exported()
            seen = {(r.path[0], r.path[1]) for r in exported}
            down = {(r.path[0], r.path[1]) for r in exported if not r.avail}
            if wanted <= seen and not wanted & down:
                return
            time.sleep(0.1)
        raise TransportError(
            f"the exporters of {', '.join(names)} did not come up within "
            f"{START_TIMEOUT_S:.0f} s; see the *.exporter.log in {self.folder}"
        )

    def export_place(
        self, name: str, resources: Mapping[str, Mapping[str, object]], tags: Mapping[str, str]
    ) -> None:
        """Another place, of resources served elsewhere (an SSH service: a NetworkService),
        through an exporter of its own."""
        exporter = self._start_exporter(name, dict(resources))
        self.services[name] = exporter
        client = LabClient(self.coordinator).connect()
        try:
            client.add_place(name)
            client.add_match(name, f"{self._exporter_name(name)}/{name}/*")
            client.set_tags(name, tags)
            self._await_exports(client, [name])
        finally:
            client.close()

    # -- faults and stop -------------------------------------------------------------------

    def runner_pid(self, name: str) -> int | None:
        """The pid of the board's runner process (None while it has none)."""
        parent = self.boards[name].board.pid
        for status in Path("/proc").glob("[0-9]*/status"):
            with contextlib.suppress(OSError):
                fields = dict(
                    line.split(":\t", 1)
                    for line in status.read_text().splitlines()
                    if ":\t" in line
                )
                if fields.get("PPid", "").strip() == str(parent):
                    return int(status.parent.name)
        return None

    def switch(self, name: str, on: bool) -> None:
        """Work the board's power switch by hand (what the PDU's front panel would do)."""
        url = self.boards[name].power_url.format(index=0, value=1 if on else 0)
        with urllib.request.urlopen(url, timeout=10) as reply:
            reply.read()

    def kill_board(self, name: str) -> None:
        """The board is gone: its exporter stops (ser2net with it), its runner and power switch
        are killed. Its place stays, with no resources behind it."""
        board = self.boards[name]
        self.log.warning("killing board %s", name)
        if board.exporter is not None:
            _stop(board.exporter)
            board.exporter = None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(board.board.pid, signal.SIGKILL)
        board.board.wait(5)

    def stop(self) -> None:
        for exporter in self.services.values():
            _stop(exporter)
        self.services.clear()
        for board in self.boards.values():
            if board.exporter is not None:
                _stop(board.exporter)
                board.exporter = None
            if board.board.poll() is None:
                _stop(board.board)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(board.board.pid, signal.SIGKILL)  # a runner left behind
        if self._coordinator is not None:
            _stop(self._coordinator)
            self._coordinator = None
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> VirtualRack:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (an exporter stops its ser2net then), SIGKILL if it does not end, and its
    process group after it (a ser2net orphaned by a killed exporter)."""
    stop_process(process, grace_s=10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
