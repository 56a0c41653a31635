"""The runner protocol's client: typed commands over any Link, with the reliability rules of
firmware/PROTOCOL.md.

Every request waits for its reply with a deadline. A request that goes unanswered, is NAKed,
or whose reply arrives damaged is sent again with the same seq, a bounded number of times;
the runner answers a repeated seq from its reply cache without running the request twice.
Nothing is accepted that did not pass its CRC. The runner's own frames (log lines, progress
during a run, fault reports) are taken whenever they arrive.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from numpy.typing import NDArray

from hil.errors import (
    CaseError,
    DeployError,
    HilError,
    LinkTimeout,
    ProtocolError,
    TargetCrash,
)
from hil.protocol import messages as m
from hil.protocol.framing import OVERHEAD, Corrupt, Frame, FrameDecoder, encode
from hil.transports import Link

REFLASH = "rebuild the runner (hil firmware build --target NAME) and flash it"


@dataclass(frozen=True)
class LinkPolicy:
    """How long to wait and how often to ask again."""

    reply_timeout_s: float = 2.0  # a small request's reply
    bytes_per_s: float = 50_000.0  # the slowest rate expected, to stretch waits for big frames
    run_timeout_s: float = 60.0  # silence allowed while a RUN executes (progress resets it)
    retries: int = 3  # repeats of one request after the first try


@dataclass
class LinkStats:
    """What the link did; the bench and the fault-injection tests read these."""

    frames_sent: int = 0
    bytes_sent: int = 0
    retransmits: int = 0
    naks: int = 0
    corrupt_replies: int = 0
    timeouts: int = 0


@dataclass(frozen=True)
class LoadOutcome:
    bytes_sent: int  # model bytes moved; 0 when the runner already held the model
    method: m.MethodInfo


@dataclass
class _Wait:
    kind: int
    seq: int
    deadline: float
    started: bool = False
    events: list[str] = field(default_factory=list)


class RunnerClient:
    """One conversation with one runner. Not thread-safe; one request at a time."""

    def __init__(
        self,
        link: Link,
        *,
        name: str = "runner",
        policy: LinkPolicy | None = None,
        protocol: tuple[int, int] = m.PROTOCOL_VERSION,
    ) -> None:
        self.link = link
        self.name = name
        self.policy = policy or LinkPolicy()
        self.protocol = protocol
        self.info: m.RunnerInfo | None = None
        self.stats = LinkStats()
        self.log_lines: collections.deque[str] = collections.deque(maxlen=200)
        self._fresh_log: list[str] = []
        self._decoder = FrameDecoder()
        self._seq = 0
        self.log = logging.getLogger(f"hil.protocol.RunnerClient({name})")

    # -- transactions ----------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq = self._seq % 0xFFFF + 1  # 1..65535; 0 belongs to the runner's log frames
        return self._seq

    def _wait_s(self, size: int) -> float:
        return self.policy.reply_timeout_s + size / self.policy.bytes_per_s

    def request(
        self, kind: int, *parts: bytes | memoryview, reply_size: int = 0, running: bool = False
    ) -> bytes:
        """Send one request and return its reply payload, repeating it as the rules allow."""
        seq = self._next_seq()
        frame = encode(kind, seq, *parts)
        wait_s = self._wait_s(len(frame) + reply_size)
        name = m.name_of(kind)
        reasons: list[str] = []
        for attempt in range(self.policy.retries + 1):
            if attempt:
                self.stats.retransmits += 1
                self.log.warning("%s seq %d: %s; sending it again", name, seq, reasons[-1])
            self.link.write(frame)
            self.stats.frames_sent += 1
            self.stats.bytes_sent += len(frame)
            wait = _Wait(kind, seq, time.monotonic() + wait_s)
            reply = self._await(wait, running)
            if reply is not None:
                return reply
            reasons.append(wait.events[-1])
            if running and wait.started:
                break  # the runner took the request and went silent: repeating will not help
        if all(r.startswith("no reply") or r.startswith("silent") for r in reasons):
            raise LinkTimeout(
                f"{self.name}: {reasons[-1]} ({len(reasons)} attempt(s) of {name})",
                fix="the runner hangs or the link is down: check the board's log, reset it",
            )
        raise ProtocolError(
            f"{self.name}: {name} failed {len(reasons)} times: {'; '.join(reasons)}",
            fix="the link corrupts frames: check the cable, the baud rate and that nothing "
            "else writes to the port",
        )

    def _await(self, wait: _Wait, running: bool) -> bytes | None:
        while True:
            item = self._decoder.next()
            if item is None:
                remaining = wait.deadline - time.monotonic()
                if remaining <= 0:
                    self._decoder.abandon_partial()
                    self.stats.timeouts += 1
                    what = "silent during RUN" if wait.started else "no reply"
                    wait.events.append(f"{what} within {self._waited(wait, running):.1f} s")
                    return None
                data = self.link.read(1 << 20, remaining)
                if data:
                    self._decoder.feed(data)
                continue
            if isinstance(item, Corrupt):
                if item.seq == wait.seq and item.type in (wait.kind | m.REPLY, m.ERROR):
                    self.stats.corrupt_replies += 1
                    wait.events.append("the reply arrived corrupted")
                    return None
                continue
            reply = self._take(item, wait, running)
            if reply is not None or wait.events:
                return reply

    def _waited(self, wait: _Wait, running: bool) -> float:
        return (
            self.policy.run_timeout_s if (running and wait.started) else self.policy.reply_timeout_s
        )

    def _take(self, frame: Frame, wait: _Wait, running: bool) -> bytes | None:
        if frame.type == m.LOG:
            self._log_line(frame.payload)
            return None
        if frame.type == m.FAULT:
            raise self._crash(frame.payload)
        if frame.seq != wait.seq:
            return None  # a late copy of an earlier reply
        if frame.type == m.PROGRESS:
            wait.started = True
            wait.deadline = time.monotonic() + (
                self.policy.run_timeout_s if running else self._wait_s(0)
            )
            return None
        if frame.type == m.NAK:
            self.stats.naks += 1
            wait.events.append("the runner received it corrupted (NAK)")
            return None
        if frame.type == m.ERROR:
            raise self._refusal(wait.kind, m.ErrorReply.parse(frame.payload))
        if frame.type == wait.kind | m.REPLY:
            return frame.payload
        raise ProtocolError(
            f"{self.name}: answered {m.name_of(wait.kind)} with a {m.name_of(frame.type)} frame",
            fix=REFLASH,
        )

    def _log_line(self, payload: bytes) -> None:
        level = payload[0] if payload else 1
        text = payload[1:].decode("utf-8", "replace")
        self.log_lines.append(text)
        self._fresh_log.append(text)
        del self._fresh_log[:-1000]
        self.log.log(
            {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING}.get(level, logging.ERROR),
            "runner: %s",
            text,
        )

    def _crash(self, payload: bytes) -> TargetCrash:
        report = m.FaultReport.parse(payload)
        facts = report.describe() if report else "no details"
        return TargetCrash(
            f"{self.name}: the runner faulted ({facts})",
            fix="the fault happened inside the model's run: see the log lines and registers",
            log_tail="\n".join(self.log_lines),
        )

    def _refusal(self, kind: int, error: m.ErrorReply) -> HilError:
        what = f"{self.name} refused {m.name_of(kind)}: {error.text}"
        if error.code == m.ERR_VERSION_MISMATCH:
            theirs = f"{error.a >> 16}.{error.a & 0xFFFF}"
            return ProtocolError(
                f"{self.name}: protocol version mismatch: the runner speaks {theirs}, this hil "
                f"speaks {self.protocol[0]}.{self.protocol[1]}",
                fix=REFLASH + ", or use the hil version that matches the runner",
            )
        if error.code == m.ERR_TOO_LARGE:
            return DeployError(
                f"{self.name}: the .pte is {error.a} bytes, larger than the runner's "
                f"{error.b}-byte model pool",
                fix="give the runner a bigger model pool (connection.runner_args --pool model=SIZE "
                "on a host runner, the linker script on a board) or shrink the model",
            )
        if error.code in (m.ERR_LOAD_FAILED, m.ERR_OUT_OF_MEMORY, m.ERR_HASH_MISMATCH):
            return DeployError(what, fix="see the runner's log lines for the runtime's reason")
        if error.code == m.ERR_BAD_INPUT:
            return CaseError(what, fix="the case's inputs do not match the exported model")
        if error.code == m.ERR_RUN_FAILED:
            return TargetCrash(what, log_tail="\n".join(self.log_lines))
        return ProtocolError(what, fix=REFLASH)

    def take_log(self) -> list[str]:
        """The runner's log lines that arrived since the last call."""
        lines, self._fresh_log = self._fresh_log, []
        return lines

    # -- commands --------------------------------------------------------------------------

    def hello(self) -> m.RunnerInfo:
        """Handshake; refuses a runner whose protocol major differs, naming both versions."""
        payload = self.request(m.HELLO, struct.pack("<HH", *self.protocol))
        info = m.RunnerInfo.parse(payload)
        if info.protocol[0] != self.protocol[0]:
            raise ProtocolError(
                f"{self.name}: protocol version mismatch: the runner speaks "
                f"{info.protocol[0]}.{info.protocol[1]}, this hil speaks "
                f"{self.protocol[0]}.{self.protocol[1]}",
                fix=REFLASH + ", or use the hil version that matches the runner",
            )
        self.info = info
        self._decoder.max_payload = max(info.max_payload, 1 << 16)
        return info

    def _info(self) -> m.RunnerInfo:
        if self.info is None:
            raise ProtocolError(f"{self.name}: no handshake yet (call hello() first)")
        return self.info

    def load(self, data: bytes, sha256: str | None = None) -> LoadOutcome:
        """Make the runner hold this model: sent in chunks, unless it holds it already."""
        info = self._info()
        digest = bytes.fromhex(sha256) if sha256 else hashlib.sha256(data).digest()
        model_pool = info.pools.get("model")
        if model_pool is not None and len(data) > model_pool:
            raise DeployError(
                f"{self.name}: the .pte is {len(data)} bytes, larger than the runner's "
                f"{model_pool}-byte model pool",
                fix="give the runner a bigger model pool (connection.runner_args --pool "
                "model=SIZE on a host runner, the linker script on a board) or shrink the model",
            )
        begin = m.Reader(
            self.request(m.LOAD_BEGIN, digest, struct.pack("<Q", len(data))), "LOAD_BEGIN"
        )
        held, chunk = begin.u8(), begin.u32()
        if held:  # the runner has it: nothing moves, and it describes the method it holds
            return LoadOutcome(0, m.MethodInfo.parse(begin.rest()))
        chunk = min(chunk, info.max_payload - 8)
        view = memoryview(data)
        sent = 0
        for offset in range(0, len(data), chunk):
            piece = view[offset : offset + chunk]
            reply = self.request(m.LOAD_CHUNK, struct.pack("<Q", offset), piece)
            (received,) = struct.unpack("<Q", reply[:8])
            if received != offset + len(piece):
                raise ProtocolError(
                    f"{self.name}: after the chunk at {offset} the runner holds {received} bytes, "
                    f"expected {offset + len(piece)}",
                    fix=REFLASH,
                )
            sent += len(piece)
        # hashing and loading a large program takes a moment on a small CPU
        end = self.request(m.LOAD_END, reply_size=len(data) // 20)
        self.info = _with_held(info, digest.hex())
        return LoadOutcome(sent, m.MethodInfo.parse(end))

    def set_input(self, index: int, spec: m.TensorSpec, data: bytes) -> None:
        head = struct.pack("<B", index) + spec.pack()
        chunk = self._info().max_payload - len(head) - 8 - OVERHEAD
        view = memoryview(data)
        offset = 0
        while True:
            piece = view[offset : offset + chunk]
            reply = self.request(m.SET_INPUT, head, struct.pack("<Q", offset), piece)
            offset += len(piece)
            if struct.unpack("<Q", reply[:8])[0] != offset:
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
        return m.RunTimes.parse(self.request(m.RUN, request, reply_size=8 * max_runs, running=True))

    def get_output(self, index: int) -> NDArray[Any]:
        """Output `index` of the last run, fetched in as many pieces as it needs."""
        limit = self._info().max_payload - 64
        pieces: list[bytes] = []
        offset = 0
        spec: m.TensorSpec | None = None
        while spec is None or offset < spec.nbytes:
            reply = m.Reader(
                self.request(
                    m.GET_OUTPUT, struct.pack("<B3xQI", index, offset, limit), reply_size=limit
                ),
                "GET_OUTPUT",
            )
            spec = m.TensorSpec.read(reply)
            if reply.u64() != offset:
                raise ProtocolError(
                    f"{self.name}: output {index} came back out of order", fix=REFLASH
                )
            piece = reply.rest()
            if not piece and offset < spec.nbytes:
                raise ProtocolError(
                    f"{self.name}: output {index} stopped at {offset} bytes", fix=REFLASH
                )
            pieces.append(piece)
            offset += len(piece)
        return m.to_numpy(spec, b"".join(pieces))

    def mem_stats(self) -> tuple[m.PoolStat, ...]:
        return m.parse_pools(self.request(m.MEM_STATS))

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
            self.link.write(encode(m.DEBUG, self._next_seq(), payload))


def _with_held(info: m.RunnerInfo, sha256: str) -> m.RunnerInfo:
    from dataclasses import replace

    return replace(info, holds_model=True, held_sha256=sha256)
