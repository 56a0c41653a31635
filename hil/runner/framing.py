"""Frames of the runner protocol (firmware/PROTOCOL.md): encoding, and a decoder that finds
checked frames in a byte stream that may carry garbage, lost bytes or flipped bits.

    A5 5A | type u8 | flags u8 | seq u16 | length u32 | header check u16 | payload | CRC-32 u32

The header check (low 16 bits of the CRC-32 of the ten bytes before it) lets the decoder
reject a damaged length at once instead of waiting for bytes that will never come. The
trailing CRC-32 covers header and payload. A frame that fails it is reported as `Corrupt`
(with its type and seq, which the header check vouches for) and the hunt resumes one byte
past its magic, because a retransmission may begin inside the span it claimed.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"\xa5\x5a"
HEADER = struct.Struct("<2sBBHIH")
HEADER_SIZE = HEADER.size  # 12
TRAILER_SIZE = 4
OVERHEAD = HEADER_SIZE + TRAILER_SIZE
CRC = struct.Struct("<I")


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes


@dataclass(frozen=True)
class Corrupt:
    """A frame whose header checked out but whose CRC did not (or whose tail never came)."""

    type: int
    seq: int


def _header(kind: int, seq: int, length: int) -> bytes:
    head = struct.pack("<2sBBHI", MAGIC, kind, 0, seq & 0xFFFF, length)
    return head + struct.pack("<H", zlib.crc32(head) & 0xFFFF)


def encode(kind: int, seq: int, *parts: bytes | memoryview) -> bytes:
    """One frame whose payload is the concatenation of `parts` (copied once)."""
    length = sum(len(p) for p in parts)
    head = _header(kind, seq, length)
    crc = zlib.crc32(head)
    for part in parts:
        crc = zlib.crc32(part, crc)
    return b"".join((head, *parts, CRC.pack(crc)))


class FrameDecoder:
    """Feed bytes in, take frames out. Never raises on bad input: it skips it and counts it."""

    def __init__(self, max_payload: int = 1 << 24) -> None:
        self.max_payload = max_payload
        self._buf = bytearray()
        self._start = 0
        self.garbage = 0  # bytes skipped while hunting for a frame
        self.corrupt = 0  # frames with a valid header that failed their CRC

    def feed(self, data: bytes) -> None:
        if self._start and self._start >= len(self._buf) // 2:
            del self._buf[: self._start]
            self._start = 0
        self._buf += data

    def _skip_to_magic(self, past: int) -> None:
        at = self._buf.find(MAGIC[:1], self._start + past)
        end = len(self._buf) if at < 0 else at
        self.garbage += end - self._start
        self._start = end

    def _header_at(self, pos: int) -> tuple[int, int, int] | None:
        """(type, seq, length) if a plausible header starts at pos."""
        magic, kind, _flags, seq, length, check = HEADER.unpack_from(self._buf, pos)
        if magic != MAGIC or check != zlib.crc32(self._buf[pos : pos + 10]) & 0xFFFF:
            return None
        if length > self.max_payload:
            return None
        return kind, seq, length

    def next(self) -> Frame | Corrupt | None:
        """The next complete frame or corruption report; None when more bytes are needed."""
        buf = self._buf
        while True:
            available = len(buf) - self._start
            if available == 0:
                return None
            if buf[self._start] != MAGIC[0]:
                self._skip_to_magic(0)
                continue
            if available < HEADER_SIZE:
                if available >= 2 and buf[self._start + 1] != MAGIC[1]:
                    self._skip_to_magic(1)
                    continue
                return None
            header = self._header_at(self._start)
            if header is None:
                self._skip_to_magic(1)
                continue
            kind, seq, length = header
            total = OVERHEAD + length
            if available < total:
                return None
            body = memoryview(buf)[self._start : self._start + HEADER_SIZE + length]
            (crc,) = CRC.unpack_from(buf, self._start + HEADER_SIZE + length)
            if zlib.crc32(body) != crc:
                body.release()
                self.corrupt += 1
                self._skip_to_magic(1)
                return Corrupt(kind, seq)
            payload = bytes(body[HEADER_SIZE:])
            body.release()
            self._start += total
            return Frame(kind, seq, payload)

    def abandon_partial(self) -> Corrupt | None:
        """Give up a frame whose tail did not come in time; report it if its header was valid."""
        if len(self._buf) - self._start < HEADER_SIZE:
            return None
        header = self._header_at(self._start)
        self._skip_to_magic(1)
        if header is None:
            return None
        self.corrupt += 1
        return Corrupt(header[0], header[1])
