"""First divergent operator inside the Ethos-U delegates of an artifact (u55-ref, u85-ref).

`explain_delegates` runs the artifact as the reference target does, with every tensor of every
delegate's TOSA graph kept (hil.explain.tosa_run), and compares each tensor that has a
counterpart in the quantized PyTorch model with that model's value there, in the tensor's own
quantization steps. Only run on a failure: it lowers the quantized model to TOSA once more (to
learn each operator's origin, hil.explain.tosa_origins) and runs the graphs once.

What is compared, per TOSA operator (every operator keeps its address, constants included):
* the last non-layout operator with an int8/int16 output among those that came from one node
  of the quantized model (usually the RESCALE that ends a convolution, or a TABLE, CLAMP, ...):
  against that node's output, quantized as the model quantizes it (its quantize op, through a
  fused activation), compared as integers;
* the int32 output of a CONV2D / DEPTHWISE_CONV2D from a convolution or linear layer: against
  the layer's float output, with the accumulator's scale (input scale x weight scale, per
  channel), in the steps of the layer's quantized output. This is what tells a wrong weight
  (the convolution is off) from a wrong requantization (only its RESCALE is off);
* TRANSPOSE and RESHAPE: against what their input was compared with, moved the same way;
* nothing else: constants, graph inputs (the CPU's or the caller's values), rescales into int32
  in front of an add, ... have no value in the quantized model to compare with.
Layout: a tensor's dim order is followed from the delegate's inputs (the order the host
program passes them in) through each TRANSPOSE; other operators keep their input's, a RESHAPE
needs a plain order. A reference whose shape still differs (beyond unit dims) is not compared.

The limit per node (NODE_MARGIN): the recipe's allowance for the final outputs (one step for
int8, as TOSA rounds ties up and PyTorch to even) plus one step, since the quantized model's
own rounding choices reach the next layer: measured on the healthy suite models, see
tests/explain/test_tosa_divergence.py and the commit message.
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
from hil.case import BuiltCase
from hil.errors import ExplainError
from hil.explain import Divergence, NodeError
from hil.explain.quantized_values import (
    QuantizedValues,
    node_values,
    quantize,
    quantized_program,
)
from hil.explain.tosa_origins import check_same_graph, debug_blocks, origins
from hil.explain.tosa_run import DelegateRun, TosaBlock, TosaOp, delegate_graph, run_keeping_tensors

log = logging.getLogger("hil.explain.tosa")

REFERENCE = "the quantized PyTorch model"
NODE_MARGIN = 1.0  # steps a node may be off beyond what the final outputs are allowed
LAYOUT_OPS = ("TRANSPOSE", "RESHAPE")
ACCUMULATOR_OPS = ("CONV2D", "DEPTHWISE_CONV2D")
QUANTIZED_DTYPES = ("INT8", "INT16", "UINT8")


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
    program order; None when no tensor had a counterpart. `store`: the quantized-model store
    the artifact was exported with (`<cache>/shared/quantized`); without it the model is
    quantized again (and must come out the same). Raises ExplainError on malformed input."""
    part = artifact.parts.ethos_u
    if part is None:
        raise ExplainError(
            f"{artifact.pte_path} was not made by the ethos-u recipe: it has no NPU delegates "
            "to explain", fix="explain CPU programs with hil.explain.cpu",
        )  # fmt: skip
    if not part.delegates:
        raise ExplainError(
            f"{artifact.pte_path} has no NPU delegates: everything ran on the CPU",
            fix="explain it with hil.explain.cpu",
        )
    graphs = {d.name: delegate_graph(artifact, d.name, d.folder, d.tosa_sha256)
              for d in part.delegates}  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    program = quantized_program(built, artifact, store, workdir)
    values = node_values(program, built)
    options = dict(artifact.meta.get("material", {}).get("options", {}))
    debug = debug_blocks(program, options, workdir)
    if len(debug) != len(graphs):
        raise ExplainError(
            f"lowering the quantized model again gave {len(debug)} delegate(s), the artifact "
            f"has {len(graphs)}", fix="re-export the case",
        )  # fmt: skip
    runs = run_keeping_tensors(built, artifact, graphs)
    limit = _limit(artifact)
    nodes: list[NodeError] = []
    for (name, run), again in zip(runs.items(), debug, strict=True):
        check_same_graph(name, run.block, again)
        found = origins(again, set(values.order), dict(values.order))
        nodes.extend(_compare_delegate(run, found, values, limit))
    return Divergence(REFERENCE, tuple(nodes)) if nodes else None


def _limit(artifact: Artifact) -> float:
    from hil.recipes.ethos_u import EthosURecipe

    allowance = EthosURecipe.step_allowances.get(artifact.numerics)
    return (allowance.steps if allowance else 1.0) + NODE_MARGIN


def _compare_delegate(
    run: DelegateRun, found: Sequence[str | None], values: QuantizedValues, limit: float
) -> list[NodeError]:
    counterparts = counterparts_of(run.block, found, _input_orders(run), values)
    nodes = []
    for op in run.block.ops:
        for tensor in op.outputs:
            counterpart = counterparts.get(tensor)
            if counterpart is None or tensor not in run.values:
                continue
            error = _node_error(run, op, tensor, counterpart, values, limit)
            if error is not None:
                nodes.append(error)
    return nodes


def _input_orders(run: DelegateRun) -> dict[str, tuple[int, ...]]:
    return dict(zip(run.block.inputs, run.input_orders, strict=False))


def counterparts_of(
    block: TosaBlock,
    found: Sequence[str | None],
    input_orders: Mapping[str, tuple[int, ...]],
    values: QuantizedValues,
) -> dict[str, Counterpart]:
    """Each comparable tensor's counterpart (see the module docstring for the rules)."""
    orders = _dim_orders(block, input_orders)
    last = _group_ends(block, found)
    counterparts: dict[str, Counterpart] = {}
    for op in block.ops:
        if not op.outputs:
            continue
        tensor = op.outputs[0]
        if op.op in LAYOUT_OPS:
            source = counterparts.get(op.inputs[0]) if op.inputs else None
            if source is not None:
                move = ("permute", op.perms) if op.perms is not None else (
                    "reshape", block.shapes[tensor])  # fmt: skip
                counterparts[tensor] = source.moved(move)
            continue
        origin = found[op.index]
        order = orders.get(tensor)
        if origin is None or order is None:
            continue
        kind = _kind(op, tensor, block, origin, values, last)
        if kind is not None:
            counterparts[tensor] = Counterpart(origin, kind, (("permute", order),))
    return counterparts


def _group_ends(block: TosaBlock, found: Sequence[str | None]) -> dict[str, int]:
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
    op: TosaOp, tensor: str, block: TosaBlock, origin: str, values: QuantizedValues,
    last: Mapping[str, int],
) -> str | None:  # fmt: skip
    dtype = block.dtypes.get(tensor)
    if dtype in QUANTIZED_DTYPES and last.get(origin) == op.index:
        return "quantized" if values.output_qparams(origin) is not None else None
    if dtype == "INT32" and op.op in ACCUMULATOR_OPS:
        scale = values.accumulator_scale(origin)
        return "accumulator" if scale is not None and values.output_qparams(origin) else None
    return None


def _dim_orders(
    block: TosaBlock, input_orders: Mapping[str, tuple[int, ...]]
) -> dict[str, tuple[int, ...]]:
    """Each tensor's dim order against the logical (PyTorch) order, where it can be followed."""
    orders: dict[str, tuple[int, ...]] = {}
    for tensor in block.inputs:
        rank = len(block.shapes.get(tensor, ()))
        orders[tensor] = tuple(input_orders.get(tensor, range(rank)))
    for op in block.ops:
        if not op.outputs or op.op in ("CONST", "CONST_SHAPE"):
            continue
        tensor = op.outputs[0]
        rank = len(block.shapes.get(tensor, ()))
        known = [orders[t] for t in op.inputs if t in orders]
        if op.op == "TRANSPOSE" and known and op.perms is not None:
            orders[tensor] = tuple(known[0][p] for p in op.perms)
        elif op.op == "RESHAPE":
            if known and known[0] == tuple(range(len(known[0]))):
                orders[tensor] = tuple(range(rank))
        else:
            same = [o for o in known if len(o) == rank]
            orders[tensor] = same[0] if same else tuple(range(rank))
    return orders


def _node_error(
    run: DelegateRun, op: TosaOp, tensor: str, counterpart: Counterpart,
    values: QuantizedValues, limit: float,
) -> NodeError | None:  # fmt: skip
    params = values.output_qparams(counterpart.node)
    value = values.values.get(counterpart.node)
    if params is None or not isinstance(value, torch.Tensor):
        return None
    actual = np.asarray(run.values[tensor]).astype(np.float64)
    if counterpart.kind == "quantized":
        expected = quantize(value, params).to(torch.float64)
    else:
        scale = values.accumulator_scale(counterpart.node)
        assert scale is not None
        # the reference in accumulator units, so both sides share the layout moves
        expected = value.to(torch.float64) / scale
    moved = _move(expected.numpy(), counterpart.moves, actual.shape)
    if moved is None:
        log.debug("%s %s: no comparable layout for %s", run.name, tensor, counterpart.node)
        return None
    diff = actual - moved
    if counterpart.kind == "accumulator":
        channel_scale = _move(
            np.broadcast_to(values.accumulator_scale(counterpart.node).numpy(),  # type: ignore[union-attr]
                            expected.shape), counterpart.moves, actual.shape)  # fmt: skip
        assert channel_scale is not None
        diff = diff * channel_scale / params.scale  # in output steps
    steps = float(np.abs(diff).max()) if diff.size else 0.0
    return NodeError(
        address={"delegate": run.name, "op": op.index},
        operator=op.op,
        name=tensor,
        where=f"{run.name}, operator {op.index} of {len(run.block.ops)}, from "
        f"{counterpart.node}",
        max_abs=steps * params.scale,
        max_abs_steps=steps,
        sqnr_db=_sqnr(moved, diff, counterpart, params.zero_point, params.scale),
        limit=limit,
        unit="steps",
        over=steps > limit,
    )


def _move(
    array: np.ndarray[Any, Any], moves: Sequence[tuple[str, tuple[int, ...]]],
    shape: tuple[int, ...],
) -> np.ndarray[Any, Any] | None:  # fmt: skip
    """The reference moved into the TOSA tensor's layout; None when it cannot be."""
    for kind, dims in moves:
        if kind == "permute":
            if dims == tuple(range(len(dims))):
                continue  # the plain order, of whatever rank: nothing moves
            if len(dims) != array.ndim:
                return None
            array = np.transpose(array, dims)
        elif math.prod(dims) == array.size:
            array = array.reshape(dims)
        else:
            return None
    if array.shape == shape:
        return array
    squeezed = tuple(d for d in array.shape if d != 1)
    if squeezed == tuple(d for d in shape if d != 1):
        return array.reshape(shape)  # only unit dims differ: the element order is the same
    return None


def _sqnr(
    expected: np.ndarray[Any, Any], diff: np.ndarray[Any, Any], counterpart: Counterpart,
    zero_point: int, scale: float,
) -> float | None:  # fmt: skip
    """Signal (the reference's real values) over the error, in dB; None when exact."""
    signal = (expected - zero_point) * scale if counterpart.kind == "quantized" else None
    noise = float(np.sum(np.square(diff * scale)))
    if noise == 0.0:
        return None
    if signal is None:
        return None
    return 10.0 * math.log10(max(float(np.sum(np.square(signal))), 1e-30) / noise)
