"""Where a program's time goes on the device: each instruction's time from the runner's own
ETDump (ExecuTorch's profiling events, recorded in a run apart from the judged ones).

ExecuTorch's runtime opens an `OPERATOR_CALL` event around each kernel call and a
`DELEGATE_CALL` event around each delegate call, tagged with the instruction's index, and a
`Method::execute` event around the whole inference; their timestamps are the runner's clock
(nanoseconds on posix, CPU cycles on a Cortex-M, instructions under QEMU's icount). An
instruction's time is the median over the recorded runs. Operators that only move data
(permutes, dim-order and layout copies, clones) are marked as layout work: on Cortex-M the NCHW
to NHWC copies around a delegate can cost more than the delegate itself (ExecuTorch issue
17157), and a profile should say so in its own words.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from hil.artifacts.pte_program import Instruction, read_program
from hil.errors import ExplainError
from hil.runner.driver import DeviceTrace
from hil.verdict.profile import OperatorTime, Profile

CALL_EVENTS = ("OPERATOR_CALL", "DELEGATE_CALL")
WHOLE_RUN = "Method::execute"
# kernels that move or reorder data without arithmetic
LAYOUT_KERNELS = (
    "permute_copy",
    "transpose_copy",
    "_to_dim_order_copy",
    "_clone_dim_order",
    "clone",
    "_to_copy",
    "view_copy",
    "expand_copy",
    "squeeze_copy",
    "unsqueeze_copy",
    "t_copy",
    "pixel_shuffle",
    "pixel_unshuffle",
)


def profile_of(
    trace: DeviceTrace, pte: Path, unit: str | None = None, scale: float = 1.0
) -> Profile:
    """The trace's per-instruction times, named from the program's own instructions, in `unit`
    (default the runner's clock: ns or CPU cycles), each tick counting `scale` of them."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    try:
        etdump = deserialize_from_etdump_flatcc(trace.etdump)
    except Exception as e:  # the deserializer's own refusal of a damaged buffer
        raise ExplainError(
            f"the device's ETDump ({len(trace.etdump)} bytes) cannot be read: "
            f"{type(e).__name__}: {e}",
            fix="rebuild the runner against the ExecuTorch whose devtools read it",
        ) from e
    instructions = read_program(pte).instructions
    by_instruction: dict[int, list[float]] = defaultdict(list)
    whole: list[float] = []
    for run in etdump.run_data:
        for event in run.events or ():
            profiled = event.profile_event
            if profiled is None:
                continue
            took = float(profiled.end_time - profiled.start_time) * scale
            if profiled.name in CALL_EVENTS:
                by_instruction[int(profiled.instruction_id)].append(took)
            elif profiled.name == WHOLE_RUN:
                whole.append(took)
    operators = sorted(
        (
            _timed(index, instructions, statistics.median(times))
            for index, times in by_instruction.items()
        ),
        key=lambda o: -o.time,
    )
    return Profile(
        unit=unit or trace.clock,
        runs=len(whole),
        total=statistics.median(whole) if whole else sum(o.time for o in operators),
        operators=tuple(operators),
    )


def _timed(index: int, instructions: Sequence[Instruction], time: float) -> OperatorTime:
    if index >= len(instructions):
        return OperatorTime(index, f"instruction {index}", False, time)
    instruction = instructions[index]
    if instruction.kind == "DelegateCall":
        return OperatorTime(index, f"{instruction.name} delegate call", False, time)
    operator = instruction.kernel
    bare = operator.split("::")[-1].split(".")[0]
    return OperatorTime(index, operator, bare in LAYOUT_KERNELS, time)
