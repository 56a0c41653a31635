"""The runner protocol's typed commands (firmware/PROTOCOL.md), over any Link.

A model moves in chunks with a window of them in flight (as many as the runner says it can
buffer), so a fast link is not idle while acks travel; a chunk that is NAKed, refused as out
of sequence or unanswered makes the client go back to the last byte the runner acknowledged.
The runner checks the whole model against its sha256 before it takes it, and reports the
hash it holds, so an unchanged model is never sent twice.
"""

from __future__ import annotations

import collections
import hashlib
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from numpy.typing import NDArray

from hil.errors import ProtocolError, TraceUnavailable
from hil.runner import messages as m
from hil.runner.channel import (
    REFLASH,
    Channel,
    Failed,
    LinkStats,
    too_large,
)
from hil.runner.framing import OVERHEAD
from hil.settings.common import LinkPolicy
from hil.transports import Link

__all__ = ["LinkPolicy", "LinkStats", "LoadOutcome", "RunnerClient"]

T = TypeVar("T")


@dataclass(frozen=True)
class LoadOutcome:
    bytes_sent: int  # model bytes put on the wire (retransmissions included); 0 if held
    method: m.MethodInfo


class RunnerClient:
    """Typed commands for one runner; call hello() first."""

    def __init__(
        self,
        link: Link,
        *,
        name: str = "runner",
        policy: LinkPolicy | None = None,
        protocol: tuple[int, int] = m.PROTOCOL_VERSION,
        chunk_bytes: int = 1 << 20,
    ) -> None:
        self.channel = Channel(link, name, policy or LinkPolicy(), protocol)
        self.name = name
        self.chunk_bytes = chunk_bytes
        self.info: m.RunnerInfo | None = None

    @property
    def stats(self) -> LinkStats:
        return self.channel.stats

    @property
    def log_lines(self) -> collections.deque[str]:
        return self.channel.log_lines

    def take_log(self) -> list[str]:
        return self.channel.take_log()

    def request(
        self, kind: int, *parts: bytes | memoryview, reply_size: int = 0, running: bool = False
    ) -> bytes:
        return self.channel.request(kind, *parts, reply_size=reply_size, running=running)

    def _info(self) -> m.RunnerInfo:
        if self.info is None:
            raise ProtocolError(f"{self.name}: no handshake yet (call hello() first)")
        return self.info

    def hello(self) -> m.RunnerInfo:
        """Handshake; refuses a runner whose protocol major differs, naming both versions."""
        mine = self.channel.protocol
        info = m.RunnerInfo.parse(self.request(m.HELLO, struct.pack("<HH", *mine)))
        if info.protocol[0] != mine[0]:
            raise ProtocolError(
                f"{self.name}: protocol version mismatch: the runner speaks "
                f"{info.protocol[0]}.{info.protocol[1]}, this hil speaks {mine[0]}.{mine[1]}",
                fix=REFLASH + ", or use the hil version that matches the runner",
            )
        self.info = info
        self.channel.decoder.max_payload = max(info.max_payload, 1 << 16)
        return info

    # -- models ----------------------------------------------------------------------------

    def load(self, data: bytes, sha256: str | None = None) -> LoadOutcome:
        """Make the runner hold this model: sent in chunks, unless it holds it already."""
        info = self._info()
        digest = bytes.fromhex(sha256) if sha256 else hashlib.sha256(data).digest()
        pool = info.pools.get("model")
        if pool is not None and len(data) > pool:
            raise too_large(self.name, len(data), pool)
        begin = m.Reader(
            self.request(m.LOAD_BEGIN, digest, struct.pack("<Q", len(data))), "LOAD_BEGIN"
        )
        held, chunk = begin.u8(), begin.u32()
        if held:  # the runner has it: nothing moves, and it describes the method it holds
            return LoadOutcome(0, m.MethodInfo.parse(begin.rest()))
        chunk = max(1, min(chunk, self.chunk_bytes, info.max_payload - 8))
        sent = self._send_chunks(memoryview(data), chunk, max(1, info.window))
        # the runner hashes and parses the program before it answers
        end = self.request(m.LOAD_END, reply_size=len(data) // 20)
        self.info = replace(info, holds_model=True, held_sha256=digest.hex())
        return LoadOutcome(sent, m.MethodInfo.parse(end))

    def _send_chunks(self, view: memoryview, chunk: int, window: int) -> int:
        """Stream LOAD_CHUNKs, `window` in flight; on any failure go back to the last byte the
        runner acknowledged and halve the chunk (a noisy line damages big frames most), and
        grow it again after a run of clean acks. Returns the model bytes sent."""
        channel = self.channel
        size, largest, smallest = len(view), chunk, min(chunk, 1024)
        acked = next_offset = sent = clean = 0
        inflight: collections.deque[tuple[int, int, int]] = collections.deque()  # seq, end, bytes
        failures: list[Failed] = []
        while acked < size:
            while len(inflight) < window and next_offset < size:
                piece = view[next_offset : next_offset + chunk]
                seq = channel.next_seq()
                frame = channel.send(m.LOAD_CHUNK, seq, struct.pack("<Q", next_offset), piece)
                next_offset += len(piece)
                sent += len(piece)
                inflight.append((seq, next_offset, frame))
            seq, end, frame = inflight.popleft()
            wait_s = channel.wait_s(frame * (len(inflight) + 1))
            reply = channel.await_reply(m.LOAD_CHUNK, seq, wait_s)
            if isinstance(reply, bytes):
                (received,) = struct.unpack_from("<Q", reply)
                if received >= end:
                    acked = max(acked, received)
                    failures.clear()
                    clean += 1
                    if clean >= 8 and chunk < largest:
                        chunk, clean = min(largest, chunk * 2), 0
                    continue
                failure = Failed(f"after the chunk ending at {end} the runner holds {received}")
            elif isinstance(reply, m.ErrorReply):
                if reply.code != m.ERR_SEQUENCE:
                    raise channel.refusal(m.LOAD_CHUNK, reply)
                failure = Failed(f"a chunk went missing; the runner holds {reply.a} bytes")
            else:
                failure = reply
            failures.append(failure)
            if len(failures) > channel.policy.retries:
                raise channel.gave_up("LOAD_CHUNK", failures)
            channel.stats.retransmits += 1
            chunk, clean = max(smallest, chunk // 2), 0
            channel.log.warning(
                "model transfer: %s; resending from byte %d in %d-byte chunks",
                failure.reason,
                acked,
                chunk,
            )
            inflight.clear()  # their replies, if any come, carry seqs nobody waits for
            next_offset = acked
        return sent

    # -- inputs, runs, outputs -------------------------------------------------------------

    def set_input(self, index: int, spec: m.TensorSpec, data: bytes) -> None:
        head = struct.pack("<B", index) + spec.pack()
        chunk = self._info().max_payload - len(head) - 8 - OVERHEAD
        view = memoryview(data)
        offset = 0
        while True:
            piece = view[offset : offset + chunk]
            reply = self.request(m.SET_INPUT, head, struct.pack("<Q", offset), piece)
            offset += len(piece)
            if struct.unpack_from("<Q", reply)[0] != offset:
                raise ProtocolError(
                    f"{self.name}: input {index} lost bytes on the way", fix=REFLASH
                )
            if offset >= len(data):
                return

    def run(
        self, warmup: int, min_runs: int, max_runs: int, min_time_s: float, max_time_s: float
    ) -> m.RunTimes:
        """Warm-up and timed runs, done on the runner in one request; per-run ticks back."""
        request = struct.pack(
            "<IIIIQQ", warmup, min_runs, max_runs, 0, int(min_time_s * 1e6), int(max_time_s * 1e6)
        )
        reply = self.request(m.RUN, request, reply_size=8 * max_runs, running=True)
        return m.RunTimes.parse(reply)

    def get_output(self, index: int) -> NDArray[Any]:
        """Output `index` of the last run, fetched in as many pieces as it needs."""

        def head(reply: m.Reader) -> tuple[m.TensorSpec, int]:
            spec = m.TensorSpec.read(reply)
            return spec, spec.nbytes

        spec, data = self._read_pieces(m.GET_OUTPUT, index, f"output {index}", head)
        return m.to_numpy(spec, data)

    def _read_pieces(
        self, kind: int, index: int, what: str, head: Callable[[m.Reader], tuple[T, int]]
    ) -> tuple[T, bytes]:
        """A buffer of the runner's fetched in pieces (GET_OUTPUT, GET_TRACE): each reply begins
        with what describes the whole, the same in every piece (`head` reads it and the whole's
        size), then the piece's offset and bytes."""
        limit = self._info().max_payload - 64
        pieces: list[bytes] = []
        offset, size = 0, 0
        described: T | None = None
        while described is None or offset < size:
            request = struct.pack("<B3xQI", index, offset, limit)
            reply = m.Reader(self.request(kind, request, reply_size=limit), m.name_of(kind))
            piece_head, size = head(reply)
            if described is not None and piece_head != described:
                raise ProtocolError(f"{self.name}: {what} changed while read", fix=REFLASH)
            described = piece_head
            if reply.u64() != offset:
                raise ProtocolError(f"{self.name}: {what} came back out of order", fix=REFLASH)
            piece = reply.rest()
            if not piece and offset < size:
                raise ProtocolError(f"{self.name}: {what} stopped at {offset} bytes", fix=REFLASH)
            pieces.append(piece)
            offset += len(piece)
        return described, b"".join(pieces)

    # -- traces (1.3) -------------------------------------------------------------------------

    def trace(self, start: bool, debug_bytes: int = 0) -> None:
        """ExecuTorch's ETDump recorder on (with a debug buffer of `debug_bytes` for every
        intermediate output, when > 0) or off. The runner loads its model again either way:
        inputs are set again before the next run."""
        info = self._info()
        if not info.trace:
            raise TraceUnavailable(
                f"{self.name}: the runner records no ETDump (protocol "
                f"{info.protocol[0]}.{info.protocol[1]}, build {info.build_id}): it is older "
                "than protocol 1.3 or was built without ExecuTorch's ETDump",
                fix="rebuild and flash the runner with an ExecuTorch that has ETDump "
                "(hil firmware build --target NAME --force)",
            )
        self.request(m.TRACE, struct.pack("<B3xQ", int(start), debug_bytes), running=True)

    def get_trace(self, part: int) -> bytes:
        """A recorded part (messages.TRACE_ETDUMP or TRACE_DEBUG), joined from as many pieces as
        it needs and checked against the CRC-32 the runner computed over the whole."""

        def head(reply: m.Reader) -> tuple[tuple[int, int], int]:
            size, crc = reply.u64(), reply.u32()
            return (size, crc), size

        (total, crc), data = self._read_pieces(m.GET_TRACE, part, f"trace part {part}", head)
        if zlib.crc32(data) != crc:
            raise ProtocolError(
                f"{self.name}: trace part {part} ({total} bytes) does not match the runner's "
                "CRC-32",
                fix=REFLASH,
            )
        return data

    # -- the rest ----------------------------------------------------------------------------

    def mem_stats(self) -> tuple[m.PoolStat, ...]:
        return m.parse_pools(self.request(m.MEM_STATS))

    def link_stats(self) -> m.LinkStats:
        """What reached the runner, counted by the runner (protocol 1.2)."""
        info = self.info
        if info is not None and info.protocol < (1, 2):
            raise ProtocolError(
                f"{self.name}: the runner speaks {info.protocol[0]}.{info.protocol[1]} and "
                "counts nothing (LINK_STATS needs 1.2)",
                fix="rebuild and flash the runner: hil firmware build --target NAME --force",
            )
        return m.LinkStats.parse(self.request(m.LINK_STATS))

    def fault_report(self, clear: bool = False) -> m.FaultReport | None:
        return m.FaultReport.parse(self.request(m.FAULT_REPORT, bytes([int(clear)])))

    def echo(self, payload: bytes) -> bytes:
        return self.request(m.ECHO, payload, reply_size=len(payload))

    def reset(self) -> None:
        """Ask the runner to reset; a bare-metal runner reboots, so handshake again after."""
        self.request(m.RESET)
        self.info = None

    def debug(self, op: int, *, during_next_run: bool) -> None:
        """Fault injection: hang or fault now (no reply comes) or inside the next RUN."""
        payload = bytes([op, int(during_next_run)])
        if during_next_run:
            self.request(m.DEBUG, payload)
        else:
            self.channel.send(m.DEBUG, self.channel.next_seq(), payload)
