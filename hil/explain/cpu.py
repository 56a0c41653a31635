"""First divergent operator of a CPU program (portable, XNNPACK), with ExecuTorch's devtools.

How, in four steps, none of them a matcher of our own:
1. Re-export the case with the artifact's recipe inside `recording_etrecord`, so the lowering
   also writes ExecuTorch's ETRecord (exported program, edge program, debug-handle map). The
   re-export must be the artifact's program instruction for instruction, or the ETRecord
   would describe another program (ExplainError). Recording at export time instead would cost
   every green run the ETRecord's deep copies and about twice the .pte on disk
   (bench/explain_etrecord.py measures it), so it is done only when explaining.
2. Run the artifact's own .pte on the ExecuTorch runtime in this process with ETDump and a
   debug buffer: every instruction's output is kept.
3. Hand both to the Inspector: `calculate_numeric_gap` runs the ETRecord's ATen program on the
   case's inputs (eager PyTorch for a float program, the quantized PyTorch model for an int8
   one), and pairs each runtime output with the reference node(s) of the same debug handles.
4. Judge each pair by a per-node limit (below) and address it as a .pte instruction.

Granularity: the portable recipe answers per kernel call (a `linear` lowered to permute_copy +
addmm is one answer, at the addmm). An XNNPACK delegate call is one instruction and one answer:
XNNPACK logs per-operator timings, not intermediate outputs, so a fault inside a fully
delegated model is placed on the delegate call (and on any CPU operator around it).

Targets other than the host: the firmware runner (vboard, pi5-emu) does not send ETDump back
(firmware/PROTOCOL.md has no such reply), so the same .pte runs here on the host's runtime, and
the result says so. That localizes a model or export problem (the program itself diverges),
not a bug in the device's own kernels or firmware: for those the device would have to run with
an ETDump event tracer and debug buffer and return both after a run (a protocol extension).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hil.artifacts.store import Artifact
from hil.case import BuiltCase
from hil.errors import ExplainError, ExploreError
from hil.explain import Divergence, NodeError
from hil.explore.program import Instruction, Program, read_program
from hil.recipes.base import Recipe
from hil.recipes.lowering import recording_etrecord
from hil.verdict.tolerances import DEFAULT_ALLOWANCE, SENSITIVITY_SHARE

log = logging.getLogger("hil.explain.cpu")

# A float node's limit: NODE_ATOL + NODE_RTOL x the node's peak |reference|, the same shape as
# the fp32 target check (hil.verdict.tolerances). Measured 2026-12 on the model suite (portable
# and XNNPACK fp32, every node, against eager): healthy nodes reach at most about 3e-6 of their
# peak (see the report of this branch); 1e-4 keeps a 30x margin and is still 2500x below a
# one-weight fault of 0.25.
NODE_ATOL = 1e-5
NODE_RTOL = 1e-4

FP32_REFERENCE = "eager PyTorch (the exported ATen program, node by node)"
INT8_REFERENCE = "the quantized PyTorch model (its exported ATen program, node by node)"
REFERENCE_GRAPHS = ("exported_program", "edge_dialect_exported_program")
CPU_RECIPES = ("portable", "xnnpack-fp32", "xnnpack-int8")


@dataclass(frozen=True)
class CpuDivergence(Divergence):
    """A Divergence that also says whose runtime produced the intermediates."""

    runtime_note: str | None = None

    def message(self) -> str:
        text = super().message()
        return f"{text}; {self.runtime_note}" if self.runtime_note else text


@dataclass(frozen=True)
class Pair:
    """One runtime output and the reference's value for it, as the Inspector paired them."""

    handles: tuple[int, ...]
    reference_ops: tuple[str, ...]
    reference: torch.Tensor
    runtime: torch.Tensor


def explain_program(
    built: BuiltCase, artifact: Artifact, recipe: Recipe, workdir: Path, *, target: str = "host"
) -> Divergence | None:
    """Every compared operator of the artifact's program against the reference, in program
    order; None when the runtime logged no output the reference can be paired with."""
    if recipe.name not in CPU_RECIPES:
        raise ExplainError(
            f"recipe {recipe.name!r} is not a CPU program; hil.explain.cpu covers "
            f"{', '.join(CPU_RECIPES)}",
            fix="explain Ethos-U programs with hil.explain.tosa",
        )
    program = _read(artifact.pte_path)
    workdir.mkdir(parents=True, exist_ok=True)
    etrecord = _record(built, recipe, workdir, program)
    etdump, debug = _run_with_etdump(artifact.pte_path, program, built, workdir)
    pairs, graph = _pairs(etrecord, etdump, debug, built)
    if not pairs:
        return None
    judge = _judge_for(recipe, artifact, graph)
    by_instruction = _instructions_of(etrecord)
    nodes = sorted(
        (_node(pair, program, by_instruction, judge) for pair in pairs),
        key=lambda n: (int(n.address["instruction"]), n.name),
    )
    reference = INT8_REFERENCE if recipe.quantized else FP32_REFERENCE
    return CpuDivergence(reference, tuple(nodes), _runtime_note(target))


def _runtime_note(target: str) -> str | None:
    if target == "host":
        return None
    return (f"the intermediates are the host's ExecuTorch runtime's running the same .pte, not "
            f"{target}'s: this localizes a model or export problem, not a bug in {target}'s "
            f"kernels or firmware")  # fmt: skip


# -- 1. the program and its ETRecord -----------------------------------------------------------


def _read(pte: Path) -> Program:
    """The artifact's instructions; a missing or damaged file is an ExplainError."""
    if not pte.is_file():
        raise ExplainError(
            f"no program to explain: {pte} does not exist",
            fix="export the case first (session.artifact, or run its check), or pass the "
            "artifact of the check that failed",
        )
    try:
        return read_program(pte)
    except ExploreError as e:
        raise ExplainError(
            f"cannot explain {pte}: {e.message}",
            fix="the cache entry is damaged: delete its folder and run the check again, which "
            "re-exports it",
        ) from e


def _signature(program: Program) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    return tuple((i.kind, i.kernel, i.args) for i in program.instructions)


def _record(built: BuiltCase, recipe: Recipe, workdir: Path, program: Program) -> Any:
    """Re-export with an ETRecord, check it is the artifact's program, add the case's inputs."""
    from executorch.devtools.etrecord import parse_etrecord

    from hil.recipes import export_speedup

    path = workdir / "model.etrecord"
    export_dir = workdir / "reexport"
    export_dir.mkdir(exist_ok=True)
    export_speedup.install()
    with recording_etrecord(path):
        product = recipe.export(built, export_dir)
    if not path.is_file():
        raise ExplainError(
            f"recipe {recipe.name!r} wrote no ETRecord: it does not lower through "
            "hil.recipes.lowering.lower_to_pte",
            fix="lower the recipe with lower_to_pte so hil.explain can record the program",
        )
    again = export_dir / "model.pte"
    again.write_bytes(product.pte)
    if _signature(read_program(again)) != _signature(program):
        raise ExplainError(
            f"re-exporting {built.case.name!r} with {recipe.name} gives another program than "
            f"{program.path} (other instructions): its ETRecord would not describe the artifact",
            fix="the recipe's code or the tools changed since the artifact was made: delete the "
            "cache entry and run the check again, then explain the new artifact",
        )
    etrecord = parse_etrecord(str(path))
    etrecord.update_representative_inputs(list(built.inputs))
    etrecord.save(str(path))  # complete for anyone who opens it with the Inspector later
    return etrecord


# -- 2. the run with every intermediate kept --------------------------------------------------


def _debug_buffer_size(program: Program) -> int:
    """Room for every tensor value the plan holds, at 8 bytes an element plus alignment."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(program.path.read_bytes()).program.execution_plan[0]
    total = 0
    for value in plan.values:
        sizes = getattr(value.val, "sizes", None)
        if sizes is not None:
            total += 8 * math.prod(int(s) for s in sizes) + 64
    return max(1 << 20, 2 * total)


def _run_with_etdump(
    pte: Path, program: Program, built: BuiltCase, workdir: Path
) -> tuple[Path, Path]:
    """Run the .pte once here with ETDump and a debug buffer; return both files."""
    from executorch.runtime import Runtime

    etdump, debug = workdir / "run.etdp", workdir / "run.debug"
    try:
        loaded = Runtime.get().load_program(
            pte, enable_etdump=True, debug_buffer_size=_debug_buffer_size(program)
        )
        loaded.load_method("forward").execute(list(built.inputs))
        loaded.write_etdump_result_to_file(str(etdump), str(debug))
    except RuntimeError as e:
        raise ExplainError(
            f"the ExecuTorch runtime could not run {pte} with ETDump: {e}",
            fix="check the program runs on the host target (hil check CASE --target host); a "
            "program for a backend this runtime lacks cannot be explained here",
        ) from e
    return etdump, debug


# -- 3. the Inspector's pairing ----------------------------------------------------------------


def _max_abs_comparator() -> Any:
    """A comparator for calculate_numeric_gap: the largest element-wise |difference|."""
    from executorch.devtools.inspector.numerical_comparator.numerical_comparator_base import (
        NumericalComparatorBase,
    )

    class MaxAbs(NumericalComparatorBase):  # type: ignore[misc]
        def element_compare(self, a: Any, b: Any) -> float:
            return float(_tensor(a).sub(_tensor(b)).abs().max()) if _tensor(a).numel() else 0.0

    return MaxAbs()


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, Sequence) and not isinstance(value, torch.Tensor) and len(value) == 1:
        value = value[0]
    return torch.as_tensor(value).detach().to(torch.float64)


def _pairs(
    etrecord: Any, etdump: Path, debug: Path, built: BuiltCase
) -> tuple[list[Pair], torch.fx.GraphModule]:
    """The Inspector's (reference, runtime) pairs, and the reference graph they come from."""
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=str(etdump), etrecord=etrecord, debug_buffer_path=str(debug)
        )
        table, name = _numeric_gap(inspector)
    program = etrecord.exported_program if name == "exported_program" else (
        etrecord.edge_dialect_program)  # fmt: skip
    pairs = []
    for row in table.itertuples():
        reference, runtime = _tensor(row.aot_intermediate_output), _tensor(
            row.runtime_intermediate_output
        )
        if reference.shape != runtime.shape:
            log.info("%s: skipped %s, shapes differ", built.case.name, row.aot_ops)
            continue
        handles = tuple(int(h) for h in row.runtime_debug_handle)
        pairs.append(Pair(handles, tuple(row.aot_ops), reference, runtime))
    return pairs, program.module()


def _numeric_gap(inspector: Any) -> tuple[Any, str]:
    """calculate_numeric_gap on the ATen program, or on the edge program where debug handles
    cannot be carried back to ATen (Inspector raises ValueError)."""
    last: Exception | None = None
    for name in REFERENCE_GRAPHS:
        try:
            return inspector.calculate_numeric_gap(_max_abs_comparator(), reference_graph=name), (
                name)  # fmt: skip
        except ValueError as e:
            last = e
    raise ExplainError(
        f"the Inspector could not pair the runtime's intermediates with the reference: {last}",
        fix="report it with the case: ExecuTorch's debug handles did not survive this lowering",
    ) from last


# -- 4. each pair as a NodeError ---------------------------------------------------------------


def _instructions_of(etrecord: Any) -> Mapping[int, frozenset[int]]:
    """Each .pte instruction's debug handles, from the ETRecord's debug-handle map."""
    table = etrecord._debug_handle_map["forward"]
    found = {}
    for instruction, handles in table.items():
        listed = handles if isinstance(handles, (list, tuple)) else [handles]
        found[int(instruction)] = frozenset(int(h) for h in listed)
    return found


def _instruction_of(pair: Pair, by_instruction: Mapping[int, frozenset[int]]) -> int:
    """The last instruction sharing a handle with the pair: the Inspector keeps, of the
    instructions one handle spans (permute_copy + addmm), the output of the last."""
    wanted = set(pair.handles)
    matches = [i for i, handles in by_instruction.items() if handles & wanted]
    if not matches:
        raise ExplainError(f"no instruction of the program has debug handles {pair.handles}")
    return max(matches)


@dataclass(frozen=True)
class Limit:
    """How one node is judged: its quantization step (None: float) and its limit."""

    step: float | None
    limit: float
    unit: str


Judge = Callable[[Pair], Limit]


def _judge_for(recipe: Recipe, artifact: Artifact, graph: torch.fx.GraphModule) -> Judge:
    """Float programs: NODE_ATOL + NODE_RTOL x peak. Quantized programs, in the step of the
    node's quantized tensor: the backend's allowance plus its share of the model's measured
    rounding sensitivity (the target check's limit; per-node sensitivity is not measured, so
    each node gets the largest of the outputs')."""
    if not recipe.quantized:
        return _float_limit
    allowance = recipe.step_allowance or DEFAULT_ALLOWANCE
    moved = max((s.max_steps for s in artifact.sensitivity if s is not None), default=0.0)
    steps = allowance.steps + SENSITIVITY_SHARE * moved

    def judge(pair: Pair) -> Limit:
        step = _step_of(graph, pair.handles[-1])
        return _float_limit(pair) if step is None else Limit(step, steps, "output steps")

    return judge


def _float_limit(pair: Pair) -> Limit:
    peak = float(pair.reference.abs().max()) if pair.reference.numel() else 0.0
    return Limit(None, NODE_ATOL + NODE_RTOL * peak, "absolute")


def _step_of(graph: torch.fx.GraphModule, handle: int) -> float | None:
    """The quantization step of the tensor the node of `handle` computes: its own dequantize's
    scale, 1 for a quantize (integer values), else that of the nearest dequantize upstream."""
    nodes = [n for n in graph.graph.nodes if _handles(n) and handle in _handles(n)]
    seen: set[torch.fx.Node] = set()
    queue = nodes[-1:]  # the capturer keeps the last node of a handle
    while queue:
        node = queue.pop(0)
        target = str(node.target)
        if "dequantize_per_tensor" in target and isinstance(node.args[1], (int, float)):
            return float(node.args[1])
        if "quantize_per_tensor" in target:
            return 1.0
        seen.add(node)
        queue += [a for a in node.all_input_nodes if a not in seen]
    return None


def _handles(node: torch.fx.Node) -> tuple[int, ...]:
    handle = node.meta.get("debug_handle")
    if handle is None:
        return ()
    return (int(handle),) if isinstance(handle, int) else tuple(int(h) for h in handle)


def _node(
    pair: Pair, program: Program, by_instruction: Mapping[int, frozenset[int]], judge: Judge
) -> NodeError:
    index = _instruction_of(pair, by_instruction)
    instruction = program.instructions[index]
    limit = judge(pair)
    error = pair.runtime - pair.reference
    max_abs = float(error.abs().max()) if error.numel() else 0.0
    steps = None if limit.step is None else max_abs / limit.step
    return NodeError(
        address={"chain": instruction.chain, "instruction": index},
        operator=_operator(instruction),
        name=_names(pair.reference_ops),
        where=f"chain {instruction.chain}, instruction {index} of {len(program.instructions)}",
        max_abs=max_abs,
        max_abs_steps=steps,
        sqnr_db=_sqnr_db(pair.reference, error),
        limit=limit.limit,
        unit=limit.unit,
        over=(steps if steps is not None else max_abs) > limit.limit,
    )


def _operator(instruction: Instruction) -> str:
    if instruction.kind == "DelegateCall":
        return f"{instruction.name} delegate call"
    return instruction.kernel


def _names(ops: Sequence[str]) -> str:
    if len(ops) <= 3:
        return ", ".join(ops)
    return f"{ops[0]} ... {ops[-1]} ({len(ops)} reference nodes)"


def _sqnr_db(reference: torch.Tensor, error: torch.Tensor) -> float:
    noise = float(error.pow(2).sum())
    signal = float(reference.pow(2).sum())
    if noise == 0.0:
        return math.inf
    return 10.0 * math.log10(signal / noise) if signal > 0 else -math.inf
