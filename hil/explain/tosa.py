"""First divergent operator inside the Ethos-U delegates of an artifact (u55-ref, u85-ref).

`explain_delegates` runs the artifact as the reference target does, with every tensor of every
delegate's TOSA graph kept (hil.explain.tosa_run), and compares each tensor that has a
counterpart in the quantized PyTorch model with that model's value there, in the tensor's own
quantization steps. Only run on a failure: it lowers the quantized model to TOSA once more (to
learn each operator's origin, hil.explain.tosa_origins) and runs the graphs once.

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
one of the plain or channels-last order fits (see _Layout); a reference whose shape leaves two
choices or none (beyond unit dims) is not compared.

The limit per node (NODE_MARGIN): the recipe's allowance for the final outputs (one step for
int8, as TOSA rounds ties up and PyTorch to even) plus one step, since the quantized model's
own rounding choices reach the next layer. Measured with bench/explain_tosa_margins.py
(2026-12, u85-ref and u55-ref alike): resnet8, deep_autoencoder 0 steps on every compared
tensor; ds_cnn_kws, mobilenet_v1_025, digits_cnn at most 1 step; nothing flagged. NOT yet
right for deep networks whose outputs need a loosened tolerance: healthy MobileNetV2 (53
convolutions, the suite's DEPTH_ROUNDING override) drifts from 3 steps at its 7th convolution
to 28 at its last, each tensor against the reference chain, so 95 of 114 tensors are flagged
and `first` is rounding drift there, not a fault. The remedy is to judge each operator on
the reference's own inputs (one operator at a time), which this module does not do yet.
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
    layout = _Layout(block, input_orders)
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
                move = ("permute", op.perms) if op.perms is not None else (
                    "reshape", block.shapes[tensor])  # fmt: skip
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


class _Layout:
    """Each tensor's dim order against the logical (PyTorch) order, followed from the
    delegate's inputs through the graph and learned from shapes where they leave one choice.

    TRANSPOSE permutes its input's order; a RESHAPE of a plainly ordered tensor is plain,
    unless it only moves unit dims (the lowering's transpose of a one-channel image): then the
    order is unknown until shapes tell; every other operator keeps its data input's order."""

    def __init__(self, block: TosaBlock, input_orders: Mapping[str, tuple[int, ...]]) -> None:
        self.block = block
        self.orders: dict[str, tuple[int, ...] | None] = {
            t: tuple(input_orders.get(t, range(len(block.shapes.get(t, ()))))) for t in block.inputs
        }  # fmt: skip

    def follow(self, op: TosaOp) -> tuple[int, ...] | None:
        tensor = op.outputs[0]
        shape = self.block.shapes.get(tensor, ())
        data = [t for t in op.inputs if t in self.orders]
        given = self.orders[data[0]] if data else None
        order: tuple[int, ...] | None
        if op.op == "TRANSPOSE":
            order = tuple(given[p] for p in op.perms) if given and op.perms else None
        elif op.op == "RESHAPE":
            source = self.block.shapes.get(data[0], ()) if data else ()
            plain = given == tuple(range(len(given or ())))
            order = tuple(range(len(shape))) if plain and not _moves_unit_dims(source, shape) \
                else None
        else:
            order = self._inherited(data, len(shape))
        self.orders[tensor] = order
        return order

    def _inherited(self, data: list[str], rank: int) -> tuple[int, ...] | None:
        """The first data input's order of the output's rank; unknown if that is unknown."""
        for t in data:
            if len(self.block.shapes.get(t, ())) == rank:
                return self.orders[t]
        return tuple(range(rank))

    def settle(
        self, tensor: str, order: tuple[int, ...] | None, logical: tuple[int, ...]
    ) -> tuple[int, ...] | None:
        """The order to compare `tensor` in: the followed one if the shapes agree, else the one
        plain or channels-last order that does (learned for the operators after it)."""
        shape = self.block.shapes.get(tensor, ())
        if order is not None and _fits(logical, order, shape):
            return order
        fitting = [o for o in _usual_orders(len(logical)) if _fits(logical, o, shape)]
        if order is None and len(fitting) != 1:
            return None  # no layout, or two that the shapes cannot tell apart
        if not fitting:
            # only unit dims differ (a linear layer's 1x1 CONV2D): the element order is the same
            return tuple(range(len(logical))) if _moves_unit_dims_any(logical, shape) else None
        self.orders[tensor] = fitting[0]
        return fitting[0]


def _moves_unit_dims(source: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """A reshape that keeps the rank and the non-unit dims, moving only dims of size 1."""
    def big(dims: tuple[int, ...]) -> list[int]:
        return [d for d in dims if d != 1]

    return len(source) == len(shape) and source != shape and big(source) == big(shape)


def _moves_unit_dims_any(logical: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    return [d for d in logical if d != 1] == [d for d in shape if d != 1]


def _usual_orders(rank: int) -> list[tuple[int, ...]]:
    plain = tuple(range(rank))
    return [plain, (0, *range(2, rank), 1)] if rank >= 3 else [plain]


def _fits(logical: tuple[int, ...], order: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    return len(order) == len(logical) and tuple(logical[i] for i in order) == shape


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
