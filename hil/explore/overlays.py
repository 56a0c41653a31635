"""hil's own data as Model Explorer node data: one JSON file per overlay.

Model Explorer's node-data format is `{graph id: {"results": {node id: {"value": v, "bgColor":
c}}, "gradient": [...], "thresholds": [...]}}`; one file may cover several graphs, and the viewer
lists each file as an overlay named after the file. The graphs here are the .pte's execution
plan (id "forward", nodes `forward_<chain>_<instruction>`) and one graph per Ethos-U delegate
(id `<model name>::<node id of its call>`, nodes `main/op<N>`).

Overlays:
* **hil partition**: every .pte instruction marked NPU (which delegate), CPU fallback, CPU
  fallback with no CPU kernel (the device's runtime has none: the partition report's
  missing_kernels), a CMSIS-NN kernel (cortex-m recipe), CPU boundary (quantize/dequantize at
  a delegate's edge) or CPU, and every TOSA operator of a delegate NPU; from artifact.json's
  partition report (the partitioner's reasons are in the report, too long for a node).
* **Vela NPU cycles (estimated)**: Vela's per-layer NPU cycles on each TOSA operator, and each
  delegate's total on its call in the .pte graph (hil.explore.vela_layers).
* **hil error - <metric>** (one per metric) and **hil first divergent operator**: the per-node
  error file (hil.explore.node_errors).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.artifacts.partition import short_name
from hil.artifacts.pte_program import Instruction, Program
from hil.errors import ExploreError
from hil.explore.delegates import VGF_BACKEND, KeptDelegate
from hil.explore.node_errors import Address, Metric, NodeErrors

NPU = "#8fd694"
FALLBACK = "#f4a261"
MISSING = "#e63946"
BOUNDARY = "#e9ecef"
CPU = "#cfe2ff"
GOOD = "#8fd694"
BAD = "#e63946"
BOUNDARY_OPS = (
    "quantize_per_tensor",
    "dequantize_per_tensor",
    "quantize_per_channel",
    "dequantize_per_channel",
)

FIRST_DIVERGENT = "hil first divergent operator"

NodeData = dict[str, dict[str, Any]]  # graph id -> {"results": {...}, ...}


@dataclass(frozen=True)
class Overlay:
    name: str  # the file's stem: what the viewer lists
    data: NodeData

    def write(self, folder: Path) -> Path:
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(self.data, indent=1))
        return path

    def node_keys(self) -> Iterable[tuple[str, str]]:
        for graph, graph_data in self.data.items():
            for node in graph_data["results"]:
                yield graph, node


@dataclass(frozen=True)
class Shown:
    """The graphs as the viewer has them: the program and its expanded Ethos-U delegates."""

    program: Program
    delegates: tuple[KeptDelegate, ...]
    model_name: str  # the .pte's file name as the adapter saw it

    def delegate_graph(self, delegate: KeptDelegate) -> str:
        return f"{self.model_name}::{delegate.call.instruction.node_id}"

    def delegate(self, name: str, context: str) -> KeptDelegate:
        for d in self.delegates:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.delegates) or "none (no TOSA graphs are kept)"
        raise ExploreError(
            f"{context}: no delegate {name!r} in this artifact; it has {known}",
            fix="name a delegate folder listed in artifact.json's details",
        )


def partition_overlay(
    shown: Shown, partition: Mapping[str, Any], converted: Mapping[str, set[str]] | None = None
) -> Overlay:
    """Each CPU operator marked by what the report says of it, each delegate call and each
    operator of an expanded delegate by its delegate. A VGF delegate's graph is the viewer's VGF
    adapter's (its node ids from `converted`, the converted graphs); an Ethos-U delegate's is
    its TOSA graph."""
    marks = CpuMarks(
        backend=str(partition.get("backend", "accelerator")),
        accelerated=frozenset(short_name(op) for op in partition.get("accelerated", {})),
        fallbacks=frozenset(short_name(f["op"]) for f in partition.get("fallbacks", ())),
        missing=frozenset(partition.get("missing_kernels", ())),
        boundary=frozenset(short_name(op) for op in partition.get("boundary", {})),
    )
    names = {d.call.instruction.node_id: d.name for d in shown.delegates}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for ins in shown.program.instructions:
        if ins.kind == "DelegateCall":
            where = names.get(ins.node_id)
            unit = "GPU, VGF" if ins.name == VGF_BACKEND else "NPU"
            mark = (f"{unit} ({where})" if where else f"delegate ({ins.name})", NPU)
        elif ins.kind == "KernelCall":
            mark = marks.of(ins)
        else:
            continue
        results.setdefault(ins.plan, {})[ins.node_id] = {"value": mark[0], "bgColor": mark[1]}
    for d in shown.delegates:
        graph = shown.delegate_graph(d)
        if d.call.backend == VGF_BACKEND:
            results[graph] = {
                node: {"value": f"GPU, VGF ({d.name})", "bgColor": NPU}
                for node in sorted((converted or {}).get(graph, ()))
            }
            continue
        results[graph] = {
            d.graph.node_id(op.index): {"value": f"NPU ({d.name})", "bgColor": NPU}
            for op in d.graph.ops
        }
    return Overlay("hil partition", {g: {"results": r} for g, r in results.items()})


@dataclass(frozen=True)
class CpuMarks:
    """What the partition report says about a CPU operator, by its short name."""

    backend: str  # "Ethos-U", "CMSIS-NN"
    accelerated: frozenset[str]  # on Cortex-M: the operators that became CMSIS-NN kernels
    fallbacks: frozenset[str]
    missing: frozenset[str]  # kernels as the report spells them: "aten::avg_pool3d.out"
    boundary: frozenset[str]

    def of(self, ins: Instruction) -> tuple[str, str]:
        op = ins.name.split("::")[-1]
        no_kernel = ins.kernel in self.missing
        if op in self.fallbacks:
            return (
                ("CPU fallback, no CPU kernel", MISSING)
                if no_kernel
                else ("CPU fallback", FALLBACK)
            )
        if no_kernel:
            return "no CPU kernel on the device runtime", MISSING
        if op in self.accelerated:
            return f"{self.backend} kernel", NPU
        if op in self.boundary or op in BOUNDARY_OPS:
            return "CPU boundary", BOUNDARY
        return "CPU", CPU


def cycles_overlay(shown: Shown) -> Overlay | None:
    data: NodeData = {}
    calls: dict[str, dict[str, Any]] = {}
    for d in shown.delegates:
        if d.estimate is None:
            continue
        data[shown.delegate_graph(d)] = {
            "results": {
                d.graph.node_id(i): {"value": layer.npu_cycles}
                for i, layer in sorted(d.estimate.layers.items())
            },
            "gradient": _gradient("#fff3e0", "#e65100"),
        }
        calls[d.call.instruction.node_id] = {"value": d.estimate.npu_cycles}
    if not data:
        return None
    plan = shown.delegates[0].call.instruction.plan
    data[plan] = {"results": calls, "gradient": _gradient("#fff3e0", "#e65100")}
    return Overlay("Vela NPU cycles (estimated)", data)


def _gradient(low: str, high: str) -> list[dict[str, Any]]:
    return [{"stop": 0, "bgColor": low}, {"stop": 1, "bgColor": high}]


def error_overlays(shown: Shown, errors: NodeErrors, pte_sha256: str) -> list[Overlay]:
    if errors.pte_sha256 is not None and errors.pte_sha256 != pte_sha256:
        raise ExploreError(
            f"{errors.source} was measured on a .pte with sha256 {errors.pte_sha256[:16]}..., "
            f"not on this one ({pte_sha256[:16]}...)",
            fix="measure the errors again on this artifact, or pass the file that belongs to it",
        )
    placed = [
        (resolve(shown, address, f"{errors.source}: {address.describe()}"), values)
        for address, values in errors.nodes
    ]
    overlays = []
    for metric in errors.metrics.values():
        values = {where: v[metric.name] for where, v in placed if metric.name in v}
        if values:
            overlays.append(_metric_overlay(shown, metric, values, errors.reference))
    if errors.first_divergent is not None:
        address = errors.first_divergent
        graph, node = resolve(shown, address, f"{errors.source}: first_divergent")
        data: NodeData = {graph: {"results": {node: {"value": "first divergent", "bgColor": BAD}}}}
        if address.delegate is not None:  # and the call of its delegate in the .pte graph
            call = shown.delegate(address.delegate, "first_divergent").call.instruction
            data[call.plan] = {
                "results": {call.node_id: {"value": "first divergent inside", "bgColor": BAD}}
            }
        overlays.append(Overlay(FIRST_DIVERGENT, data))
    return overlays


def _metric_overlay(
    shown: Shown, metric: Metric, values: Mapping[tuple[str, str], float], reference: str | None
) -> Overlay:
    worst = max if metric.higher_is_worse else min
    values = dict(values)
    for d in shown.delegates:  # a delegate call shows its worst operator
        call = (d.call.instruction.plan, d.call.instruction.node_id)
        inside = [v for (g, _), v in values.items() if g == shown.delegate_graph(d)]
        if inside and call not in values:
            values[call] = worst(inside)
    data: NodeData = {}
    for (graph, node), value in values.items():
        result: dict[str, Any] = {"value": value}
        if metric.limit is not None:
            over = value > metric.limit if metric.higher_is_worse else value < metric.limit
            result["bgColor"] = BAD if over else GOOD
        data.setdefault(graph, {"results": {}})["results"][node] = result
    if metric.limit is None:
        stops = _gradient("#ffffff", BAD) if metric.higher_is_worse else _gradient(BAD, "#ffffff")
        for graph_data in data.values():
            graph_data["gradient"] = stops
    against = f" vs {reference}" if reference else ""
    return Overlay(f"hil error - {metric.label}{against}".replace("/", "-"), data)


def resolve(shown: Shown, address: Address, context: str) -> tuple[str, str]:
    """(graph id, node id) of an address of the node error file."""
    if address.delegate is not None:
        d = shown.delegate(address.delegate, context)
        if address.op is not None:
            if address.op >= len(d.graph.ops):
                raise ExploreError(
                    f"{context}: {d.name}'s TOSA graph has {len(d.graph.ops)} operators",
                    fix="count operators from 0",
                )
            return shown.delegate_graph(d), d.graph.node_id(address.op)
        producer = d.graph.producer(address.tensor or "")
        if producer is None:
            raise ExploreError(
                f"{context}: no operator of {d.name}'s TOSA graph produces "
                f"tensor {address.tensor!r}",
                fix=f"use a tensor name of {d.graph.path}",
            )
        return shown.delegate_graph(d), d.graph.node_id(producer.index)
    plan = address.plan or shown.program.plans[0]
    for ins in shown.program.instructions:
        if (ins.plan, ins.chain, ins.index) == (plan, address.chain, address.instruction):
            return ins.plan, ins.node_id
    raise ExploreError(
        f"{context}: the .pte has no such instruction",
        fix="chain and instruction count from 0 in the execution plan",
    )


def missing_nodes(overlays: Sequence[Overlay], graphs: Mapping[str, set[str]]) -> list[str]:
    """Overlay keys the converted graphs lack ("graph / node"): the adapter's ids changed."""
    return [
        f"{o.name}: {g} / {n}"
        for o in overlays
        for g, n in o.node_keys()
        if n not in graphs.get(g, set())
    ]
