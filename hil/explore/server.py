"""The Model Explorer server: started on 127.0.0.1 only, health-checked, stopped cleanly.

The server answers `/api/v1/read_text_file?path=...` for any file this user can read, so it
never listens beyond loopback: the host is fixed here, not an option. It is started without
models; the page URL hil prints carries them (`?data=` with the graph JSON, the overlays and
the view to open), as Model Explorer's own URLs do. The server checks PyPI for a newer release
and the page asks it to: its environment points HTTP(S) proxies at a closed local port so those
requests fail at once and nothing leaves the machine (pip is the only thing that downloads).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hil.errors import PortInUse, ViewerFailed
from hil.explore.viewer import Viewer

HOST = "127.0.0.1"
DEFAULT_PORT = 8080
HEALTHY = "model_explorer_ok"
START_TIMEOUT_S = 90.0  # measured: 10-14 s on 2 cores
NO_NETWORK = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}

log = logging.getLogger("hil.explore.server")
Progress = Callable[[str], None]


def port_free(port: int) -> bool:
    """Whether nothing listens on 127.0.0.1:`port` (connections of a stopped server that linger
    in TIME_WAIT do not count: the server binds with SO_REUSEADDR too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port(start: int = DEFAULT_PORT, tries: int = 20) -> int | None:
    """The first free port from `start` (Model Explorer's own rule for its default port)."""
    return next((p for p in range(start, start + tries) if port_free(p)), None)


@dataclass(frozen=True)
class View:
    """What the page opens: models (graph JSON files), overlays, and the graph to show."""

    models: Sequence[tuple[Path, str]]  # (graph JSON, its collection label)
    overlays: Sequence[tuple[Path, str]] = ()  # (node data file, label of the model it is for)
    graph: str = ""  # graph id to open ("" = the first)
    node: str = ""  # node to select there: the viewer zooms to it
    collection: str = ""

    def query(self) -> str:
        data: dict[str, Any] = {
            "models": [{"url": str(path.resolve())} for path, _ in self.models],
            "uiState": {
                "paneStates": [
                    {
                        "deepestExpandedGroupNodeIds": ["___all___"],
                        "selectedNodeId": self.node,
                        "selectedGraphId": self.graph,
                        "selectedCollectionLabel": self.collection,
                        "widthFraction": 1,
                    }
                ]
            },
        }
        if self.overlays:
            data["nodeData"] = [str(path.resolve()) for path, _ in self.overlays]
            data["nodeDataTargets"] = [label for _, label in self.overlays]
        return "data=" + quote(json.dumps(data))


@dataclass
class Server:
    """A running Model Explorer (use as a context manager, or call stop())."""

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    _stopped: bool = field(default=False, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, view: View) -> str:
        return f"{self.base_url}/?{view.query()}"

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(viewer: Viewer, port: int, log_path: Path, progress: Progress) -> Server:
    """Start Model Explorer on 127.0.0.1:`port`; returns once /check_health answers."""
    if not port_free(port):
        raise PortInUse(
            f"port {port} on {HOST} is in use, so Model Explorer cannot listen there",
            fix="pass another --port, or stop what listens there "
            f"(`ss -ltnp 'sport = :{port}'` shows it)",
        )
    command = [
        str(viewer.server_command),
        "--no_open_in_browser",
        f"--host={HOST}",
        f"--port={port}",
    ]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as out:
        try:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **NO_NETWORK},
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            raise ViewerFailed(
                f"cannot run {viewer.server_command}: {e.strerror}",
                fix=f"delete {viewer.venv} so hil reinstalls the viewer",
            ) from e
    server = Server(port, process, log_path)
    try:
        _wait_healthy(server, viewer, progress)
    except BaseException:
        server.stop()
        raise
    return server


def _die_with_parent() -> None:
    """In the server's process: SIGTERM when hil's process ends, however it ends (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wait_healthy(server: Server, viewer: Viewer, progress: Progress) -> None:
    started = time.monotonic()
    said = 0.0
    while True:
        if server.process.poll() is not None:
            tail = _tail(server.log_path)
            if "already in use" in tail or "Address already in use" in tail:
                raise PortInUse(
                    f"port {server.port} on {HOST} was taken as the viewer started",
                    fix="pass another --port",
                )
            raise ViewerFailed(
                f"Model Explorer exited with status {server.process.returncode} before it "
                f"answered on {server.base_url} (log: {server.log_path})",
                fix=f"delete {viewer.venv} so hil reinstalls the viewer; the log says why",
                log_tail=tail,
            )
        if _healthy(server.base_url):
            log.info(
                "Model Explorer ready on %s after %.1f s",
                server.base_url,
                time.monotonic() - started,
            )
            return
        waited = time.monotonic() - started
        if waited > START_TIMEOUT_S:
            raise ViewerFailed(
                f"Model Explorer did not answer on {server.base_url} within "
                f"{START_TIMEOUT_S:.0f} s (log: {server.log_path})",
                fix="the machine may be overloaded; run again, or delete "
                f"{viewer.venv} so hil reinstalls the viewer",
                log_tail=_tail(server.log_path),
            )
        if waited - said >= 5.0:
            said = waited
            progress(f"starting Model Explorer ({waited:.0f} s so far)")
        time.sleep(0.25)


def _healthy(base_url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    with (
        contextlib.suppress(OSError, urllib.error.URLError),
        opener.open(f"{base_url}/check_health", timeout=2) as reply,
    ):
        return bool(reply.read().decode(errors="replace").strip() == HEALTHY)
    return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
