"""What a .pte holds: its instructions, operator and delegate calls (the one .pte reader: hil
explore draws it, hil.explain pairs its intermediates with it).

Read with ExecuTorch's own deserializer (the owner of the format), in hil's venv. Each instruction
gets the node id that the PTE adapter of Model Explorer gives it: `<plan>_<chain>_<instruction>`
(execution plan "forward", chain 0, instruction 5: `forward_0_5`), so overlays computed here land
on the right nodes without asking the viewer. `hil.explore.graphs` checks every id used against
the converted graph, so an adapter that changed its naming is reported, not silently ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.errors import ProgramUnreadable

PTE_IDENTIFIER = b"ET"  # a flatbuffer's file identifier sits at bytes 4..8: "ET12" and later


@dataclass(frozen=True)
class Instruction:
    """One instruction of an execution plan."""

    plan: str
    chain: int
    index: int
    kind: str  # "KernelCall", "DelegateCall", "MoveCall", ...
    name: str  # operator ("aten::avg_pool3d"), backend ("EthosUBackend") or the kind
    overload: str = ""  # of a kernel call ("out")
    args: tuple[int, ...] = ()  # value indices

    @property
    def node_id(self) -> str:
        """The node's id in Model Explorer's PTE graph."""
        return f"{self.plan}_{self.chain}_{self.index}"

    @property
    def kernel(self) -> str:
        """`aten::avg_pool3d.out`, the spelling of the partition report's missing kernels."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


@dataclass(frozen=True)
class DelegateCall:
    """A delegate call in program order, with the bytes its backend gets (its `processed` data)."""

    instruction: Instruction
    backend: str
    blob: bytes
    shapes: tuple[tuple[int, ...], ...]  # shapes of its tensor arguments (inputs, then outputs)


@dataclass(frozen=True)
class Program:
    path: Path
    plans: tuple[str, ...]
    instructions: tuple[Instruction, ...]
    delegate_calls: tuple[DelegateCall, ...]

    def backends(self) -> frozenset[str]:
        return frozenset(call.backend for call in self.delegate_calls)

    def calls_to(self, backend: str) -> tuple[DelegateCall, ...]:
        return tuple(c for c in self.delegate_calls if c.backend == backend)


def read_program(path: Path) -> Program:
    """Parse a .pte; an unreadable or foreign file is an ProgramUnreadable that says what it is."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ProgramUnreadable(
            f"cannot read {path}: {e.strerror}", fix="give the path of an ExecuTorch .pte"
        ) from e
    if len(data) < 8 or data[4:6] != PTE_IDENTIFIER:
        raise ProgramUnreadable(
            f"{path} is not an ExecuTorch program (no 'ET' flatbuffer identifier at byte 4)",
            fix="give a .pte written by ExecuTorch's to_executorch(), e.g. a hil artifact's "
            "model.pte (`hil cache` shows the store)",
        )
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        program = deserialize_pte_binary(data).program
    except Exception as e:
        raise ProgramUnreadable(
            f"{path} looks like a .pte but ExecuTorch cannot read it: {type(e).__name__}: {e}",
            fix="re-export it with the installed executorch (1.5.1), or check it is complete",
        ) from e
    return _program(path, program)


def _program(path: Path, program: Any) -> Program:
    instructions: list[Instruction] = []
    calls: list[DelegateCall] = []
    for plan_index, plan in enumerate(program.execution_plan):
        plan_name = plan.name or f"ExecutionPlan_{plan_index}"
        for chain_index, chain in enumerate(plan.chains):
            for index, ins in enumerate(chain.instructions):
                instruction, call = _instruction(program, plan, plan_name, chain_index, index, ins)
                instructions.append(instruction)
                if call is not None:
                    calls.append(call)
    plans = tuple(p.name or f"ExecutionPlan_{i}" for i, p in enumerate(program.execution_plan))
    return Program(path, plans, tuple(instructions), tuple(calls))


def _instruction(
    program: Any, plan: Any, plan_name: str, chain: int, index: int, ins: Any
) -> tuple[Instruction, DelegateCall | None]:
    args = ins.instr_args
    kind = type(args).__name__
    values = tuple(int(a) for a in getattr(args, "args", ()) or ())
    if kind == "KernelCall":
        operator = plan.operators[args.op_index]
        return Instruction(
            plan_name, chain, index, kind, operator.name, operator.overload, values
        ), None
    if kind == "DelegateCall":
        delegate = plan.delegates[args.delegate_index]
        instruction = Instruction(plan_name, chain, index, kind, delegate.id, "", values)
        call = DelegateCall(
            instruction, delegate.id, _blob(program, delegate), _shapes(plan.values, values)
        )
        return instruction, call
    return Instruction(plan_name, chain, index, kind, kind, "", values), None


def _blob(program: Any, delegate: Any) -> bytes:
    """The delegate's processed bytes (segments are moved back inline by the deserializer)."""
    processed = delegate.processed
    if int(processed.location) != 0:  # DataLocation.INLINE
        return b""
    return bytes(program.backend_delegate_data[processed.index].data)


def _shapes(values: Sequence[Any], indices: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    shapes = []
    for i in indices:
        value = values[i].val
        sizes = getattr(value, "sizes", None)
        if sizes is not None:
            shapes.append(tuple(int(s) for s in sizes))
    return tuple(shapes)
