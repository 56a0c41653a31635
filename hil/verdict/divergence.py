"""Where a target's numbers first left the reference, operator by operator: what hil.explain
finds and a check's result carries (a verdict's type, so it lives with the verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NODE_ERRORS_FORMAT = "hil-node-errors/1"


@dataclass(frozen=True)
class NodeError:
    """One operator's output against the reference's value for it."""

    address: Mapping[str, Any]  # a hil-node-errors/1 address: {"delegate", "op"} or
    #                             {"chain", "instruction"}
    operator: str  # as its graph names it: "CONV2D", "aten.convolution.default"
    name: str  # the node's (or its output tensor's) name in that graph
    where: str  # for people: "delegate_0, operator 12 of 40"
    max_abs: float
    max_abs_steps: float | None = None  # in the output's quantization steps (quantized values)
    sqnr_db: float | None = None
    limit: float | None = None  # the tolerance it was judged by, in the unit of `unit`
    unit: str = "output steps"
    over: bool = False  # outside its tolerance

    def describe(self) -> str:
        size = self.max_abs_steps if self.max_abs_steps is not None else self.max_abs
        limit = f" (limit {self.limit:g})" if self.limit is not None else ""
        return f"{self.operator} ({self.name}; {self.where}): {size:.3g} {self.unit} off{limit}"


@dataclass(frozen=True)
class Divergence:
    """Every compared operator, in program order, against `reference`."""

    reference: str  # "the quantized PyTorch model", "eager PyTorch"
    nodes: tuple[NodeError, ...]

    @property
    def first(self) -> NodeError | None:
        return next((n for n in self.nodes if n.over), None)

    def message(self) -> str:
        first = self.first
        if first is None:
            return (
                f"no operator left its tolerance against {self.reference} "
                f"({len(self.nodes)} compared)"
            )
        return f"first divergent operator: {first.describe()}, against {self.reference}"

    def to_node_errors(self, pte_sha256: str) -> dict[str, Any]:
        """This divergence as a hil-node-errors/1 document."""

        def number(value: float | None) -> float | None:
            return value if value is not None and math.isfinite(value) else None

        first = self.first
        nodes = [
            {
                **n.address,
                "errors": {
                    "max_abs_steps": number(n.max_abs_steps),
                    "max_abs": number(n.max_abs),
                    "sqnr_db": number(n.sqnr_db),
                },
            }
            for n in self.nodes
        ]
        document: dict[str, Any] = {
            "format": NODE_ERRORS_FORMAT,
            "pte_sha256": pte_sha256,
            "reference": self.reference,
            "nodes": nodes,
        }
        if first is not None:
            document["first_divergent"] = dict(first.address)
        return document
