"""A Link over a telnet TCP port, as ser2net serves a board's UART (labgrid's exporter starts
ser2net with a `telnet(rfc2217)` accepter for every exported serial port).

Why not pyserial's `rfc2217://`: its client moves about 0.2 MB/s on loopback (a reader thread
and a polled queue), a plain socket to the same port about 5.5 MB/s. Why not `socket://`: the
port speaks telnet, so a raw socket would see ser2net's option negotiation as data and every
0xFF byte of a frame doubled. This link is a plain socket with just enough telnet: it doubles
0xFF when writing, takes IAC sequences out of what it reads, and answers the negotiation
asking for an 8-bit clean (BINARY) stream both ways, refusing every other option (the serial
line's settings are the exporter's; COM-PORT control is not needed to carry bytes).

It only moves bytes; losing the connection is a TransportError, a peer that stops reading a
LinkTimeout.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import time
from urllib.parse import urlsplit

from hil.errors import LinkTimeout, TransportError

SCHEME = "telnet"
IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
BINARY, ECHO, SGA = 0, 1, 3
ACCEPTED = {BINARY, SGA}  # options we agree to on both sides
CONNECT_TIMEOUT_S = 10.0
QUICKACK = getattr(socket, "TCP_QUICKACK", 0)  # Linux only


def telnet_url(host: str, port: int) -> str:
    return f"{SCHEME}://{host}:{port}"


class TelnetDecoder:
    """Splits a telnet byte stream into data and the negotiation answers it asks for.

    Incremental: an IAC sequence cut between two reads is completed by the next.
    """

    def __init__(self) -> None:
        self._pending = b""  # an unfinished IAC sequence
        self._in_subnegotiation = False

    def feed(self, chunk: bytes) -> tuple[bytes, bytes]:
        """(data, answers): the payload bytes, and what to send back to the peer."""
        buf = self._pending + chunk
        self._pending = b""
        data = bytearray()
        answers = bytearray()
        i = 0
        n = len(buf)
        while i < n:
            if self._in_subnegotiation:
                end = buf.find(bytes((IAC, SE)), i)
                if end < 0:  # keep a trailing IAC: it may begin IAC SE
                    self._pending = buf[-1:] if buf[-1] == IAC else b""
                    return bytes(data), bytes(answers)
                self._in_subnegotiation = False
                i = end + 2
                continue
            at = buf.find(IAC, i)
            if at < 0:
                data += buf[i:]
                break
            data += buf[i:at]
            if at + 1 >= n:
                self._pending = buf[at:]
                break
            command = buf[at + 1]
            if command == IAC:
                data.append(IAC)
                i = at + 2
            elif command in (DO, DONT, WILL, WONT):
                if at + 2 >= n:
                    self._pending = buf[at:]
                    break
                answers += _answer(command, buf[at + 2])
                i = at + 3
            elif command == SB:
                self._in_subnegotiation = True
                i = at + 2
            else:  # NOP, GA, break and the like carry no data
                i = at + 2
        return bytes(data), bytes(answers)


def _answer(command: int, option: int) -> bytes:
    if command == DO:
        return bytes((IAC, WILL if option in ACCEPTED else WONT, option))
    if command == WILL:
        return bytes((IAC, DO if option in ACCEPTED else DONT, option))
    return b""  # DONT / WONT: we never insist


def escape(data: bytes | memoryview) -> bytes:
    return bytes(data).replace(b"\xff", b"\xff\xff")


class TelnetLink:
    """Connects on `open()`, never in the constructor."""

    def __init__(self, url: str, *, write_timeout_s: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != SCHEME or not parts.hostname or parts.port is None:
            raise TransportError(f"not a telnet URL: {url!r}", fix="use telnet://HOST:PORT")
        self.name = url
        self.url = url
        self.address = (parts.hostname, parts.port)
        self.write_timeout_s = write_timeout_s
        self._sock: socket.socket | None = None
        self._decoder = TelnetDecoder()
        self.log = logging.getLogger(f"hil.transport.TelnetLink({url})")

    def open(self) -> TelnetLink:
        try:
            sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT_S)
        except OSError as e:
            raise TransportError(
                f"cannot connect to the serial port server at {self.url}: {e}",
                fix="check that the place is acquired and its exporter (ser2net) runs",
            ) from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self._sock = sock
        # Ask for an 8-bit clean stream first; ser2net's own offers are answered as they come.
        self._send(bytes((IAC, WILL, BINARY, IAC, DO, BINARY)))
        return self

    def _require(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"{self.url} is not connected")
        return self._sock

    def write(self, data: bytes) -> None:
        self._send(escape(data))

    def _send(self, wire: bytes) -> None:
        sock = self._require()
        view = memoryview(wire)
        deadline = time.monotonic() + self.write_timeout_s
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:
                pass
            except OSError as e:
                raise TransportError(f"{self.url}: the connection failed while writing: {e}") from e
            if view:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [sock], [], remaining)[1]:
                    raise LinkTimeout(
                        f"{self.url}: the peer stopped reading; {len(view)} bytes could not be "
                        f"written within {self.write_timeout_s:.0f} s",
                        fix="the runner is stuck or the serial server stalled: reset the board",
                    )

    def read(self, max_bytes: int, timeout: float) -> bytes:
        sock = self._require()
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            remaining = deadline - time.monotonic()
            if not select.select([sock], [], [], max(0.0, remaining))[0]:
                return b""
            try:
                chunk = sock.recv(max_bytes)
                # ACK at once rather than 40 ms later: ser2net sends a reply in pieces, and
                # Nagle holds each next piece until the last is acknowledged. Linux resets
                # the flag after each receive, so it is set again every time.
                sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1) if QUICKACK else None
            except BlockingIOError:
                continue
            except OSError as e:
                raise TransportError(f"{self.url}: the connection failed while reading: {e}") from e
            if not chunk:
                raise TransportError(
                    f"{self.url}: the serial port server closed the connection",
                    fix="the exporter or its ser2net stopped, or the place was released",
                )
            data, answers = self._decoder.feed(chunk)
            if answers:
                self._send(answers)
            if data or time.monotonic() >= deadline:
                return data

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
