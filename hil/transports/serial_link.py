"""A Link over pyserial: a device node, a pty path, socket://, rfc2217:// or any URL
`serial.serial_for_url` understands (labgrid's pyserial fork included)."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import time
from typing import Any

from hil.errors import LinkTimeout, TransportError

POLL_S = 0.05  # granularity of a blocking read: short enough to honour any deadline closely


class SerialLink:
    """Opens the port on `open()`, never in the constructor."""

    def __init__(self, url: str, *, baudrate: int = 115200, write_timeout_s: float = 10.0) -> None:
        self.name = url
        self.url = url
        self.baudrate = baudrate
        self.write_timeout_s = write_timeout_s
        self._port: Any = None
        self._fd: int | None = None
        self.log = logging.getLogger(f"hil.transport.SerialLink({url})")

    def open(self) -> SerialLink:
        import serial

        try:
            self._port = serial.serial_for_url(
                self.url,
                baudrate=self.baudrate,
                timeout=POLL_S,
                write_timeout=self.write_timeout_s,
            )
        except (serial.SerialException, OSError, ValueError) as e:
            raise TransportError(
                f"cannot open serial port {self.url}: {e}",
                fix="check the port in the device file's connection.port (and that no other "
                "program holds it)",
            ) from e
        # Where the port has a descriptor (device nodes, ptys, socket://), wait on it with
        # select and drain without blocking: one wake-up per burst, whatever its size. Other
        # ports (rfc2217://) are polled.
        try:
            self._fd = int(self._port.fileno())
            self._port.timeout = 0
        except (AttributeError, OSError, ValueError, serial.SerialException):
            self._fd = None
        self.log.debug(
            "opened at %d baud (%s)", self.baudrate, "select" if self._fd is not None else "polled"
        )
        return self

    def _require(self) -> Any:
        if self._port is None:
            raise TransportError(f"serial port {self.url} is not open")
        return self._port

    def write(self, data: bytes) -> None:
        import serial

        port = self._require()
        try:
            if self._fd is not None:
                self._write_fd(self._fd, data)
            else:
                port.write(data)
        except serial.SerialTimeoutException as e:
            raise self._stuck(len(data)) from e
        except (serial.SerialException, OSError) as e:
            raise TransportError(f"{self.url}: write failed: {e}") from e

    def _write_fd(self, fd: int, data: bytes) -> None:
        """Write through the descriptor from a memoryview: pyserial's own loop copies the
        unwritten rest of the buffer after every partial write, which for a megabyte frame
        into a pty (tens of kilobytes per write) costs more than the transfer's checksums."""
        view = memoryview(data)
        deadline = time.monotonic() + self.write_timeout_s
        while view:
            with contextlib.suppress(BlockingIOError):  # full: wait below
                view = view[os.write(fd, view) :]
            if view:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
                    raise self._stuck(len(data))

    def _stuck(self, size: int) -> LinkTimeout:
        return LinkTimeout(
            f"{self.url}: the peer stopped reading; {size} bytes could not be written "
            f"within {self.write_timeout_s:.0f} s",
            fix="the runner is stuck or gone: reset the board",
        )

    def read(self, max_bytes: int, timeout: float) -> bytes:
        import serial

        port = self._require()
        try:
            if self._fd is not None:
                ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout))
                data: bytes = port.read(max_bytes) if ready else b""
                return data
            return self._polled_read(port, max_bytes, timeout)
        except (serial.SerialException, OSError) as e:
            raise TransportError(f"{self.url}: read failed: {e}") from e

    @staticmethod
    def _polled_read(port: Any, max_bytes: int, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            waiting = port.in_waiting
            if waiting:
                data: bytes = port.read(min(waiting, max_bytes))
                return data
            first: bytes = port.read(1)  # blocks up to POLL_S
            if first:
                more = port.in_waiting
                if more and max_bytes > 1:
                    first += port.read(min(more, max_bytes - 1))
                return first
            if time.monotonic() >= deadline:
                return b""

    def close(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except Exception:  # closing a port whose device vanished may fail; it is closed
                self.log.debug("close failed", exc_info=True)
