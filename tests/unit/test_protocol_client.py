"""The protocol client against a scripted runner on a real pseudo-terminal.

The script plays the runner's side of the pty byte for byte, so each test decides exactly
what arrives: refusals, NAKs, damaged or missing replies, garbage, log and fault frames.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import tty
import zlib
from collections.abc import Callable, Iterator

import pytest

from hil.errors import DeployError, LinkTimeout, ProtocolError, TargetCrash, TraceUnavailable
from hil.runner import messages as m
from hil.runner.client import LinkPolicy, RunnerClient
from hil.runner.framing import HEADER_SIZE, Frame, FrameDecoder, encode
from hil.transports.serial_link import SerialLink

Handler = Callable[[Frame], bytes]
FAST = LinkPolicy(reply_timeout_s=0.3, bytes_per_s=1e7, run_timeout_s=0.5, retries=2)


class ScriptedPeer:
    """The runner end of a pty; `handler` answers each request frame with raw bytes."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.requests: list[Frame] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import select

        decoder = FrameDecoder()
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                decoder.feed(os.read(self.master, 1 << 16))
            except OSError:
                return
            while (item := decoder.next()) is not None:
                if isinstance(item, Frame):
                    self.requests.append(item)
                    out = self.handler(item)
                    if out:
                        os.write(self.master, out)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        os.close(self.master)
        os.close(self.slave)


def reply(frame: Frame, payload: bytes = b"") -> bytes:
    return encode(frame.type | m.REPLY, frame.seq, payload)


def error(frame: Frame, code: int, a: int = 0, b: int = 0, text: str = "no") -> bytes:
    body = struct.pack("<HHQQH", code, 0, a, b, len(text)) + text.encode()
    return encode(m.ERROR, frame.seq, body)


def hello_payload(
    major: int = 1,
    minor: int = 0,
    *,
    max_payload: int = 4096,
    window: int = 1,
    pools: dict[str, int] | None = None,
    flags: int = 0,
) -> bytes:
    pools = {"model": 1 << 20, "io": 1 << 16} if pools is None else pools
    out = struct.pack(
        "<HHIQBBBBHH", major, minor, max_payload, 1_000_000_000, 0, 1, flags, len(pools), window, 0
    )
    out += bytes(32)
    for text in ("test-build", "1.5.1", "script", "executorch"):
        out += bytes([len(text)]) + text.encode()
    for name, size in pools.items():
        out += bytes([len(name)]) + name.encode() + struct.pack("<Q", size)
    return out


@pytest.fixture
def scripted() -> Iterator[Callable[[Handler], RunnerClient]]:
    opened: list[tuple[ScriptedPeer, SerialLink]] = []

    def make(handler: Handler, policy: LinkPolicy = FAST) -> RunnerClient:
        peer = ScriptedPeer(handler)
        link = SerialLink(peer.path).open()
        opened.append((peer, link))
        client = RunnerClient(link, name="scripted", policy=policy, chunk_bytes=1000)
        client.peer = peer  # type: ignore[attr-defined]
        return client

    yield make
    for peer, link in opened:
        link.close()
        peer.close()


def answering_hello(**kwargs: object) -> Handler:
    def handler(frame: Frame) -> bytes:
        return reply(frame, hello_payload(**kwargs))  # type: ignore[arg-type]

    return handler


def test_handshake_reads_the_runner_facts(scripted: Callable[[Handler], RunnerClient]) -> None:
    client = scripted(answering_hello(window=4))
    info = client.hello()
    assert info.build_id == "test-build" and info.window == 4
    assert info.pools == {"model": 1 << 20, "io": 1 << 16}


def test_a_runner_of_another_major_version_is_refused_naming_both(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(answering_hello(major=2, minor=3))
    ours = r"\.".join(str(v) for v in m.PROTOCOL_VERSION)
    with pytest.raises(ProtocolError, match=rf"runner speaks 2\.3, this hil speaks {ours}"):
        client.hello()


def test_a_runner_refusing_our_version_is_reported_naming_both(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    def handler(frame: Frame) -> bytes:
        return error(frame, m.ERR_VERSION_MISMATCH, a=(1 << 16) | 0, b=(9 << 16), text="no")

    client = scripted(handler)
    client.channel.protocol = (9, 0)
    with pytest.raises(ProtocolError, match=r"runner speaks 1\.0, this hil speaks 9\.0"):
        client.hello()


def test_nak_makes_the_client_send_the_same_request_again(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    seen: list[int] = []

    def handler(frame: Frame) -> bytes:
        seen.append(frame.seq)
        if len(seen) == 1:
            return encode(m.NAK, frame.seq, bytes([frame.type]))
        return reply(frame, frame.payload)

    client = scripted(handler)
    assert client.echo(b"ping") == b"ping"
    assert seen[0] == seen[1]  # same seq: the runner can tell a repeat from a new request
    assert client.stats.naks == 1 and client.stats.retransmits == 1


def test_damaged_reply_is_asked_for_again_never_used(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    calls = 0

    def handler(frame: Frame) -> bytes:
        nonlocal calls
        calls += 1
        good = reply(frame, b"the true reply")
        if calls == 1:
            bad = bytearray(good)
            bad[HEADER_SIZE + 4] ^= 0x01  # one flipped bit in the payload
            return bytes(bad)
        return good

    client = scripted(handler)
    assert client.echo(b"x") == b"the true reply"
    assert client.stats.corrupt_replies == 1 and calls == 2


def test_garbage_and_log_lines_around_a_reply(scripted: Callable[[Handler], RunnerClient]) -> None:
    def handler(frame: Frame) -> bytes:
        log = encode(m.LOG, 0, b"\x01model loaded")
        return b"\x00boot noise\r\n" + log + b"\xa5\xa5" + reply(frame, b"ok") + b"trailing"

    client = scripted(handler)
    assert client.echo(b"x") == b"ok"
    assert list(client.log_lines) == ["model loaded"]


def test_silence_is_a_link_timeout_after_bounded_retries(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(lambda frame: b"")
    with pytest.raises(LinkTimeout, match="no reply"):
        client.echo(b"x")
    peer = client.peer  # type: ignore[attr-defined]
    assert len(peer.requests) == FAST.retries + 1


def test_a_link_that_always_corrupts_fails_without_a_wrong_answer(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    def handler(frame: Frame) -> bytes:
        bad = bytearray(reply(frame, b"wrong"))
        bad[-1] ^= 0xFF
        return bytes(bad)

    client = scripted(handler)
    with pytest.raises(ProtocolError, match="corrupted"):
        client.echo(b"x")
    assert client.stats.corrupt_replies == FAST.retries + 1


def test_progress_then_silence_during_run_is_a_timeout_without_repeating_the_run(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    def handler(frame: Frame) -> bytes:
        if frame.type == m.HELLO:
            return reply(frame, hello_payload())
        return encode(m.PROGRESS, frame.seq, struct.pack("<I", 0))  # started, then hangs

    client = scripted(handler)
    client.hello()
    with pytest.raises(LinkTimeout, match="silent during RUN"):
        client.run(0, 1, 1, 0.0, 1.0)
    runs = [f for f in client.peer.requests if f.type == m.RUN]  # type: ignore[attr-defined]
    assert len(runs) == 1


def test_fault_frame_is_a_crash_carrying_registers_and_log(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    def handler(frame: Frame) -> bytes:
        if frame.type == m.HELLO:
            return reply(frame, hello_payload())
        fault = bytes([1, 14]) + b"cortex-m fault" + bytes([2])
        fault += bytes([4]) + b"cfsr" + struct.pack("<Q", 0x10000)
        fault += bytes([2]) + b"pc" + struct.pack("<Q", 0x5CC)
        return encode(m.LOG, 0, b"\x01run: 0 warm-up") + encode(m.FAULT, frame.seq, fault)

    client = scripted(handler)
    client.hello()
    with pytest.raises(TargetCrash) as caught:
        client.run(0, 1, 1, 0.0, 1.0)
    assert "cfsr=0x00010000" in str(caught.value) and "pc=0x000005cc" in str(caught.value)
    assert "run: 0 warm-up" in caught.value.log_tail


def test_model_larger_than_the_pool_is_refused_before_any_byte_moves(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(answering_hello(pools={"model": 1000}))
    client.hello()
    with pytest.raises(DeployError, match="is 4096 bytes, larger than the runner's 1000-byte"):
        client.load(bytes(4096))
    assert [f.type for f in client.peer.requests] == [m.HELLO]  # type: ignore[attr-defined]


class ModelSink:
    """A runner that takes model chunks and NAKs some of them, to test the go-back logic."""

    def __init__(self, nak_seqs: set[int], window: int) -> None:
        self.nak_seqs = nak_seqs
        self.window = window
        self.data = bytearray()
        self.expected = b""

    def __call__(self, frame: Frame) -> bytes:
        if frame.type == m.HELLO:
            return reply(frame, hello_payload(window=self.window))
        if frame.type == m.LOAD_BEGIN:
            self.expected = frame.payload[:32]
            return reply(frame, struct.pack("<BI", 0, 4096))
        if frame.type == m.LOAD_CHUNK:
            if frame.seq in self.nak_seqs:
                self.nak_seqs.discard(frame.seq)
                return encode(m.NAK, frame.seq, bytes([frame.type]))
            (offset,) = struct.unpack_from("<Q", frame.payload)
            piece = frame.payload[8:]
            if offset > len(self.data):
                return error(frame, m.ERR_SEQUENCE, a=len(self.data), b=offset)
            self.data += piece[len(self.data) - offset :]  # a repeat adds only what is new
            return reply(frame, struct.pack("<Q", len(self.data)))
        if frame.type == m.LOAD_END:
            assert hashlib.sha256(self.data).digest() == self.expected
            return reply(frame, bytes([0, 0]))
        return error(frame, m.ERR_UNKNOWN_COMMAND)


@pytest.mark.parametrize("window", [1, 4])
def test_model_transfer_recovers_from_naked_chunks_and_arrives_whole(
    scripted: Callable[[Handler], RunnerClient], window: int
) -> None:
    sink = ModelSink(nak_seqs={4, 7}, window=window)
    client = scripted(sink)
    client.hello()
    model = os.urandom(10_500)
    outcome = client.load(model)
    assert bytes(sink.data) == model
    assert outcome.bytes_sent > len(model)  # some chunks went twice
    assert client.stats.naks >= 1


TRACED = bytes(range(256)) * 40  # an ETDump of 10 KiB: three pieces of at most 4032 bytes


def tracing_runner(damage_piece: int | None = None, refuse: int | None = None) -> Handler:
    """A runner with ETDump (HELLO flag 8) handing out TRACED in pieces; `damage_piece` flips
    a byte of that piece (its CRC-32 field still the whole part's), `refuse` answers TRACE
    with that error code."""
    pieces = 0

    def handler(frame: Frame) -> bytes:
        nonlocal pieces
        if frame.type == m.HELLO:
            return reply(frame, hello_payload(1, 3, flags=8))
        if frame.type == m.TRACE:
            return error(frame, refuse, 1 << 20, 4096, "no room") if refuse else reply(frame, b"\1")
        _part, offset, limit = struct.unpack("<B3xQI", frame.payload)
        piece = bytearray(TRACED[offset : offset + limit])
        if pieces == damage_piece:
            piece[0] ^= 0xFF
        pieces += 1
        head = struct.pack("<QIQ", len(TRACED), zlib.crc32(TRACED), offset)
        return reply(frame, head + bytes(piece))

    return handler


def test_a_trace_arrives_in_pieces_checked_against_the_runners_crc(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(tracing_runner())
    assert client.hello().trace
    client.trace(True, 1 << 16)
    assert client.get_trace(m.TRACE_ETDUMP) == TRACED
    assert len([f for f in client.peer.requests if f.type == m.GET_TRACE]) == 3  # type: ignore[attr-defined]


def test_a_trace_damaged_on_the_way_is_refused_not_used(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(tracing_runner(damage_piece=1))
    client.hello()
    with pytest.raises(ProtocolError, match="does not match the runner's CRC-32"):
        client.get_trace(m.TRACE_ETDUMP)


def test_a_runner_that_cannot_trace_says_why_before_any_request(
    scripted: Callable[[Handler], RunnerClient],
) -> None:
    client = scripted(answering_hello(major=1, minor=2))
    client.hello()
    with pytest.raises(TraceUnavailable, match=r"older than protocol 1\.3"):
        client.trace(True)
    assert [f.type for f in client.peer.requests] == [m.HELLO]  # type: ignore[attr-defined]
    no_room = scripted(tracing_runner(refuse=m.ERR_OUT_OF_MEMORY))
    no_room.hello()
    with pytest.raises(TraceUnavailable, match="no room") as caught:
        no_room.trace(True, 1 << 20)
    assert "model pool room for the debug buffer" in (caught.value.fix or "")
