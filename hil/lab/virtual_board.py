"""One virtual board of the virtual rack: the host runner on a pty, behind a power switch.

    python -m hil.lab.virtual_board --name vb1 --runner PATH --log FILE [--baud N]
                                    [--runner-arg ARG]...

It holds both sides of a pseudo-terminal for its whole life, so the serial port
(/dev/pts/N, which labgrid's exporter serves through ser2net) survives the runner being
switched off and on, as a board's UART does. The runner runs on the pty's master side. A
power switch answers HTTP on loopback in the shape of labgrid's `simplerest` power model
(GET /power/0/1 on, /power/0/0 off, /power/0 state), so the exporter can export it as a
NetworkPowerPort and labgrid's NetworkPowerDriver switches it. Off kills the runner (a board
losing power); on starts a fresh one. A runner that faults stays dead until power-cycled,
like a halted board.

With --baud, bytes cross between the pty and the runner at that UART's rate (8N1: baud / 10
bytes per second each way), as on a board whose console UART runs at the speed the exporter
declares for it; without, the runner sits on the pty itself and bytes move at memory speed.

On start it prints one JSON line: {"pty": ..., "power_url": ..., "pid": ...}. SIGTERM ends
it and its runner; killing its process group (the rack does) kills the board outright.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import tty
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

POWER_PATH = "/power/{index}/{value}"


class Uart:
    """Bytes between the pty's master side and the runner's end of a socket pair, each way at
    `baud / 10` bytes per second. While no runner is attached (power off), what the host sends
    is lost, as on a board without power."""

    CHUNK = 64

    def __init__(self, master: int, baud: int) -> None:
        self.master = master
        self.rate = baud / 10.0
        self._board_end: socket.socket | None = None
        self._lock = threading.Lock()

    def start(self) -> Uart:
        threading.Thread(target=self._to_runner, name="uart-rx", daemon=True).start()
        return self

    def attach(self) -> socket.socket:
        """A fresh line for a runner that is powering on; returns the runner's end."""
        board_end, runner_end = socket.socketpair()
        with self._lock:
            old, self._board_end = self._board_end, board_end
        if old is not None:
            old.close()
        threading.Thread(
            target=self._to_host, args=(board_end,), name="uart-tx", daemon=True
        ).start()
        return runner_end

    def detach(self) -> None:
        with self._lock:
            old, self._board_end = self._board_end, None
        if old is not None:
            old.close()

    def _pace(self, due: float, size: int) -> float:
        """Wait until the line is free, return when it is free again after `size` bytes."""
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        return max(due, now) + size / self.rate

    def _to_runner(self) -> None:
        due = 0.0
        while True:
            select.select([self.master], [], [])
            try:
                data = os.read(self.master, self.CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                return
            due = self._pace(due, len(data))
            with self._lock:
                end = self._board_end
            if end is not None:
                with contextlib.suppress(OSError):
                    end.sendall(data)

    def _to_host(self, end: socket.socket) -> None:
        due = 0.0
        while True:
            try:
                data = end.recv(self.CHUNK)
            except OSError:
                return
            if not data:
                return
            due = self._pace(due, len(data))
            with contextlib.suppress(OSError):
                os.write(self.master, data)


class Board:
    def __init__(self, runner: Path, args: list[str], log: IO[bytes], baud: int = 0) -> None:
        self.runner = runner
        self.args = args
        self.log = log
        self.baud = baud
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.uart: Uart | None = None
        self.master = self.slave = -1
        self.pty = ""

    def open(self) -> Board:
        """The pty, both ends held for the board's life (and the UART on it, if paced)."""
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)  # bytes untouched: no echo, no line editing
        self.pty = os.ttyname(self.slave)
        self.uart = Uart(self.master, self.baud).start() if self.baud else None
        return self

    def _say(self, text: str) -> None:
        self.log.write(f"--- {time.strftime('%H:%M:%S')} {text}\n".encode())
        self.log.flush()

    @property
    def powered(self) -> bool:
        return self.process is not None

    def on(self) -> None:
        with self.lock:
            if self.process is not None and self.process.poll() is None:
                return
            self._say("power on")
            line = self.uart.attach() if self.uart else None
            fd = line.fileno() if line else self.master
            # the same process group as the board: killing the group kills the runner too
            self.process = subprocess.Popen(
                [str(self.runner), "--stdio", *self.args],
                stdin=fd,
                stdout=fd,
                stderr=self.log,
                close_fds=True,
            )
            if line is not None:
                line.close()  # the runner holds it now

    def off(self) -> None:
        with self.lock:
            process, self.process = self.process, None
            if process is not None:
                self._say("power off")
                process.kill()
                process.wait()
            if self.uart is not None:
                self.uart.detach()


def serve_power(board: Board) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if len(parts) == 3 and parts[0] == "power" and parts[2] in ("0", "1"):
                (board.on if parts[2] == "1" else board.off)()
                body = b"ok"
            elif len(parts) == 2 and parts[0] == "power":
                body = b"1" if board.powered else b"0"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="power", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--runner", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--baud", type=int, default=0, help="pace the UART (default: no)")
    parser.add_argument("--runner-arg", action="append", default=[])
    args = parser.parse_args(argv)
    with args.log.open("ab") as log:
        board = Board(args.runner, args.runner_arg, log, args.baud).open()
        server = serve_power(board)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        board.on()
        power_url = f"http://127.0.0.1:{server.server_address[1]}{POWER_PATH}"
        print(
            json.dumps({"pty": board.pty, "power_url": power_url, "pid": os.getpid()}), flush=True
        )
        stop.wait()
        board.off()
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
