"""fx's generated source made again only where the graph changed: after every kind of edit the
source is the one torch makes, and an untouched graph's is handed out again."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.fx import GraphModule
from torch.fx import graph as fx_graph

from hil.speedups import fx_code_reuse


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    assert fx_code_reuse.PART.fits(), "torch.fx generates code otherwise than this was written for"
    assert fx_code_reuse.PATCH.install()


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.inner(x) + 1.0)


def shipped(gm: GraphModule, root: str = "self", **options: Any) -> Any:
    """What torch makes, without the reuse."""
    return fx_graph.Graph.python_code.__wrapped__(gm.graph, root, **options)


def same_code(a: Any, b: Any) -> bool:
    return (
        a.src == b.src
        and a._lineno_map == b._lineno_map
        and a._prologue_start == b._prologue_start
        and a.globals.keys() == b.globals.keys()
        and all(a.globals[k] is b.globals[k] for k in a.globals)
    )


def _args(gm: GraphModule) -> None:
    add = next(n for n in gm.graph.nodes if n.target is operator.add)
    add.args = (add.args[0], 2.0)


def _target(gm: GraphModule) -> None:
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    relu.target = torch.sigmoid


def _name(gm: GraphModule) -> None:
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    relu.name = "activated"


def _insert(gm: GraphModule) -> None:
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    with gm.graph.inserting_after(relu):
        neg = gm.graph.call_function(torch.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)


def _erase(gm: GraphModule) -> None:
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    relu.replace_all_uses_with(relu.args[0])
    gm.graph.erase_node(relu)


def _annotate(gm: GraphModule) -> None:
    next(n for n in gm.graph.nodes if n.op == "placeholder").type = torch.Tensor


def _codegen(gm: GraphModule) -> None:
    gm.graph.set_codegen(fx_graph.CodeGen())


def _wrapped(gm: GraphModule) -> None:
    next(n for n in gm.graph.nodes if n.target is torch.relu).meta["is_wrapped"] = True


EDITS: dict[str, Callable[[GraphModule], None]] = {
    "arguments": _args,
    "target": _target,
    "name": _name,
    "inserted node": _insert,
    "erased node": _erase,
    "type annotation": _annotate,
    "code generator": _codegen,
    "wrapped function": _wrapped,
}


def test_an_untouched_graph_hands_out_its_source_again_as_a_copy() -> None:
    gm = torch.fx.symbolic_trace(Block())
    first = gm.graph.python_code("self")
    kept = getattr(gm.graph, fx_code_reuse.KEPT)
    again = gm.graph.python_code(root_module="self")
    assert getattr(gm.graph, fx_code_reuse.KEPT) is kept  # reused, not made again
    assert same_code(again, shipped(gm)) and same_code(first, again)
    again.globals["added_by_a_caller"] = object()
    assert "added_by_a_caller" not in gm.graph.python_code("self").globals


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_every_kind_of_edit_makes_the_source_again(edit: str) -> None:
    gm = torch.fx.symbolic_trace(Block())
    before = gm.graph.python_code("self")
    EDITS[edit](gm)
    after = gm.graph.python_code("self")
    assert same_code(after, shipped(gm))
    assert after.src != before.src or edit == "code generator"
    if edit != "wrapped function":  # its source registers torch.relu with fx's tracer for good
        gm.recompile()
        assert gm.code == shipped(gm).src


def test_a_node_moved_makes_the_source_again() -> None:
    gm = torch.fx.symbolic_trace(Block())
    output = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(output):
        unused = gm.graph.call_function(torch.ones, (4,))
    before = gm.graph.python_code("self")
    next(n for n in gm.graph.nodes if n.op == "call_module").prepend(unused)
    after = gm.graph.python_code("self")
    assert after.src != before.src and same_code(after, shipped(gm))


def test_other_options_make_the_source_again() -> None:
    gm = torch.fx.symbolic_trace(Block())
    gm.graph.python_code("self")
    assert same_code(gm.graph.python_code("self", verbose=True), shipped(gm, verbose=True))
    assert same_code(gm.graph.python_code("other"), shipped(gm, "other"))


def test_a_source_that_reads_node_metadata_is_made_as_shipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """verbose annotates each node with its `val`, which passes change in place."""
    gm = torch.fx.symbolic_trace(Block())
    x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    x.meta["val"] = torch.empty(2, 4)
    gm.graph.python_code("self", verbose=True)
    x.meta["val"] = torch.empty(3, 4)
    assert "f32[3, 4]" in gm.graph.python_code("self", verbose=True).src
    monkeypatch.setenv("FX_GRAPH_SHOW_META", "1")
    gm.graph.python_code("self")
    x.meta["seen"] = "later"
    assert "later" in gm.graph.python_code("self").src


def test_a_module_recompiled_after_an_edit_runs_the_edited_graph() -> None:
    gm = torch.fx.symbolic_trace(Block())
    x = torch.randn(2, 4)
    expected = torch.relu(gm.inner(x) + 2.0)
    _args(gm)
    gm.recompile()
    assert torch.equal(gm(x), expected)
