"""Dim orders of a delegate's TOSA tensors against the logical (PyTorch) order of their
counterparts in the quantized model (hil.explain.tosa), and moving a reference into a
tensor's layout."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hil.artifacts.tosa_graph import TosaGraph, TosaOp


class Layout:
    """Each tensor's dim order against the logical (PyTorch) order, followed from the
    delegate's inputs through the graph and learned from shapes where they leave one choice.

    TRANSPOSE permutes its input's order; a RESHAPE of a plainly ordered tensor is plain,
    unless it only moves unit dims (the lowering's transpose of a one-channel image): then the
    order is unknown until shapes tell; every other operator keeps its data input's order."""

    def __init__(self, block: TosaGraph, input_orders: Mapping[str, tuple[int, ...]]) -> None:
        self.block = block
        self.orders: dict[str, tuple[int, ...] | None] = {
            t: tuple(input_orders.get(t, range(len(block.shapes.get(t, ()))))) for t in block.inputs
        }

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
            order = (
                tuple(range(len(shape))) if plain and not _moves_unit_dims(source, shape) else None
            )
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


def move(
    array: np.ndarray[Any, Any],
    moves: Sequence[tuple[str, tuple[int, ...]]],
    shape: tuple[int, ...],
) -> np.ndarray[Any, Any] | None:
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
