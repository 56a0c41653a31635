"""Request/reply over a Link with the reliability rules of firmware/PROTOCOL.md.

Every request waits for its reply with a deadline. A request that goes unanswered, is NAKed,
or whose reply arrives damaged is sent again with the same seq, a bounded number of times;
the runner answers a repeated seq from its reply cache without running the request twice.
Nothing is accepted that did not pass its CRC. The runner's own frames (log lines, progress
during a run, fault reports) are taken whenever they arrive.

`send()` and `await_reply()` are also usable apart, for a window of requests in flight.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass

from hil.errors import (
    CaseError,
    DeployError,
    HilError,
    LinkTimeout,
    MissingKernel,
    ProtocolError,
    RunRefused,
    TargetCrash,
    TraceUnavailable,
)
from hil.runner import messages as m
from hil.runner.framing import Corrupt, Frame, FrameDecoder, encode
from hil.settings.common import LinkPolicy
from hil.transports import Link

REFLASH = "rebuild the runner (hil firmware build --target NAME) and flash it"


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
class Failed:
    """Why a wait for a reply ended without one (the request may be sent again)."""

    reason: str
    timed_out: bool = False
    started: bool = False  # the runner had acknowledged the request with a progress frame


class Channel:
    """One conversation with one runner. Not thread-safe; the caller orders its requests."""

    def __init__(
        self,
        link: Link,
        name: str,
        policy: LinkPolicy,
        protocol: tuple[int, int] = m.PROTOCOL_VERSION,
    ) -> None:
        self.link = link
        self.name = name
        self.policy = policy
        self.protocol = protocol
        self.stats = LinkStats()
        self.log_lines: collections.deque[str] = collections.deque(maxlen=200)
        self._fresh_log: list[str] = []
        self.decoder = FrameDecoder()
        self._seq = 0
        self.log = logging.getLogger(f"hil.runner.Channel({name})")

    def next_seq(self) -> int:
        self._seq = self._seq % 0xFFFF + 1  # 1..65535; 0 belongs to the runner's log frames
        return self._seq

    def wait_s(self, size: int) -> float:
        return self.policy.reply_timeout_s + size / self.policy.bytes_per_s

    def send(self, kind: int, seq: int, *parts: bytes | memoryview) -> int:
        frame = encode(kind, seq, *parts)
        self.link.write(frame)
        self.stats.frames_sent += 1
        self.stats.bytes_sent += len(frame)
        return len(frame)

    def request(
        self, kind: int, *parts: bytes | memoryview, reply_size: int = 0, running: bool = False
    ) -> bytes:
        """Send one request and return its reply payload, repeating it as the rules allow."""
        seq = self.next_seq()
        name = m.name_of(kind)
        failures: list[Failed] = []
        for attempt in range(self.policy.retries + 1):
            if attempt:
                self.stats.retransmits += 1
                self.log.warning("%s seq %d: %s; sending it again", name, seq, failures[-1].reason)
            size = self.send(kind, seq, *parts)
            reply = self.await_reply(kind, seq, self.wait_s(size + reply_size), running)
            if isinstance(reply, bytes):
                return reply
            if isinstance(reply, m.ErrorReply):
                raise self.refusal(kind, reply)
            failures.append(reply)
            if running and reply.started:
                break  # the runner took the request and went silent: repeating will not help
        raise self.gave_up(name, failures)

    def gave_up(self, name: str, failures: list[Failed]) -> HilError:
        reasons = "; ".join(f.reason for f in failures)
        if all(f.timed_out for f in failures):
            return LinkTimeout(
                f"{self.name}: {failures[-1].reason} ({len(failures)} attempt(s) of {name})",
                fix="the runner hangs or the link is down: check the board's log, reset it",
            )
        return ProtocolError(
            f"{self.name}: {name} failed {len(failures)} times: {reasons}",
            fix="the link corrupts frames: check the cable, the baud rate and that nothing "
            "else writes to the port",
        )

    def await_reply(
        self, kind: int, seq: int, wait_s: float, running: bool = False
    ) -> bytes | m.ErrorReply | Failed:
        """The reply to (kind, seq): its payload, the runner's refusal, or why none came."""
        deadline = time.monotonic() + wait_s
        started = False
        while True:
            item = self.decoder.next()
            if item is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.decoder.abandon_partial()
                    self.stats.timeouts += 1
                    what = "silent during RUN" if started else "no reply"
                    waited = self.policy.run_timeout_s if started else wait_s
                    return Failed(f"{what} within {waited:.1f} s", True, started)
                data = self.link.read(1 << 20, remaining)
                if data:
                    self.decoder.feed(data)
                continue
            if isinstance(item, Corrupt):
                if item.seq == seq and item.type in (kind | m.REPLY, m.ERROR):
                    self.stats.corrupt_replies += 1
                    return Failed("the reply arrived corrupted")
                continue
            frame: Frame = item
            if frame.type == m.LOG:
                self._log_line(frame.payload)
            elif frame.type == m.FAULT:
                raise self.crash(frame.payload)
            elif frame.seq != seq:
                continue  # a late copy of an earlier reply
            elif frame.type == m.PROGRESS:
                started = True
                grace = self.policy.run_timeout_s if running else wait_s
                deadline = time.monotonic() + grace
            elif frame.type == m.NAK:
                self.stats.naks += 1
                return Failed("the runner received it corrupted (NAK)")
            elif frame.type == m.ERROR:
                return m.ErrorReply.parse(frame.payload)
            elif frame.type == kind | m.REPLY:
                return frame.payload
            else:
                raise ProtocolError(
                    f"{self.name}: answered {m.name_of(kind)} with a {m.name_of(frame.type)} frame",
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

    def take_log(self) -> list[str]:
        """The runner's log lines that arrived since the last call."""
        lines, self._fresh_log = self._fresh_log, []
        return lines

    def crash(self, payload: bytes) -> TargetCrash:
        report = m.FaultReport.parse(payload)
        facts = report.describe() if report else "no details"
        return TargetCrash(
            f"{self.name}: the runner faulted ({facts})",
            fix="the fault happened inside the model's run: see the log lines and registers",
            log_tail="\n".join(self.log_lines),
        )

    def refusal(self, kind: int, error: m.ErrorReply) -> HilError:
        """The exception for a runner's ERROR reply: what happened and what to do."""
        what = f"{self.name} refused {m.name_of(kind)}: {error.text}"
        if kind == m.TRACE and error.code in (
            m.ERR_UNSUPPORTED,
            m.ERR_UNKNOWN_COMMAND,
            m.ERR_OUT_OF_MEMORY,
        ):
            return TraceUnavailable(
                what,
                fix="give the model pool room for the debug buffer (the device file's pools)"
                if error.code == m.ERR_OUT_OF_MEMORY
                else REFLASH + " with ExecuTorch's ETDump",
            )
        if error.code == m.ERR_VERSION_MISMATCH:
            theirs = f"{error.a >> 16}.{error.a & 0xFFFF}"
            return ProtocolError(
                f"{self.name}: protocol version mismatch: the runner speaks {theirs}, this hil "
                f"speaks {self.protocol[0]}.{self.protocol[1]}",
                fix=REFLASH + ", or use the hil version that matches the runner",
            )
        if error.code == m.ERR_TOO_LARGE:
            return too_large(self.name, error.a, error.b)
        if error.code == m.ERR_MISSING_OPERATOR:
            return missing_operator(self.name, error.text)
        if error.code in (m.ERR_LOAD_FAILED, m.ERR_OUT_OF_MEMORY, m.ERR_HASH_MISMATCH):
            return DeployError(what, fix="see the runner's log lines for the runtime's reason")
        if error.code == m.ERR_BAD_INPUT:
            return CaseError(what, fix="the case's inputs do not match the exported model")
        if error.code == m.ERR_RUN_FAILED:
            return RunRefused(
                what,
                fix="the runtime's reason is in the log lines (often a "
                "kernel that does not take this dtype or memory layout)",
                log_tail="\n".join(self.log_lines),
            )
        if error.code == m.ERR_NO_MODEL:
            return ProtocolError(
                what,
                fix="deploy the model first; a runner that reset since the last deploy holds none",
            )
        if error.code == m.ERR_UNSUPPORTED:
            return ProtocolError(
                what,
                fix="this runner build lacks the feature; rebuild it "
                "with it enabled (see firmware/README.md)",
            )
        return ProtocolError(what, fix=REFLASH)


# Where a bare-metal ExecuTorch gets its kernels, by operator namespace (its CMake options).
KERNEL_OPTIONS = {
    "cortex_m": "EXECUTORCH_BUILD_CORTEX_M=ON (the cortex_m CMSIS-NN kernels)",
    "quantized_decomposed": "EXECUTORCH_BUILD_KERNELS_QUANTIZED=ON (the quantized kernels)",
}
PORTABLE_OPTION = (
    "EXECUTORCH_SELECT_OPS_LIST (the selective build's operator list; or "
    "EXECUTORCH_SELECT_OPS_MODEL=<this .pte>)"
)


def missing_operator(name: str, text: str) -> MissingKernel:
    """The runner's words are `missing operator NAME: ...` (executorch_engine.cpp)."""
    operator = text.removeprefix("missing operator ").split(": ", 1)[0].split(" ", 1)[0]
    namespace = operator.split("::", 1)[0]
    option = KERNEL_OPTIONS.get(namespace, PORTABLE_OPTION)
    return MissingKernel(
        f"{name}: the runner has no kernel for operator {operator}: {text}",
        operator=operator,
        fix=f"rebuild the runner's ExecuTorch with {operator} in {option}, install it, and "
        "point EXECUTORCH_ROOT at the install (hil rebuilds the runner: its build id covers "
        "the install); or export the model without that operator",
    )


def too_large(name: str, size: int, pool: int) -> DeployError:
    return DeployError(
        f"{name}: the .pte is {size} bytes, larger than the runner's {pool}-byte model pool",
        fix="give the runner a bigger model pool (connection.runner_args [--pool, model=SIZE] "
        "on a host runner, the linker script on a board) or shrink the model",
    )
