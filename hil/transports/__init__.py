"""Byte-moving only: a `Link` writes bytes, reads bytes with a timeout, and closes.

Everything above (framing, commands, targets) works over any Link, so the same protocol
client drives a board's UART, a virtual board's pty, an SSH channel or an emulator's socket.
"""

from __future__ import annotations

from typing import Protocol


class Link(Protocol):
    """A bidirectional byte stream."""

    name: str

    def write(self, data: bytes) -> None:
        """Send all of `data`; raise TransportError if the link is gone, LinkTimeout if stuck."""
        ...

    def read(self, max_bytes: int, timeout: float) -> bytes:
        """Up to `max_bytes` bytes, waiting at most `timeout` s for the first; b"" on timeout."""
        ...

    def close(self) -> None:
        """Release the link; safe to call twice."""
        ...


__all__ = ["Link"]
