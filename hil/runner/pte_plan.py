"""What a .pte asks of the memory it runs in, read straight from its flatbuffer.

A .pte is a flatbuffer of ExecuTorch's `Program` (schema/program.fbs, file identifier
"ET12"). Its execution plans say how much memory-planned storage each method needs
(`non_const_buffer_sizes`: entry 0 is reserved, the rest are the planned buffers the runtime
asks its host for), what its inputs are, and which operators and delegates it calls. This
module reads exactly those fields, in pure Python (no ExecuTorch import: CI and the pool
sizing use it without the runtime), and checks nothing else about the program.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hil.errors import DeployError

IDENTIFIER = b"ET12"

# ExecuTorch's ScalarType numbers -> bytes per element (schema/scalar_type.fbs)
ELEMENT_BYTES = {
    0: 1,
    1: 1,
    2: 2,
    3: 4,
    4: 8,
    5: 2,
    6: 4,
    7: 8,
    11: 1,
    12: 1,
    13: 1,
    14: 4,
    15: 2,
    16: 1,
    17: 1,
    22: 2,
    23: 1,
    24: 1,
    25: 1,
    26: 1,
    27: 2,
    28: 4,
    29: 8,
}
TENSOR = 5  # KernelTypes union: NONE=0, Null, Int, Bool, Double, Tensor, ...

# vtable slots of the fields read (their order in program.fbs)
PROGRAM_EXECUTION_PLAN = 1
PLAN_NAME, PLAN_VALUES, PLAN_INPUTS, PLAN_OUTPUTS = 0, 2, 3, 4
PLAN_OPERATORS, PLAN_DELEGATES, PLAN_BUFFER_SIZES = 6, 7, 8
EVALUE_TYPE, EVALUE_VAL = 0, 1
TENSOR_SCALAR_TYPE, TENSOR_SIZES = 0, 2
OPERATOR_NAME, OPERATOR_OVERLOAD = 0, 1
DELEGATE_ID = 0


class NotAProgram(DeployError):
    """The bytes are not an ExecuTorch program (.pte) this reader understands."""


@dataclass(frozen=True)
class TensorInfo:
    scalar_type: int
    sizes: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count * ELEMENT_BYTES.get(self.scalar_type, 1)


@dataclass(frozen=True)
class MethodPlan:
    """One execution plan (a method, "forward" for every export hil makes)."""

    name: str
    planned_buffers: tuple[int, ...]  # bytes of each memory-planned buffer, in order
    inputs: tuple[TensorInfo | None, ...]  # None: an input that is not a tensor
    operators: tuple[str, ...]  # "namespace::name.overload", as the runtime looks them up
    delegates: tuple[str, ...]  # backend ids

    @property
    def planned_bytes(self) -> int:
        return sum(self.planned_buffers)


class _Table:
    """A flatbuffer table: its position and its vtable, in a buffer."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vtable_len = struct.unpack_from("<H", buf, self.vtable)[0]

    def _field(self, slot: int) -> int:
        at = 4 + 2 * slot
        if at >= self.vtable_len:
            return 0
        offset: int = struct.unpack_from("<H", self.buf, self.vtable + at)[0]
        return offset

    def scalar(self, slot: int, fmt: str, default: int = 0) -> int:
        offset = self._field(slot)
        if not offset:
            return default
        value: int = struct.unpack_from("<" + fmt, self.buf, self.pos + offset)[0]
        return value

    def _indirect(self, slot: int) -> int | None:
        offset = self._field(slot)
        if not offset:
            return None
        at = self.pos + offset
        target: int = at + struct.unpack_from("<I", self.buf, at)[0]
        return target

    def table(self, slot: int) -> _Table | None:
        at = self._indirect(slot)
        return None if at is None else _Table(self.buf, at)

    def string(self, slot: int) -> str:
        at = self._indirect(slot)
        if at is None:
            return ""
        length = struct.unpack_from("<I", self.buf, at)[0]
        return self.buf[at + 4 : at + 4 + length].decode("utf-8", errors="replace")

    def vector(self, slot: int) -> tuple[int, int]:
        """(position of the first element, count), or (0, 0) when absent."""
        at = self._indirect(slot)
        if at is None:
            return 0, 0
        return at + 4, struct.unpack_from("<I", self.buf, at)[0]

    def scalars(self, slot: int, fmt: str) -> tuple[int, ...]:
        start, count = self.vector(slot)
        return tuple(struct.unpack_from(f"<{count}{fmt}", self.buf, start)) if count else ()

    def tables(self, slot: int) -> list[_Table]:
        start, count = self.vector(slot)
        out = []
        for i in range(count):
            at = start + 4 * i
            out.append(_Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out


def read_plans(pte: bytes) -> tuple[MethodPlan, ...]:
    """Every execution plan of a .pte."""
    if len(pte) < 8 or pte[4:8] != IDENTIFIER:
        raise NotAProgram(
            f"not an ExecuTorch program: file identifier {pte[4:8]!r}, not {IDENTIFIER!r}",
            fix="give the .pte hil exported (the artifact's model.pte)",
        )
    try:
        root = _Table(pte, struct.unpack_from("<I", pte, 0)[0])
        return tuple(_plan(t) for t in root.tables(PROGRAM_EXECUTION_PLAN))
    except (struct.error, IndexError, UnicodeDecodeError) as e:
        raise NotAProgram(f"the program's flatbuffer is damaged: {e}") from e


def _plan(plan: _Table) -> MethodPlan:
    values = plan.tables(PLAN_VALUES)
    inputs = tuple(_tensor(values[i]) for i in plan.scalars(PLAN_INPUTS, "i"))
    operators = tuple(
        f"{op.string(OPERATOR_NAME)}.{op.string(OPERATOR_OVERLOAD)}"
        if op.string(OPERATOR_OVERLOAD)
        else op.string(OPERATOR_NAME)
        for op in plan.tables(PLAN_OPERATORS)
    )
    delegates = tuple(d.string(DELEGATE_ID) for d in plan.tables(PLAN_DELEGATES))
    sizes = plan.scalars(PLAN_BUFFER_SIZES, "q")
    return MethodPlan(
        name=plan.string(PLAN_NAME),
        planned_buffers=tuple(sizes[1:]),  # entry 0 is reserved by the format
        inputs=inputs,
        operators=operators,
        delegates=delegates,
    )


def _tensor(value: _Table) -> TensorInfo | None:
    if value.scalar(EVALUE_TYPE, "B") != TENSOR:
        return None
    tensor = value.table(EVALUE_VAL)
    if tensor is None:
        return None
    return TensorInfo(
        scalar_type=tensor.scalar(TENSOR_SCALAR_TYPE, "b"),
        sizes=tuple(tensor.scalars(TENSOR_SIZES, "i")),
    )


def method_plan(pte: bytes, name: str = "forward") -> MethodPlan:
    """The plan of method `name` (the runner's choice: "forward", else the first)."""
    plans = read_plans(pte)
    if not plans:
        raise NotAProgram("the program has no execution plan")
    return next((p for p in plans if p.name == name), plans[0])
