"""hil's overlays on the two-delegate model: partition marks, Vela cycles, per-node errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hil.errors import ExploreError
from hil.explore.command import Exploration, graph_nodes, prepare
from hil.explore.node_errors import FORMAT, parse_node_errors, read_node_errors
from hil.explore.overlays import error_overlays, missing_nodes
from hil.explore.source import Source
from hil.explore.vela_layers import parse_debug_db
from hil.explore.viewer import Viewer


def overlay(exploration: Exploration, name: str) -> dict[str, Any]:
    (path,) = [p for p in exploration.overlays if p.stem == name]
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_partition_marks_the_cpu_fallback_with_no_kernel_and_the_npu_calls(
    explored: Exploration,
) -> None:
    forward = overlay(explored, "hil partition")["forward"]["results"]
    values = {node: r["value"] for node, r in forward.items()}
    assert values["forward_0_1"] == "NPU (delegate_0)"
    assert values["forward_0_5"] == "NPU (delegate_1)"
    assert values["forward_0_3"] == "CPU fallback, no CPU kernel"  # aten::avg_pool3d
    assert values["forward_0_0"] == "CPU boundary"  # quantize_per_tensor
    assert forward["forward_0_3"]["bgColor"] != forward["forward_0_1"]["bgColor"]


def test_partition_marks_cmsis_nn_kernels_on_cortex_m(
    small_cortex_m: Source, viewer: Viewer, tmp_path: Path
) -> None:
    shown = prepare(small_cortex_m, viewer, tmp_path, print)
    (path,) = shown.overlays
    marks = {n: r["value"] for n, r in json.loads(path.read_text())["forward"]["results"].items()}
    assert marks == {
        "forward_0_0": "CPU boundary",
        "forward_0_1": "CMSIS-NN kernel",
        "forward_0_2": "CPU boundary",
    }


def test_vela_cycles_sum_to_each_delegates_summary(
    explored: Exploration, two_delegates: Source
) -> None:
    data = overlay(explored, "Vela NPU cycles (estimated)")
    recorded = {d["name"]: d["vela"]["npu_cycles"] for d in two_delegates.details["delegates"]}
    for d in explored.shown.delegates:
        layers = data[explored.shown.delegate_graph(d)]["results"]
        assert sum(r["value"] for r in layers.values()) == recorded[d.name] > 0
        assert data["forward"]["results"][d.call.instruction.node_id]["value"] == recorded[d.name]
        convs = [op.index for op in d.graph.ops if op.op == "CONV2D"]
        assert all(d.graph.node_id(i) in layers for i in convs), "a conv costs NPU cycles"


def test_every_overlay_node_is_a_node_of_the_converted_graph(explored: Exploration) -> None:
    from hil.explore.overlays import Overlay

    overlays = [Overlay(p.stem, json.loads(p.read_text())) for p in explored.overlays]
    assert missing_nodes(overlays, graph_nodes(explored.graphs)) == []
    assert explored.notes == ()


def hand_made(explored: Exploration, **extra: Any) -> dict[str, Any]:
    _, d1 = explored.shown.delegates
    conv = next(op for op in d1.graph.ops if op.op == "CONV2D")
    return {
        "format": FORMAT,
        "pte_sha256": explored.source.sha256,
        "reference": "quantized model",
        "metrics": {
            "max_abs_steps": {"label": "max error (steps)", "limit": 1, "worse": "higher"},
            "sqnr_db": {"label": "SQNR (dB)", "worse": "lower"},
        },
        "nodes": [
            {"delegate": "delegate_0", "op": 5, "errors": {"max_abs_steps": 0, "sqnr_db": 60.0}},
            {
                "delegate": "delegate_1",
                "tensor": conv.outputs[0],
                "errors": {"max_abs_steps": 4, "sqnr_db": 21.5},
            },
            {"chain": 0, "instruction": 3, "errors": {"max_abs_steps": 1, "sqnr_db": None}},
        ],
        "first_divergent": {"delegate": "delegate_1", "op": conv.index},
        **extra,
    }


def test_a_hand_made_error_file_lands_on_its_nodes(
    explored: Exploration, two_delegates: Source, viewer: Viewer, tmp_path: Path
) -> None:
    errors = tmp_path / "errors.json"
    errors.write_text(json.dumps(hand_made(explored)))
    again = prepare(two_delegates, viewer, tmp_path / "work", print, errors)
    names = [p.stem for p in again.overlays]
    assert names == [
        "Vela NPU cycles (estimated)",
        "hil partition",
        "hil error - max error (steps) vs quantized model",
        "hil error - SQNR (dB) vs quantized model",
        "hil first divergent operator",
    ]
    d0, d1 = again.shown.delegates
    conv = next(op for op in d1.graph.ops if op.op == "CONV2D")
    steps = overlay(again, "hil error - max error (steps) vs quantized model")
    tosa1 = steps[again.shown.delegate_graph(d1)]["results"]
    assert tosa1 == {d1.graph.node_id(conv.index): {"value": 4.0, "bgColor": "#e63946"}}
    assert steps[again.shown.delegate_graph(d0)]["results"]["main/op5"]["bgColor"] == "#8fd694"
    forward = steps["forward"]["results"]
    assert forward["forward_0_3"]["value"] == 1.0  # within the limit of 1
    assert forward["forward_0_5"]["value"] == 4.0  # the delegate call shows its worst operator
    sqnr = overlay(again, "hil error - SQNR (dB) vs quantized model")
    assert sqnr["forward"]["results"]["forward_0_5"]["value"] == 21.5
    assert "forward_0_3" not in sqnr["forward"]["results"]  # null: not measured
    assert "gradient" in sqnr["forward"]  # no limit: coloured by a gradient
    first = overlay(again, "hil first divergent operator")
    assert first == {
        again.shown.delegate_graph(d1): {
            "results": {
                d1.graph.node_id(conv.index): {"value": "first divergent", "bgColor": "#e63946"}
            }
        },
        "forward": {
            "results": {"forward_0_5": {"value": "first divergent inside", "bgColor": "#e63946"}}
        },
    }
    from hil.explore.overlays import Overlay

    overlays = [Overlay(p.stem, json.loads(p.read_text())) for p in again.overlays]
    assert missing_nodes(overlays, graph_nodes(again.graphs)) == []


def test_a_default_error_file_is_picked_up_and_a_stale_one_is_named(
    explored: Exploration, two_delegates: Source, viewer: Viewer, tmp_path: Path
) -> None:
    default = tmp_path / "node-errors" / f"{two_delegates.label}.json"
    default.parent.mkdir()
    default.write_text(json.dumps(hand_made(explored)))
    found = prepare(two_delegates, viewer, tmp_path / "a", print, None, default)
    assert "hil first divergent operator" in [p.stem for p in found.overlays]
    default.write_text(json.dumps(hand_made(explored, pte_sha256="0" * 64)))
    stale = prepare(two_delegates, viewer, tmp_path / "b", print, None, default)
    assert [p.stem for p in stale.overlays] == ["Vela NPU cycles (estimated)", "hil partition"]
    assert any(
        "not shown" in n and "measured on a .pte with sha256 0000" in n for n in stale.notes
    ), stale.notes


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"pte_sha256": "f" * 64}, "not on this one"),
        (
            {"nodes": [{"delegate": "delegate_7", "op": 0, "errors": {"e": 1}}]},
            "no delegate 'delegate_7'",
        ),
        ({"nodes": [{"delegate": "delegate_0", "op": 9999, "errors": {"e": 1}}]}, "operators"),
        (
            {"nodes": [{"delegate": "delegate_0", "tensor": "nope", "errors": {"e": 1}}]},
            "produces tensor 'nope'",
        ),
        ({"nodes": [{"chain": 0, "instruction": 99, "errors": {"e": 1}}]}, "no such instruction"),
    ],
)
def test_an_error_file_that_does_not_fit_the_artifact_is_refused(
    explored: Exploration, change: dict[str, Any], words: str
) -> None:
    data = {**hand_made(explored), "first_divergent": None, **change}
    errors = parse_node_errors(data, Path("errors.json"))
    with pytest.raises(ExploreError, match=words) as raised:
        error_overlays(explored.shown, errors, explored.source.sha256)
    assert raised.value.fix


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"nodes": []}, "format is None"),
        ({"format": "hil-node-errors/2", "nodes": []}, "expected 'hil-node-errors/1'"),
        ({"format": FORMAT}, "'nodes' must be a list"),
        ({"format": FORMAT, "nodes": [{"op": 1, "errors": {"e": 1}}]}, "has no address"),
        ({"format": FORMAT, "nodes": [{"delegate": "d", "errors": {"e": 1}}]}, "one of 'op'"),
        ({"format": FORMAT, "nodes": [{"chain": 0, "instruction": 1}]}, "no 'errors' object"),
        (
            {"format": FORMAT, "nodes": [{"chain": 0, "instruction": 1, "errors": {"e": "x"}}]},
            "not a finite number",
        ),
        (
            {
                "format": FORMAT,
                "nodes": [{"chain": 0, "instruction": 1, "errors": {"e": float("nan")}}],
            },
            "not a finite number",
        ),
        ({"format": FORMAT, "nodes": [], "metrics": {"e": {"worse": "up"}}}, "'higher' or 'lower'"),
    ],
)
def test_a_malformed_error_file_is_refused_with_the_format(data: Any, words: str) -> None:
    with pytest.raises(ExploreError, match=words) as raised:
        parse_node_errors(data, Path("errors.json"))
    assert "hil/explore/node_errors.py" in (raised.value.fix or "")


def test_an_error_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "errors.json"
    bad.write_text("{nodes: ")
    with pytest.raises(ExploreError, match="is not JSON"):
        read_node_errors(bad)
    with pytest.raises(ExploreError, match="cannot read") as raised:
        read_node_errors(tmp_path / "missing.json")
    assert "--errors" in (raised.value.fix or "")


DEBUG_DB = """<debug>
<table name="perf">
<![CDATA[
"id","source_id","optimised_id","operator","name","staging_usage","op_cycles","npu_cycles","mac_count"
97,3,48,"Transpose","#99",98304,18432,12320,0
100,3,48,"Transpose","t0",98304,18432,12320,0
103,6,47,"Conv2D","r0",181744,133023,133023,3538944
]]>
</table>
<table name="source">
<![CDATA[
"id","operator","kernel_w","kernel_h","ofm_w","ofm_h","ofm_d","ext_key"
3,"Transpose",1,1,128,128,3,2
6,"Conv2D",3,3,64,64,32,5
]]>
</table>
</debug>
"""


def test_vela_rows_are_summed_per_tosa_operator_of_their_source(
    explored: Exploration,
) -> None:
    from dataclasses import replace

    from hil.artifacts.tosa_graph import TosaOp

    graph = explored.shown.delegates[0].graph
    ops = [TosaOp(i, "CONST", (), (f"c{i}",)) for i in range(6)]
    ops[2], ops[5] = TosaOp(2, "TRANSPOSE", (), ("t0",)), TosaOp(5, "CONV2D", (), ("c0",))
    found = parse_debug_db(DEBUG_DB, replace(graph, ops=tuple(ops)))
    assert {i: (x.npu_cycles, x.vela_ops) for i, x in found.layers.items()} == {
        2: (24640, ("Transpose", "Transpose")),
        5: (133023, ("Conv2D",)),
    }
    assert found.npu_cycles == 24640 + 133023 and found.unattributed_npu_cycles == 0
    wrong = list(ops)
    wrong[5] = TosaOp(5, "MUL", (), ())
    with pytest.raises(ExploreError, match="which is a MUL"):
        parse_debug_db(DEBUG_DB, replace(graph, ops=tuple(wrong)))
