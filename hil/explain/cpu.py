"""First divergent operator of a CPU program (portable, XNNPACK), with ExecuTorch's devtools.

How, in four steps, none of them a matcher of our own (steps 1-3 in hil.explain.etdump):
1. Re-export the case with the artifact's recipe inside `recording_etrecord`, so the lowering
   also writes ExecuTorch's ETRecord (exported program, edge program, debug-handle map). The
   re-export must be the artifact's program instruction for instruction, or the ETRecord
   would describe another program (ExplainError). Recording at every export instead would
   cost green runs: bench/explain_etrecord.py measured (2026-12, 2 cores, noisy) up to 1.3-1.6x
   the lowering time on resnet8 and mobilenet_v2 fp32 (+0.3 to +3 s) and an ETRecord of about
   2x the .pte beside each artifact (29 MB for mobilenet_v2's 14 MB); the .pte is byte-identical
   either way, which is what makes the re-export a faithful description of the artifact. So it
   is done only when explaining (1-6 s for the suite's models, about 60 s for mobilenet_v2
   int8, mostly its lowering).
2. Run the artifact's own .pte on the ExecuTorch runtime in this process with ETDump and a
   debug buffer: every instruction's output is kept.
3. Hand both to the Inspector: `calculate_numeric_gap` runs the ETRecord's ATen program on the
   case's inputs (eager PyTorch for a float program, the quantized PyTorch model for an int8
   one), and pairs each runtime output with the reference node(s) of the same debug handles.
4. Judge each pair by a per-node limit (below) and address it as a .pte instruction.

Granularity: the portable recipe answers per kernel call (a `linear` lowered to permute_copy +
addmm is one answer, at the addmm). An XNNPACK delegate call is one instruction and one answer:
XNNPACK logs per-operator timings, not intermediate outputs, so a fault inside a fully
delegated model is placed on the delegate call (and on any CPU operator around it). For
XNNPACK int8 that call usually spans the whole quantized model, inputs' quantize to outputs'
dequantize, so the answer is "the delegate" and says only that no CPU operator came first; it is
judged in the steps of the quantized tensor it ends on.

Runner targets (vboard, pi5-emu, pi5, boards): the intermediates are the device's own. The
runner records ExecuTorch's ETDump with a debug buffer in one explaining run apart from the
judged ones (firmware/PROTOCOL.md, TRACE): it loads the model again with the recorder attached,
runs it once on the case's inputs, and loads it again without. So a kernel the device gets wrong
is named from the device's runtime. Where the device cannot record (a runner older than protocol
1.3 or built without ETDump, no room for the debug buffer), the same .pte runs here on the
host's runtime instead, and the result says so: that localizes a model or export problem, not
a bug in the device's kernels or firmware.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from hil.artifacts.pte_program import Instruction, Program
from hil.artifacts.store import Artifact
from hil.case import BuiltCase
from hil.errors import ExplainError, TraceUnavailable
from hil.explain import Divergence, NodeError
from hil.explain import etdump as devtools
from hil.explain.etdump import Pair
from hil.recipes.base import Recipe
from hil.runner.driver import DeviceTrace
from hil.verdict.tolerances import DEFAULT_ALLOWANCE, step_limits

# One explaining run on the device: the debug buffer's bytes in, its ETDump back.
DeviceRun = Callable[[int], DeviceTrace]

# A float node's limit: NODE_ATOL + NODE_RTOL x the node's peak |reference|, the fp32 target
# check's own limit (hil.verdict.tolerances). Measured 2026-12 on an AVX-512 host, every node
# of resnet8, ds_cnn_kws, mobilenet_v1_025, deep_autoencoder, digits_cnn and mobilenet_v2 on
# portable and XNNPACK fp32 against eager: at most 5.2e-6 x peak (mobilenet_v1_025's 26th relu,
# portable; mobilenet_v2 3.0e-6; XNNPACK's delegate outputs 1.9e-6), error carried from upstream
# included. 1e-4 leaves a 19x margin; a 0.25 change of one weight is thousands of times over.
NODE_ATOL = 1e-5
NODE_RTOL = 1e-4

FP32_REFERENCE = "eager PyTorch (the exported ATen program, node by node)"
INT8_REFERENCE = "the quantized PyTorch model (its exported ATen program, node by node)"
CPU_RECIPES = ("portable", "xnnpack-fp32", "xnnpack-int8")


@dataclass(frozen=True)
class CpuDivergence(Divergence):
    """A Divergence that also says whose runtime produced the intermediates."""

    runtime_note: str | None = None

    def message(self) -> str:
        text = super().message()
        return f"{text}; {self.runtime_note}" if self.runtime_note else text


def explain_program(
    built: BuiltCase,
    artifact: Artifact,
    recipe: Recipe,
    workdir: Path,
    *,
    target: str = "host",
    device: DeviceRun | None = None,
) -> Divergence | None:
    """Every compared operator of the artifact's program against the reference, in program
    order; None when the runtime logged no output the reference can be paired with. `device`:
    the target's own explaining run, whose intermediates are used when it can record them."""
    if recipe.name not in CPU_RECIPES:
        raise ExplainError(
            f"recipe {recipe.name!r} is not a CPU program; hil.explain.cpu covers "
            f"{', '.join(CPU_RECIPES)}",
            fix="explain Ethos-U programs with hil.explain.tosa",
        )
    program = devtools.read(artifact.pte_path)
    workdir.mkdir(parents=True, exist_ok=True)
    etrecord = devtools.record(built, recipe, workdir, program)
    etdump, debug, note = _intermediates(artifact, program, built, workdir, target, device)
    pairs, graph = devtools.pairs(etrecord, etdump, debug, built)
    if not pairs:
        return None
    judge = _judge_for(recipe, artifact, graph)
    by_instruction = devtools.instructions_of(etrecord)
    nodes = sorted(
        (_node(pair, program, by_instruction, judge) for pair in pairs),
        key=lambda n: (int(n.address["instruction"]), n.name),
    )
    reference = INT8_REFERENCE if recipe.quantized else FP32_REFERENCE
    return CpuDivergence(reference, tuple(nodes), note)


def _intermediates(
    artifact: Artifact,
    program: Program,
    built: BuiltCase,
    workdir: Path,
    target: str,
    device: DeviceRun | None,
) -> tuple[Path, Path, str | None]:
    """The ETDump and debug buffer to pair, from the device's runtime where it can record
    them, else from a run of the same .pte on the host's runtime; and what to say of them."""
    why_not = ""
    if device is not None:
        try:
            trace = device(devtools.debug_buffer_size(program))
        except TraceUnavailable as e:
            why_not = f" ({e.message})"
        else:
            etdump, debug = devtools.device_files(trace, workdir)
            return (
                etdump,
                debug,
                (
                    f"from the device's runtime: {target}'s runner recorded the intermediates "
                    "(ExecuTorch's ETDump, in an explaining run apart from the judged ones)"
                ),
            )
    etdump, debug = devtools.run_with_etdump(artifact.pte_path, program, built, workdir)
    if target == "host":
        return etdump, debug, None
    return (
        etdump,
        debug,
        (
            f"the intermediates are the host's ExecuTorch runtime's running the same .pte, not "
            f"{target}'s{why_not}: this localizes a model or export problem, not a bug in "
            f"{target}'s kernels or firmware"
        ),
    )


# -- each pair as a NodeError ---------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """How one node is judged: its quantization step (None: float) and its limit."""

    step: float | None
    limit: float
    unit: str


Judge = Callable[[Pair], Limit]


def _judge_for(recipe: Recipe, artifact: Artifact, graph: torch.fx.GraphModule) -> Judge:
    """Float programs: NODE_ATOL + NODE_RTOL x peak. Quantized programs, in the step of the
    node's quantized tensor: the target check's step limit (per-node sensitivity is not
    measured, so each node gets the one of the most sensitive output)."""
    if not recipe.quantized:
        return _float_limit
    allowance = recipe.step_allowance or DEFAULT_ALLOWANCE
    measured = [s for s in artifact.sensitivity if s is not None]
    steps, _ = step_limits(allowance, max(measured, key=lambda s: s.max_steps, default=None))

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
    index = devtools.instruction_of(pair, by_instruction)
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
