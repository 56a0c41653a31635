"""The fake FVP's telnet terminal 0: a TCP port bridged to QEMU's UART0, plus the fake's
stand-in for the Ethos-U PMU report.

Bytes pass unchanged in both directions (raw mode), one client at a time; a client that goes
away leaves the port open for the next (as Arm documents for the TelnetTerminal). In telnet
mode the fake opens with telnet negotiation bytes and quits the simulation when the client's
first byte is not a telnet command, which is what Arm's knowledge base says the real terminal
does with a client that does not negotiate.

The PMU stand-in is the one thing here no FVP does: QEMU has no Ethos-U, so the runner under
it cannot read an NPU PMU. Reading the runner protocol's frames (firmware/PROTOCOL.md) as they
pass, the bridge notes the sha256 of each model loaded (LOAD_BEGIN, LOAD_FILE), finds that model's Vela
estimate in an artifact cache named by $HIL_FAKE_FVP_ARTIFACTS, and before each RUN reply
sends the runner's PMU report lines (hil/fvp/pmu.py contract) that a runner built with the
Ethos-U driver would have sent: one per NPU delegate per execution, with Vela's estimated
NPU cycles for that delegate as the "cycles". They are simulated, and equal Vela by
construction.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from hil.runner.framing import HEADER, HEADER_SIZE, MAGIC, TRAILER_SIZE, encode

LOAD_BEGIN = 0x10
LOAD_FILE = 0x13  # the model read through semihosting: its sha256 leads the request too
RUN_REPLY = 0x30 | 0x80
LOG = 0xF0
EOT = 0x04
IAC = 0xFF
TELNET_OPENING = bytes([IAC, 251, 1, IAC, 251, 3, IAC, 253, 3, IAC, 254, 34, IAC, 253, 31])
ARTIFACTS_ENV = "HIL_FAKE_FVP_ARTIFACTS"


def vela_delegate_cycles(sha256: str) -> list[int] | None:
    """Per-delegate Vela NPU cycles of the artifact whose .pte has this sha256, if cached."""
    for root in filter(None, os.environ.get(ARTIFACTS_ENV, "").split(os.pathsep)):
        for meta in Path(root).glob("artifacts/*/artifact.json"):
            try:
                record = json.loads(meta.read_text())
            except (OSError, ValueError):
                continue
            if record.get("sha256") == sha256:
                delegates = record.get("details", {}).get("delegates", [])
                return [int(d["vela"]["npu_cycles"]) for d in delegates if d.get("vela")]
    return None


class FrameSplitter:
    """Cuts a byte stream at frame boundaries without judging the frames (garbage passes on)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int | None, bytes]]:
        """(frame type or None for bytes that are no frame, raw bytes) ready to pass on."""
        self.buf += data
        out: list[tuple[int | None, bytes]] = []
        while self.buf:
            at = self.buf.find(MAGIC)
            if at != 0:
                keep = 1 if self.buf[-1:] == MAGIC[:1] else 0  # a magic may be split
                cut = len(self.buf) - keep if at < 0 else at
                if cut == 0:
                    break
                out.append((None, bytes(self.buf[:cut])))
                del self.buf[:cut]
                continue
            if len(self.buf) < HEADER_SIZE:
                break
            _, kind, _, _, length, _ = HEADER.unpack_from(self.buf)
            total = HEADER_SIZE + length + TRAILER_SIZE
            if length > (1 << 24):
                out.append((None, bytes(self.buf[:1])))
                del self.buf[:1]
                continue
            if len(self.buf) < total:
                break
            out.append((kind, bytes(self.buf[:total])))
            del self.buf[:total]
        return out


class UartBridge:
    """Telnet terminal 0 of the fake FVP. `run()` serves until `stop()`."""

    def __init__(
        self,
        listener: socket.socket,
        uart: socket.socket,
        raw: bool,
        shutdown_on_eot: bool,
        tee: Callable[[bytes], None] | None,
        on_stop: Callable[[str], None],
    ) -> None:
        self.listener = listener
        self.uart = uart
        self.raw = raw
        self.shutdown_on_eot = shutdown_on_eot
        self.tee = tee
        self.on_stop = on_stop
        self.client: socket.socket | None = None
        self.negotiated = True
        self.host_frames = FrameSplitter()
        self.target_frames = FrameSplitter()
        self.model_cycles: list[int] | None = None
        self._stop = threading.Event()
        self.selector = selectors.DefaultSelector()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.uart, selectors.EVENT_READ, "uart")
        while not self._stop.is_set():
            for key, _ in self.selector.select(timeout=0.1):
                if key.data == "accept":
                    self._accept()
                elif key.data == "uart":
                    self._from_target()
                else:
                    self._from_host()

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        if self.client is not None:  # one client at a time
            conn.close()
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client = conn
        self.selector.register(conn, selectors.EVENT_READ, "client")
        if not self.raw:
            self.negotiated = False
            conn.sendall(TELNET_OPENING)

    def _drop_client(self) -> None:
        if self.client is not None:
            self.selector.unregister(self.client)
            self.client.close()
            self.client = None

    def _from_host(self) -> None:
        assert self.client is not None
        try:
            data = self.client.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop_client()
            return
        if not self.negotiated:
            if data[0] != IAC:
                print(
                    "telnetterminal0: the client did not answer the telnet negotiation "
                    "(set mode=raw for a raw byte stream); quitting",
                    flush=True,
                )
                self.on_stop("telnet negotiation failed")
                return
            self.negotiated = True
        for kind, raw in self.host_frames.feed(data):
            if kind in (LOAD_BEGIN, LOAD_FILE) and len(raw) >= HEADER_SIZE + 32:
                digest = raw[HEADER_SIZE : HEADER_SIZE + 32].hex()
                self.model_cycles = vela_delegate_cycles(digest)
                if self.model_cycles is None:
                    print(
                        f"fake FVP: no Vela estimate for model {digest[:12]}: it gets no "
                        "simulated PMU report",
                        file=sys.stderr,
                        flush=True,
                    )
        self.uart.sendall(data)

    def _from_target(self) -> None:
        try:
            data = self.uart.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._stop.set()
            return
        if self.tee is not None:
            self.tee(data)
        out = bytearray()
        for kind, raw in self.target_frames.feed(data):
            if kind == RUN_REPLY:
                out += self._pmu_report(raw)
            out += raw
        if self.client is not None and out:
            try:
                self.client.sendall(bytes(out))
            except OSError:
                self._drop_client()
        if self.shutdown_on_eot and EOT in data:
            self.on_stop("EOT on uart0 (shutdown_on_eot)")

    def _pmu_report(self, run_reply: bytes) -> bytes:
        """The simulated PMU lines of one RUN: delegates x (warm-up + timed) executions."""
        if not self.model_cycles:
            return b""
        payload = run_reply[HEADER_SIZE:-TRAILER_SIZE]
        if len(payload) < 24:
            return b""
        timed, warmup = struct.unpack_from("<II", payload)
        frames = bytearray()
        for _ in range(warmup + timed):
            for cycles in self.model_cycles:
                line = f"ethos-u pmu: cycles={cycles}"
                frames += encode(LOG, 0, bytes([1]) + line.encode())
        return bytes(frames)
