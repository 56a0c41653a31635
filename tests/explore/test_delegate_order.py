"""Each Ethos-U delegate call of the .pte shows its own TOSA graph: checked by tensor shapes.

The two delegates of TWO_DELEGATES have different shapes on either side of the CPU pool, so a
swapped pair is visible: the call's argument sizes (.pte metadata, as the viewer shows them)
must be the TOSA graph's input and output shapes, read from the viewer's own converted graph.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hil.explore.command import Exploration
from hil.explore.delegates import adapter_paths
from hil.explore.viewer import Viewer


def shapes(metadata: list[dict[str, Any]], key: str) -> list[tuple[int, ...]]:
    found = []
    for item in metadata:
        for attr in item["attrs"]:
            if attr["key"] == key:
                found.append(tuple(int(v) for v in re.findall(r"-?\d+", attr["value"])))
    return found


def delegate_views(graphs_json: Path) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per Ethos-U call node: (its argument sizes, its subgraph's input+output shapes)."""
    data = json.loads(graphs_json.read_text())
    by_id = {g["id"]: g for g in data["graphs"]}
    views = {}
    for node in by_id["forward"]["nodes"]:
        if node["label"] != "EthosUBackend":
            continue
        (sub,) = node["subgraphIds"]
        tosa = {n["id"]: n for n in by_id[sub]["nodes"]}
        call = shapes(node["inputsMetadata"], "sizes") + shapes(node["outputsMetadata"], "sizes")
        graph = shapes(tosa["0"]["outputsMetadata"], "shape") + shapes(
            tosa["-1"]["inputsMetadata"], "shape"
        )
        views[node["id"]] = (sorted(call), sorted(graph))
    return views


def test_two_delegates_differ_in_shape(explored: Exploration) -> None:
    first, second = (d.call.shapes for d in explored.shown.delegates)
    assert sorted(first) != sorted(second), "the test model must tell its delegates apart"


def test_each_call_shows_the_tosa_graph_of_its_own_shapes(explored: Exploration) -> None:
    views = delegate_views(explored.graphs)
    assert len(views) == 2
    for node, (call, graph) in views.items():
        assert call == graph, f"{node}: call passes {call}, its TOSA graph has {graph}"
    assert [d.call.instruction.node_id for d in explored.shown.delegates] == list(views)
    assert [d.name for d in explored.shown.delegates] == ["delegate_0", "delegate_1"]


def test_graphs_in_program_order_are_swapped_by_the_adapter(
    explored: Exploration, viewer: Viewer, tmp_path: Path
) -> None:
    """The adapter's contract, kept honest: in program order the two graphs trade places."""
    program_order = list(reversed(adapter_paths(explored.shown.delegates)))
    out = tmp_path / "natural.json"
    model = explored.folder / f"{explored.source.label}.pte"
    viewer.convert(model, program_order, explored.source.label, out)
    views = delegate_views(out)
    assert all(call != graph for call, graph in views.values()), views


def test_the_delegate_graphs_are_named_after_the_shown_model(explored: Exploration) -> None:
    data = json.loads(explored.graphs.read_text())
    label = explored.source.label
    assert data["label"] == label
    assert [g["id"] for g in data["graphs"]] == [
        "forward",
        f"{label}.pte::forward_0_1",
        f"{label}.pte::forward_0_5",
    ]


def test_show_opens_the_page_on_a_delegates_graph(explored: Exploration) -> None:
    from urllib.parse import unquote

    import pytest

    from hil.errors import ExploreError

    graph = explored.delegate_graph("delegate_1")
    assert graph == f"{explored.source.label}.pte::forward_0_5"
    state = json.loads(unquote(explored.view(graph).query().removeprefix("data=")))
    assert state["uiState"]["paneStates"][0]["selectedGraphId"] == graph
    assert state["nodeDataTargets"] == [explored.source.label] * len(explored.overlays)
    with pytest.raises(ExploreError, match="no delegate 'delegate_9'"):
        explored.delegate_graph("delegate_9")


def test_without_matching_command_streams_the_graphs_pair_by_shape(explored: Exploration) -> None:
    from dataclasses import replace

    from hil.explore.delegates import _pair

    d0, d1 = explored.shown.delegates
    assert d0.paired_by == d1.paired_by == "command stream"
    stale = [
        (d.name, d.graph, replace(d.estimate, stream_sha256="0" * 64))  # type: ignore[type-var]
        for d in (d1, d0)
    ]
    paired = _pair(explored.shown.program, [d0.call, d1.call], stale)
    assert [(p.name, p.paired_by) for p in paired] == [
        ("delegate_0", "shapes"),
        ("delegate_1", "shapes"),
    ]
    no_flags = [(d.name, d.graph, None) for d in (d0, d1)]
    assert [p.name for p in _pair(explored.shown.program, [d0.call, d1.call], no_flags)] == [
        "delegate_0",
        "delegate_1",
    ]


def test_the_page_opens_on_the_pte_graph_and_zooms_to_each_delegates_costliest_operator(
    explored: Exploration,
) -> None:
    assert explored.start_graph(None) == "forward"
    focus = explored.focus()
    for d in explored.shown.delegates:
        assert d.estimate is not None
        costliest = max(d.estimate.layers.values(), key=lambda layer: layer.npu_cycles)
        assert focus[explored.shown.delegate_graph(d)] == d.graph.node_id(costliest.op_index)
    graph = explored.start_graph("delegate_0")
    assert explored.view(graph).node == focus[graph]
