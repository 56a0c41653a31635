"""First divergent operator inside the Ethos-U delegates of an artifact (u55-ref, u85-ref).

`explain_delegates` runs the artifact as the reference target does, with every tensor of every
delegate's TOSA graph kept (hil.explain.tosa_run), then runs each delegate once more with every
operator fed the reference's values for its inputs (hil.explain.tosa_isolate), and compares
each tensor that has a counterpart in the quantized PyTorch model with that model's value
there, in the tensor's own quantization steps. An operator is judged by what it makes of the
reference's inputs (its own error), not by what it makes of its predecessors' values: along
a deep chain the rounding differences add up, and the first tensor past the limit would be
drift, not a fault. The chained errors are kept for reading (`isolated_and_chained`). Only run
on a failure: it lowers the quantized model to TOSA once more (to learn each operator's
origin, hil.explain.tosa_origins) and runs the reference model twice per delegate.

What is compared, per TOSA operator (every operator keeps its address, constants included):
* the last non-layout operator with an int8/int16 output among those that came from one node
  of the quantized model (usually the RESCALE that ends a convolution, or a TABLE, CLAMP, ...):
  against what the model's quantize op makes of that node's output (after a fused activation:
  conv + relu6 is one rescale), compared as integers;
* the int32 output of a CONV2D / DEPTHWISE_CONV2D from a convolution or linear layer: against
  the layer's float output, with the accumulator's scale (input scale x weight scale, per
  channel), in the steps of the layer's quantized output. This is what tells a wrong weight
  (the convolution is off) from a wrong requantization (only its RESCALE is off);
* TRANSPOSE and RESHAPE: against what their input was compared with, moved the same way;
* nothing else: constants, graph inputs (the CPU's or the caller's values), rescales into int32
  in front of an add, ... have no value in the quantized model to compare with.
Layout: a tensor's dim order is followed from the delegate's inputs (the order the host
program passes them in) through each TRANSPOSE and RESHAPE, and learned from shapes where only
one of the plain or channels-last order fits (hil.explain.tosa_layout); a reference whose
shape leaves two choices or none (beyond unit dims) is not compared.

The limit per node (NODE_MARGIN): the recipe's allowance for the final outputs (one step for
int8, as TOSA rounds ties up and PyTorch to even) plus one step, since the quantized model's
own rounding choices reach the next layer. Measured with bench/explain_tosa_margins.py
(2026-12, u85-ref and u55-ref alike), largest error of any compared tensor on the reference's
inputs (and, for comparison, on the chain): resnet8 0 (0), deep_autoencoder 0 (0), ds_cnn_kws
1 (1), mobilenet_v1_025 1 (1), digits_cnn 1 (1), mobilenet_v2 and mobilenet_v2_unfolded
1 step on 10 of 117 tensors (27.7 steps on the chain, where 98 of 117 would be over the limit
of 2), mobilenet_v2_lrn (u85-ref) 1 step on 5 of 123 (20.9 on the chain, 90 over). Nothing is
flagged; the limit is twice the largest healthy error.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hil.artifacts.store import Artifact
from hil.artifacts.tosa_graph import TosaGraph, TosaOp
from hil.case import BuiltCase
from hil.errors import ExplainError
from hil.explain import Divergence, NodeError
from hil.explain.quantized_values import (
    QuantizedValues,
    node_values,
    quantize,
    quantized_program,
)
from hil.explain.tosa_isolate import run_isolated
from hil.explain.tosa_layout import Layout, move
from hil.explain.tosa_origins import DEBUG_MODE_ONLY, check_same_graph, debug_blocks, origins
from hil.explain.tosa_run import DelegateRun, delegate_graph, run_keeping_tensors

log = logging.getLogger("hil.explain.tosa")

REFERENCE = "the quantized PyTorch model"
# Steps a node may be off beyond what the final outputs are allowed: 1 + 1 = 2 for int8. Each
# operator judged on the reference's inputs is at most 1 step off on every healthy suite model
# (bench/explain_tosa_margins.py, 2026-12: MobileNetV2's 117 tensors included; see above).
NODE_MARGIN = 1.0
LAYOUT_OPS = ("TRANSPOSE", "RESHAPE")
ACCUMULATOR_OPS = ("CONV2D", "DEPTHWISE_CONV2D")
QUANTIZED_DTYPES = ("INT8", "INT16", "UINT8")
ISOLATE = True  # judge each operator on the reference's inputs (False: on the chain, as before)


@dataclass(frozen=True)
class Counterpart:
    """What a TOSA tensor is compared with: a node of the quantized model, moved into the
    tensor's layout by `moves` (("permute", dims) or ("reshape", shape), in order)."""

    node: str
    kind: str  # "quantized" (integers) or "accumulator" (int32 with the accumulator's scale)
    moves: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def moved(self, move: tuple[str, tuple[int, ...]]) -> Counterpart:
        return Counterpart(self.node, self.kind, (*self.moves, move))


def explain_delegates(
    built: BuiltCase, artifact: Artifact, workdir: Path, *, store: Path | None = None
) -> Divergence | None:
    """Every compared TOSA tensor of the artifact's delegates against the quantized model, in
    program order, each as its operator computes it from the reference's inputs; None when no
    tensor had a counterpart. `store`: the quantized-model store the artifact was exported
    with (`<cache>/shared/quantized`); without it the model is quantized again (and must come
    out the same). Raises ExplainError on malformed input."""
    return isolated_and_chained(built, artifact, workdir, store=store)[0]


def isolated_and_chained(
    built: BuiltCase, artifact: Artifact, workdir: Path, *, store: Path | None = None
) -> tuple[Divergence | None, Divergence | None]:
    """`explain_delegates`'s answer, and the same tensors against the reference as the
    delegate computes them on its own upstream values (the chain: rounding differences add
    up along it, so its errors are for reading, not for judging; see the module docstring)."""
    part = artifact.parts.ethos_u
    if part is None:
        raise ExplainError(
            f"{artifact.pte_path} was not made by the ethos-u recipe: it has no NPU delegates "
            "to explain",
            fix="explain CPU programs with hil.explain.cpu",
        )
    if not part.delegates:
        raise ExplainError(
            f"{artifact.pte_path} has no NPU delegates: everything ran on the CPU",
            fix="explain it with hil.explain.cpu",
        )
    graphs = {
        d.name: delegate_graph(artifact, d.name, d.folder, d.tosa_sha256) for d in part.delegates
    }
    workdir.mkdir(parents=True, exist_ok=True)
    program = quantized_program(built, artifact, store, workdir)
    values = node_values(program, built)
    options = dict(artifact.meta.get("material", {}).get("options", {}))
    debug = debug_blocks(program, options, workdir)
    if len(debug) != len(graphs):
        raise ExplainError(
            f"lowering the quantized model again gave {len(debug)} delegate(s), the artifact "
            f"has {len(graphs)}",
            fix=DEBUG_MODE_ONLY.format(what="partitions it differently"),
        )
    runs = run_keeping_tensors(built, artifact, graphs)
    limit = _limit(artifact)
    isolated: list[NodeError] = []
    chained: list[NodeError] = []
    for (name, run), again in zip(runs.items(), debug, strict=True):
        check_same_graph(name, run.block, again)
        found = origins(again, set(values.order), dict(values.order))
        alone, chain = _compare_delegate(run, graphs[name], found, values, limit)
        isolated.extend(alone)
        chained.extend(chain)
    return (
        Divergence(REFERENCE, tuple(isolated)) if isolated else None,
        Divergence(REFERENCE, tuple(chained)) if chained else None,
    )


def _limit(artifact: Artifact) -> float:
    from hil.recipes.ethos_u import EthosURecipe

    allowance = EthosURecipe.step_allowances.get(artifact.numerics)
    return (allowance.steps if allowance else 1.0) + NODE_MARGIN


def _compare_delegate(
    run: DelegateRun,
    graph: Path,
    found: Sequence[str | None],
    values: QuantizedValues,
    limit: float,
) -> tuple[list[NodeError], list[NodeError]]:
    """Each compared tensor's error as its operator makes it from the reference's inputs
    (hil.explain.tosa_isolate), and as the chained run made it."""
    counterparts = counterparts_of(run.block, found, _input_orders(run), values)
    expected = {}
    for tensor, counterpart in counterparts.items():
        reference = _reference(counterpart, values, run.block.shapes.get(tensor, ()))
        if reference is not None:
            expected[tensor] = reference
    fed = {
        t: np.rint(a).astype(np.int64)
        for t, a in expected.items()
        if counterparts[t].kind == "quantized"
    }
    isolated = run_isolated(graph, run, fed) if ISOLATE else run.values
    alone: list[NodeError] = []
    chain: list[NodeError] = []
    for op in run.block.ops:
        for tensor in op.outputs:
            if tensor not in expected or tensor not in isolated or tensor not in run.values:
                continue
            for found_in, kept, how in (
                (isolated, alone, "on the reference's inputs"),
                (run.values, chain, "chained"),
            ):
                kept.append(
                    _node_error(
                        run,
                        op,
                        tensor,
                        counterparts[tensor],
                        values,
                        limit,
                        expected[tensor],
                        np.asarray(found_in[tensor]),
                        how,
                    )
                )
    return alone, chain


def _input_orders(run: DelegateRun) -> dict[str, tuple[int, ...]]:
    return dict(zip(run.block.inputs, run.input_orders, strict=False))


def counterparts_of(
    block: TosaGraph,
    found: Sequence[str | None],
    input_orders: Mapping[str, tuple[int, ...]],
    values: QuantizedValues,
) -> dict[str, Counterpart]:
    """Each comparable tensor's counterpart (see the module docstring for the rules)."""
    layout = Layout(block, input_orders)
    last = _group_ends(block, found)
    counterparts: dict[str, Counterpart] = {}
    for op in block.ops:
        if not op.outputs or op.op in ("CONST", "CONST_SHAPE"):
            continue
        tensor = op.outputs[0]
        order = layout.follow(op)
        if op.op in LAYOUT_OPS:
            source = counterparts.get(op.inputs[0]) if op.inputs else None
            if source is not None:
                move = (
                    ("permute", op.perms)
                    if op.perms is not None
                    else ("reshape", block.shapes[tensor])
                )
                counterparts[tensor] = source.moved(move)
            continue
        origin = found[op.index]
        if origin is None:
            continue
        kind = _kind(op, tensor, block, origin, values, last)
        value = values.values.get(origin)
        if kind is None or not isinstance(value, torch.Tensor):
            continue
        order = layout.settle(tensor, order, tuple(value.shape))
        if order is not None:
            counterparts[tensor] = Counterpart(origin, kind, (("permute", order),))
    return counterparts


def _group_ends(block: TosaGraph, found: Sequence[str | None]) -> dict[str, int]:
    """Per origin node: the index of its last non-layout operator with a quantized output."""
    ends: dict[str, int] = {}
    for op in block.ops:
        origin = found[op.index]
        if origin is None or op.op in LAYOUT_OPS or not op.outputs:
            continue
        if block.dtypes.get(op.outputs[0]) in QUANTIZED_DTYPES:
            ends[origin] = op.index
    return ends


def _kind(
    op: TosaOp,
    tensor: str,
    block: TosaGraph,
    origin: str,
    values: QuantizedValues,
    last: Mapping[str, int],
) -> str | None:
    dtype = block.dtypes.get(tensor)
    if dtype in QUANTIZED_DTYPES and last.get(origin) == op.index:
        return "quantized" if values.output_qparams(origin) is not None else None
    if dtype == "INT32" and op.op in ACCUMULATOR_OPS:
        scale = values.accumulator_scale(origin)
        return "accumulator" if scale is not None and values.output_qparams(origin) else None
    return None


def _reference(
    counterpart: Counterpart, values: QuantizedValues, shape: tuple[int, ...]
) -> np.ndarray[Any, Any] | None:
    """The counterpart's value in the tensor's units (integers, or accumulator units) and
    layout; None when the model has no such value or it cannot be moved into the layout."""
    params = values.output_qparams(counterpart.node)
    value = values.values.get(counterpart.node)
    if params is None or not isinstance(value, torch.Tensor):
        return None
    if counterpart.kind == "quantized":
        found = values.quantized_output(counterpart.node)
        quantized = values.values.get(found[1]) if found else None
        if not isinstance(quantized, torch.Tensor):
            return None
        expected = quantize(quantized, params).to(torch.float64)
    else:
        scale = values.accumulator_scale(counterpart.node)
        assert scale is not None
        # the reference in accumulator units, so both sides share the layout moves
        expected = value.to(torch.float64) / scale
    moved = move(expected.numpy(), counterpart.moves, shape)
    if moved is None:
        log.debug("no comparable layout for %s", counterpart.node)
    return moved


def _node_error(
    run: DelegateRun,
    op: TosaOp,
    tensor: str,
    counterpart: Counterpart,
    values: QuantizedValues,
    limit: float,
    expected: np.ndarray[Any, Any],
    actual: np.ndarray[Any, Any],
    how: str,
) -> NodeError:
    params = values.output_qparams(counterpart.node)
    assert params is not None
    step = _step(counterpart, values, expected.shape)
    diff = (actual.astype(np.float64) - expected) * step
    steps = float(np.abs(diff).max()) if diff.size else 0.0
    return NodeError(
        address={"delegate": run.name, "op": op.index},
        operator=op.op,
        name=tensor,
        where=f"{run.name}, operator {op.index} of {len(run.block.ops)}, from "
        f"{counterpart.node}, {how}",
        max_abs=steps * params.scale,
        max_abs_steps=steps,
        sqnr_db=_sqnr(expected, diff, counterpart, params.zero_point, params.scale),
        limit=limit,
        unit="steps",
        over=steps > limit,
    )


def _step(
    counterpart: Counterpart, values: QuantizedValues, shape: tuple[int, ...]
) -> np.ndarray[Any, Any] | float:
    """Output steps per unit of the tensor: 1 for integers, accumulator scale over output
    scale (per channel, in the tensor's layout) for an accumulator."""
    if counterpart.kind != "accumulator":
        return 1.0
    scale = values.accumulator_scale(counterpart.node)
    params = values.output_qparams(counterpart.node)
    value = values.values.get(counterpart.node)
    assert scale is not None and params is not None and isinstance(value, torch.Tensor)
    channel = move(np.broadcast_to(scale.numpy(), tuple(value.shape)), counterpart.moves, shape)
    assert channel is not None
    return channel / params.scale


def _sqnr(
    expected: np.ndarray[Any, Any],
    diff: np.ndarray[Any, Any],
    counterpart: Counterpart,
    zero_point: int,
    scale: float,
) -> float | None:
    """Signal (the reference's real values) over the error, in dB; None when exact."""
    signal = (expected - zero_point) * scale if counterpart.kind == "quantized" else None
    noise = float(np.sum(np.square(diff * scale)))
    if noise == 0.0:
        return None
    if signal is None:
        return None
    return 10.0 * math.log10(max(float(np.sum(np.square(signal))), 1e-30) / noise)
