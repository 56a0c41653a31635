"""Shared node provenance and the shared pass stand-in change no program and no provenance."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from executorch.exir.pass_base import ExportPass, _ExportPassBase
from torch.fx import traceback as fx_traceback

from hil.speedups import pass_placeholder, provenance_sharing


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.linear = torch.nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x)).mean((2, 3))
        return torch.softmax(self.linear(y), -1) + torch.sigmoid(y).sum(-1, keepdim=True)


@pytest.fixture(scope="module")
def installed() -> None:
    assert provenance_sharing.install(), "torch.fx.traceback is not the one measured"
    assert pass_placeholder.install(), "ExecuTorch's pass constructor is not the one measured"


def _chain(sources: list[Any] | None) -> list[Any]:
    """A provenance chain as data, without the graph ids (object ids, new each run)."""

    def plain(d: Any) -> Any:
        if isinstance(d, dict):
            return {k: plain(v) for k, v in d.items() if k != "graph_id"}
        if isinstance(d, list):
            return [plain(v) for v in d]
        return d

    return [plain(s.to_dict()) for s in sources or []]


def _lowered() -> tuple[bytes, list[list[Any]]]:
    """Block through ExecuTorch's XNNPACK lowering: the program and every node's provenance."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(0)
    program = torch.export.export(Block().eval(), (torch.randn(1, 3, 8, 8),))
    edge = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    chains = [_chain(n.meta.get("from_node")) for n in edge.exported_program().graph.nodes]
    return edge.to_executorch().buffer, chains


def test_a_lowering_gives_the_same_program_and_provenance_as_shipped(
    installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _lowered()
    assert any(len(chain) for chain in ours[1]), "no provenance was kept: nothing was compared"
    monkeypatch.setattr(fx_traceback, "copy", copy)
    monkeypatch.setattr(_ExportPassBase, "__init__", _ExportPassBase.__init__.__wrapped__)
    assert _lowered() == ours


def test_a_new_source_copies_the_list_and_shares_the_sources(installed: None) -> None:
    graph = torch.fx.Graph()
    node = graph.placeholder("x")
    earlier = fx_traceback.NodeSource(None, "an earlier pass")
    node.meta["from_node"] = [earlier]
    source = fx_traceback.NodeSource(node, "this pass")
    node.meta["from_node"].append(fx_traceback.NodeSource(None, "a later pass"))
    assert source.from_node == [earlier] and source.from_node[0] is earlier
    assert copy.deepcopy({"a": [1, [2]]}) == {"a": [1, [2]]}  # anything else: a deep copy


def test_passes_share_one_stand_in_and_run_as_before(installed: None) -> None:
    first, second = ExportPass(), ExportPass()
    assert first.interpreter is second.interpreter
    assert first.tracer is not second.tracer


def test_a_pass_constructor_that_changed_is_left_as_shipped(
    installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = _ExportPassBase.__init__.__wrapped__  # type: ignore[attr-defined]

    def with_one_more(self: Any) -> None:
        shipped(self)
        self.something_new = 1

    monkeypatch.setattr(_ExportPassBase, "__init__", with_one_more)
    monkeypatch.setattr(pass_placeholder.PATCH, "installed", False)
    assert pass_placeholder.install() is False
    assert _ExportPassBase.__init__ is with_one_more


def test_a_traceback_that_copies_otherwise_is_left_as_shipped(
    installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fx_traceback, "copy", copy)  # as shipped: then changed, say, to a
    monkeypatch.setattr(fx_traceback.NodeSource, "__init__", lambda self, *a, **k: None)
    monkeypatch.setattr(provenance_sharing.PATCH, "installed", False)
    assert provenance_sharing.install() is False
    assert fx_traceback.copy is copy
