"""A Link over pyserial: a device node, a pty path, socket://, rfc2217:// or any URL
`serial.serial_for_url` understands (labgrid's pyserial fork included)."""

from __future__ import annotations

import logging
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
        self.log.debug("opened at %d baud", self.baudrate)
        return self

    def _require(self) -> Any:
        if self._port is None:
            raise TransportError(f"serial port {self.url} is not open")
        return self._port

    def write(self, data: bytes) -> None:
        import serial

        port = self._require()
        try:
            port.write(data)
        except serial.SerialTimeoutException as e:
            raise LinkTimeout(
                f"{self.url}: the peer stopped reading; {len(data)} bytes could not be written "
                f"within {self.write_timeout_s:.0f} s",
                fix="the runner is stuck or gone: reset the board",
            ) from e
        except (serial.SerialException, OSError) as e:
            raise TransportError(f"{self.url}: write failed: {e}") from e

    def read(self, max_bytes: int, timeout: float) -> bytes:
        import serial

        port = self._require()
        deadline = time.monotonic() + timeout
        try:
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
        except (serial.SerialException, OSError) as e:
            raise TransportError(f"{self.url}: read failed: {e}") from e

    def close(self) -> None:
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except Exception:  # closing a port whose device vanished may fail; it is closed
                self.log.debug("close failed", exc_info=True)
