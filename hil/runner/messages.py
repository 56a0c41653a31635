"""The runner protocol's messages: type codes, and payloads packed and parsed as typed values.

Layouts are those of firmware/PROTOCOL.md; every integer is little-endian. Parsing raises
ProtocolError naming the message, so a runner speaking another dialect is reported as such.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hil.errors import ProtocolError

PROTOCOL_VERSION = (1, 4)  # 1.1: LOAD_FILE; 1.2: LINK_STATS; 1.3: TRACE, GET_TRACE;
# 1.4: HELLO says whether a kernel is wrong on purpose (flag 16, planted_fault)
PLANTED_FAULT_SINCE = (1, 4)

# Requests are 0x01..0x5F, replies the request | REPLY, the runner's own frames 0xE0..0xFF.
HELLO = 0x01
RESET = 0x02
ECHO = 0x03
DEBUG = 0x04
LOAD_BEGIN = 0x10
LOAD_CHUNK = 0x11
LOAD_END = 0x12
LOAD_FILE = 0x13  # 1.1, runners with a file system (HELLO flag 4)
SET_INPUT = 0x20
RUN = 0x30
TRACE = 0x31  # 1.3, runners built with ETDump (HELLO flag 8)
GET_OUTPUT = 0x40
GET_TRACE = 0x41  # 1.3
MEM_STATS = 0x50
FAULT_REPORT = 0x51
LINK_STATS = 0x52  # 1.2
REPLY = 0x80
LOG = 0xF0
PROGRESS = 0xF1
FAULT = 0xF2
NAK = 0xFD
ERROR = 0xFE

NAMES = {
    HELLO: "HELLO",
    LOAD_BEGIN: "LOAD_BEGIN",
    LOAD_CHUNK: "LOAD_CHUNK",
    LOAD_END: "LOAD_END",
    LOAD_FILE: "LOAD_FILE",
    SET_INPUT: "SET_INPUT",
    RUN: "RUN",
    GET_OUTPUT: "GET_OUTPUT",
    TRACE: "TRACE",
    GET_TRACE: "GET_TRACE",
    MEM_STATS: "MEM_STATS",
    FAULT_REPORT: "FAULT_REPORT",
    LINK_STATS: "LINK_STATS",
    RESET: "RESET",
    ECHO: "ECHO",
    DEBUG: "DEBUG",
    LOG: "LOG",
    PROGRESS: "PROGRESS",
    FAULT: "FAULT",
    NAK: "NAK",
    ERROR: "ERROR",
}

# Error codes of ERROR frames.
ERR_BAD_REQUEST = 1
ERR_UNKNOWN_COMMAND = 2
ERR_VERSION_MISMATCH = 3
ERR_TOO_LARGE = 4
ERR_NO_MODEL = 5
ERR_HASH_MISMATCH = 6
ERR_LOAD_FAILED = 7
ERR_BAD_INPUT = 8
ERR_RUN_FAILED = 9
ERR_OUT_OF_MEMORY = 10
ERR_SEQUENCE = 11
ERR_UNSUPPORTED = 12
ERR_MISSING_OPERATOR = 13

ENGINE_ECHO = 0
ENGINE_EXECUTORCH = 1
CLOCK_TIME_NS = 0
CLOCK_CYCLES = 1
DEBUG_HANG = 1
DEBUG_FAULT = 2
# HELLO flags
HELLO_HOLDS_MODEL = 1
HELLO_DEBUG = 2
HELLO_FILE_LOAD = 4  # 1.1
HELLO_TRACE = 8  # 1.3
HELLO_PLANTED_FAULT = 16  # 1.4
TRACE_ETDUMP = 0  # GET_TRACE parts: the ETDump flatbuffer, the debug buffer it points into
TRACE_DEBUG = 1

# ExecuTorch ScalarType codes <-> numpy dtypes.
DTYPES: dict[int, np.dtype[Any]] = {
    0: np.dtype(np.uint8),
    1: np.dtype(np.int8),
    2: np.dtype(np.int16),
    3: np.dtype(np.int32),
    4: np.dtype(np.int64),
    5: np.dtype(np.float16),
    6: np.dtype(np.float32),
    7: np.dtype(np.float64),
    11: np.dtype(np.bool_),
}
DTYPE_CODES = {dtype: code for code, dtype in DTYPES.items()}


def name_of(kind: int) -> str:
    return NAMES.get(kind & ~REPLY if REPLY <= kind < 0xE0 else kind, f"0x{kind:02x}")


class Reader:
    """Bounds-checked reading of one payload."""

    def __init__(self, payload: bytes, what: str) -> None:
        self._data = payload
        self._pos = 0
        self._what = what

    def take(self, n: int) -> bytes:
        if self._pos + n > len(self._data):
            raise ProtocolError(
                f"{self._what} reply is {len(self._data)} bytes, too short for its fields",
                fix="the runner speaks another protocol dialect: rebuild and flash it "
                "(hil firmware build --target NAME)",
            )
        piece = self._data[self._pos : self._pos + n]
        self._pos += n
        return piece

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def u8(self) -> int:
        return int(self.unpack("B")[0])

    def u32(self) -> int:
        return int(self.unpack("I")[0])

    def u64(self) -> int:
        return int(self.unpack("Q")[0])

    def str8(self) -> str:
        return self.take(self.u8()).decode("utf-8", "replace")

    def rest(self) -> bytes:
        return self.take(len(self._data) - self._pos)


@dataclass(frozen=True)
class TensorSpec:
    """dtype code, sizes and memory order of a tensor, and its size in bytes."""

    dtype: int
    dims: tuple[int, ...]
    dim_order: tuple[int, ...]
    nbytes: int

    @classmethod
    def read(cls, r: Reader) -> TensorSpec:
        dtype, ndim = r.u8(), r.u8()
        dims = r.unpack(f"{ndim}i") if ndim else ()
        order = tuple(r.take(ndim))
        return cls(dtype, tuple(int(d) for d in dims), order, r.u64())

    def pack(self) -> bytes:
        n = len(self.dims)
        return struct.pack(f"<BB{n}i{n}BQ", self.dtype, n, *self.dims, *self.dim_order, self.nbytes)


@dataclass(frozen=True)
class RunnerInfo:
    """What the runner says about itself in the handshake."""

    protocol: tuple[int, int]
    max_payload: int
    clock_hz: int
    clock_kind: int
    engine: int
    holds_model: bool
    debug_commands: bool
    window: int  # requests the runner can buffer unanswered (model chunks in flight)
    held_sha256: str
    build_id: str
    runtime_version: str
    platform: str
    engine_name: str
    pools: dict[str, int] = field(default_factory=dict)
    file_load: bool = False  # LOAD_FILE: the runner can load a model from its own disk
    trace: bool = False  # TRACE: the runner records ExecuTorch's ETDump when asked (1.3)
    # The operator whose kernel the runner's build gets wrong on purpose (HIL_PLANTED_FAULT,
    # hil's own tests), "" when none. Only a runner of protocol 1.4 or later says so:
    # `says_planted_fault` is False for an older one, whose "" then means "not said", not "none".
    planted_fault: str = ""
    says_planted_fault: bool = False

    @classmethod
    def parse(cls, payload: bytes) -> RunnerInfo:
        r = Reader(payload, "HELLO")
        major, minor, max_payload, clock_hz, clock_kind, engine, flags, n_pools, window, _ = (
            r.unpack("HHIQBBBBHH")
        )
        held = r.take(32).hex()
        build_id, version, platform, engine_name = r.str8(), r.str8(), r.str8(), r.str8()
        pools = {}
        for _ in range(n_pools):
            name = r.str8()
            pools[name] = r.u64()
        # 1.4 appends the planted fault after the pools (an older runner ends there); a later
        # minor may append more, which this host leaves unread. Another major's layout past
        # the first fields is its own: the handshake refuses it, naming both versions.
        says_planted = major == PLANTED_FAULT_SINCE[0] and minor >= PLANTED_FAULT_SINCE[1]
        planted = r.str8() if says_planted else ""
        if flags & HELLO_PLANTED_FAULT and not planted:
            planted = "(unnamed)"  # a test build all the same: never read as a release one
        return cls(
            protocol=(major, minor),
            max_payload=max_payload,
            clock_hz=clock_hz,
            clock_kind=clock_kind,
            engine=engine,
            holds_model=bool(flags & HELLO_HOLDS_MODEL),
            debug_commands=bool(flags & HELLO_DEBUG),
            window=window,
            held_sha256=held,
            build_id=build_id,
            runtime_version=version,
            platform=platform,
            engine_name=engine_name,
            pools=pools,
            file_load=bool(flags & HELLO_FILE_LOAD),
            trace=bool(flags & HELLO_TRACE),
            planted_fault=planted,
            says_planted_fault=says_planted,
        )

    @property
    def build(self) -> str:
        """What kind of build the runner says it is: "test" when it obeys requests to hang or
        fault (HIL_DEBUG_COMMANDS) or has a kernel wrong on purpose, "release" when it has
        neither, "unknown" when it refuses debug requests but is too old (protocol < 1.4) to
        say whether a fault is planted. A certificate signs only "release"."""
        if self.debug_commands or self.planted_fault:
            return "test"
        return "release" if self.says_planted_fault else "unknown"


@dataclass(frozen=True)
class MethodInfo:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @classmethod
    def parse(cls, payload: bytes) -> MethodInfo:
        r = Reader(payload, "LOAD_END")
        n_in, n_out = r.u8(), r.u8()
        specs = [TensorSpec.read(r) for _ in range(n_in + n_out)]
        return cls(tuple(specs[:n_in]), tuple(specs[n_in:]))


@dataclass(frozen=True)
class RunTimes:
    """Per-run durations in the runner's clock ticks."""

    ticks: tuple[int, ...]
    warmup: int
    clock_hz: int
    clock_kind: int

    @classmethod
    def parse(cls, payload: bytes) -> RunTimes:
        r = Reader(payload, "RUN")
        n, warmup, hz, kind = r.unpack("IIQB")
        r.take(7)
        ticks = r.unpack(f"{n}Q") if n else ()
        return cls(tuple(int(t) for t in ticks), warmup, hz, kind)

    @property
    def micros(self) -> tuple[float, ...]:
        return tuple(t * 1e6 / self.clock_hz for t in self.ticks)


@dataclass(frozen=True)
class PoolStat:
    name: str
    size: int
    peak: int


def parse_pools(payload: bytes) -> tuple[PoolStat, ...]:
    r = Reader(payload, "MEM_STATS")
    return tuple(PoolStat(r.str8(), r.u64(), r.u64()) for _ in range(r.u8()))


@dataclass(frozen=True)
class LinkStats:
    """What reached the runner since it started, as the runner counted it (LINK_STATS)."""

    frames_in: int
    bytes_in: int
    chunk_bytes: int  # LOAD_CHUNK data, retransmissions included
    model_bytes: int  # model bytes written into the pool from the link
    file_bytes: int  # model bytes read from a file (LOAD_FILE)
    loads: int  # models made runnable

    @classmethod
    def parse(cls, payload: bytes) -> LinkStats:
        r = Reader(payload, "LINK_STATS")
        return cls(r.u64(), r.u64(), r.u64(), r.u64(), r.u64(), r.u32())


@dataclass(frozen=True)
class FaultReport:
    """A fault the runner recorded: its kind and named registers or facts."""

    kind: str
    fields: dict[str, int]

    @classmethod
    def parse(cls, payload: bytes) -> FaultReport | None:
        r = Reader(payload, "FAULT")
        valid, kind, count = r.u8(), r.str8(), r.u8()
        fields = {}
        for _ in range(count):
            name = r.str8()
            fields[name] = r.u64()
        return cls(kind, fields) if valid else None

    def describe(self) -> str:
        facts = ", ".join(
            f"{k}={v}" if k in ("signal", "code", "exception") else f"{k}=0x{v:08x}"
            for k, v in self.fields.items()
        )
        return f"{self.kind}: {facts}"


@dataclass(frozen=True)
class ErrorReply:
    code: int
    a: int
    b: int
    text: str

    @classmethod
    def parse(cls, payload: bytes) -> ErrorReply:
        r = Reader(payload, "ERROR")
        code, _, a, b = r.unpack("HHQQ")
        (length,) = r.unpack("H")
        return cls(code, a, b, r.take(length).decode("utf-8", "replace"))


def to_numpy(spec: TensorSpec, data: bytes) -> NDArray[Any]:
    """A tensor as the runner holds it (memory in `dim_order`) as a numpy array of its sizes."""
    dtype = DTYPES.get(spec.dtype)
    if dtype is None:
        raise ProtocolError(
            f"the runner sent a tensor of dtype code {spec.dtype}, which hil cannot convert",
            fix="add the dtype to hil.runner.messages.DTYPES",
        )
    order = spec.dim_order or tuple(range(len(spec.dims)))
    stored = np.frombuffer(data, dtype=dtype).reshape([spec.dims[d] for d in order])
    return stored.transpose(np.argsort(order))


def from_numpy(
    array: NDArray[Any], dim_order: tuple[int, ...] | None = None
) -> tuple[TensorSpec, bytes]:
    """The spec and bytes to send for `array`, laid out in `dim_order` (default: contiguous)."""
    code = DTYPE_CODES.get(array.dtype)
    if code is None:
        raise ProtocolError(
            f"hil cannot send a tensor of numpy dtype {array.dtype}",
            fix="add the dtype to hil.runner.messages.DTYPES",
        )
    order = dim_order if dim_order and len(dim_order) == array.ndim else tuple(range(array.ndim))
    data = np.ascontiguousarray(array.transpose(order)).tobytes()
    return TensorSpec(code, tuple(int(d) for d in array.shape), tuple(order), len(data)), data
