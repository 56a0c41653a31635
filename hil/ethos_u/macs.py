"""Multiply-accumulates of an FX graph: the work the NPU's MAC array exists for.

Counted from the shapes torch.export recorded on each node (`meta["val"]`), for the operators
whose cost is MACs: convolutions (incl. depthwise and transposed), linear layers and matrix
products. Elementwise ops, pooling and reductions are not MACs on Ethos-U and are not counted.
Works on aten and edge-dialect graphs alike (edge ops are matched by their aten name). A MAC
operator whose shapes are symbolic or data-dependent (after `nonzero`, a boolean mask) has no
count: the graph's count is then unknown (None), never a smaller number that looks exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch


def op_name(target: Any) -> str:
    """ "aten.convolution.default" for aten and edge-dialect ops; str(target) otherwise."""
    target = aten_overload(target)
    if isinstance(target, torch._ops.OpOverload):
        namespace, _, base = target._schema.name.partition("::")
        return f"{namespace}.{base}.{target._overloadname or 'default'}"
    return str(getattr(target, "__name__", target))


def aten_overload(target: Any) -> Any:
    """The torch OpOverload behind an edge-dialect op (EdgeOpOverload wraps one in `_op`)."""
    if not isinstance(target, torch._ops.OpOverload) and isinstance(
        getattr(target, "_op", None), torch._ops.OpOverload
    ):
        return target._op
    return target


def _shape(value: Any) -> tuple[int, ...] | None:
    """A tensor's concrete shape; None for a symbolic one (reading a data-dependent size as an
    int would raise torch's GuardOnDataDependentSymNode)."""
    if isinstance(value, torch.Tensor) and all(type(d) is int for d in value.shape):
        return tuple(value.shape)
    return None


def _val(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None


MAC_OPS: tuple[str, ...] = (
    *("aten.convolution.", "aten.conv", "aten.linear."),
    *("aten.mm.", "aten.bmm.", "aten.matmul.", "aten.addmm."),
)


def node_macs(node: torch.fx.Node) -> int | None:
    """MACs of one call_function node; 0 for operators that are not MAC work, None for a MAC
    operator whose shapes are not concrete."""
    if node.op != "call_function":
        return 0
    name = op_name(node.target)
    if not name.startswith(MAC_OPS):
        return 0
    out = _shape(node.meta.get("val"))
    if out is None:
        return None
    if name.startswith(("aten.convolution.", "aten.conv")):
        weight = _shape(_val(node.args[1]))
        if weight is None:
            return None
        if name.startswith("aten.convolution."):
            transposed = bool(node.args[6]) if len(node.args) > 6 else False
        else:  # conv1d/conv2d/conv3d, or conv_transpose1d/2d/3d
            transposed = name.startswith("aten.conv_transpose")
        if transposed:
            source = _shape(_val(node.args[0]))
            if source is None:
                return None
            # each input element meets (C_out / groups) x kernel weights
            return math.prod(source) * math.prod(weight[1:])
        return math.prod(out) * math.prod(weight[1:])  # (C_in / groups) x kernel per output
    first = _shape(_val(node.args[1] if name.startswith("aten.addmm.") else node.args[0]))
    return math.prod(out) * first[-1] if first else None


def graph_macs(nodes: Iterable[torch.fx.Node]) -> int | None:
    """The nodes' MACs; None when any MAC operator among them has no concrete shapes."""
    total = 0
    for node in nodes:
        macs = node_macs(node)
        if macs is None:
            return None
        total += macs
    return total
