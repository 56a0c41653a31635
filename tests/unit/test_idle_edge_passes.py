"""An edge pass with nothing to rewrite is skipped, one with something runs, and the program is
the same bytes either way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from hil.speedups import idle_edge_passes
from hil.speedups import switch as speedups
from hil.speedups.patch_once import inspect_unwrapped


class Plain(nn.Module):
    """Nothing any of the guarded passes rewrites."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.sigmoid(x))


class Transposed(nn.Module):
    """`aten.t` (a view), a Python number for a tensor, an int tensor added to a float one."""

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return (x.t() * 2).t() + i


class Mean(nn.Module):
    """A reduction the portable kernels need in the default dim order, left on the CPU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1)


class Branching(nn.Module):
    """`torch.cond`: a graph with control flow runs every pass."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda v: torch.sigmoid(v), lambda v: torch.tanh(v), (x,))


PLAIN = (torch.rand(2, 5),)
TRANSPOSED = (torch.rand(2, 5), torch.ones(2, 5, dtype=torch.int32))


@pytest.fixture(scope="module")
def installed() -> None:
    assert "idle-edge-passes" in speedups.install(), "ExecuTorch is not the one measured"


@pytest.fixture
def ran(installed: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The guarded passes that retraced (ran as shipped), while the part is in place."""
    names: list[str] = []
    for name, pass_type in idle_edge_passes._passes().items():
        shipped = pass_type.call.__wrapped__

        def counting(self: Any, graph_module: Any, name: str = name, shipped: Any = shipped) -> Any:
            names.append(name)
            return shipped(self, graph_module)

        counting.__wrapped__ = shipped  # type: ignore[attr-defined]
        guarded = idle_edge_passes._guarded(counting, idle_edge_passes._needs(name, pass_type))
        monkeypatch.setattr(pass_type, "call", guarded)
    yield names


def portable(model: nn.Module, inputs: tuple[Any, ...], **export: Any) -> bytes:
    from executorch.exir import to_edge

    program = torch.export.export(model, inputs, **export)
    return bytes(to_edge(program).to_executorch().buffer)


def tosa(model: nn.Module, inputs: tuple[Any, ...], spec: str = "TOSA-1.0+FP") -> bytes:
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
    from executorch.exir import to_edge_transform_and_lower

    program = torch.export.export(model, inputs)
    partitioner = TOSAPartitioner(TosaCompileSpec(spec))
    return bytes(
        to_edge_transform_and_lower(program, partitioner=[partitioner]).to_executorch().buffer
    )


def as_shipped(monkeypatch: pytest.MonkeyPatch, make: Any, *args: Any, **kwargs: Any) -> bytes:
    """The program with the passes as shipped (the part taken out for the call)."""
    with monkeypatch.context() as m:
        for pass_type in idle_edge_passes._passes().values():
            m.setattr(pass_type, "call", inspect_unwrapped(pass_type.call))
        return make(*args, **kwargs)  # type: ignore[no-any-return]


def test_a_graph_with_nothing_to_rewrite_skips_every_guarded_pass(
    ran: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert portable(Plain(), PLAIN) == as_shipped(monkeypatch, portable, Plain(), PLAIN)
    assert tosa(Plain(), PLAIN) == as_shipped(monkeypatch, tosa, Plain(), PLAIN)
    assert ran == []


def test_passes_with_something_to_rewrite_run(
    ran: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert portable(Transposed(), TRANSPOSED) == as_shipped(
        monkeypatch, portable, Transposed(), TRANSPOSED
    )
    assert ran == ["ScalarToTensorPass", "RemoveMixedTypeOperators"]
    ran.clear()
    assert portable(Mean(), PLAIN) == as_shipped(monkeypatch, portable, Mean(), PLAIN)
    assert ran == ["LegalizePortableDimOrderPass"]


class Mixed(nn.Module):
    """An int tensor added to a float one (no Python number, which the pass cannot take)."""

    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x + i


@pytest.mark.parametrize(
    ("name", "model", "rewritten"),
    [
        ("NormalizeTransposePass", Transposed(), "aten.t_copy.default"),
        ("ReplaceBrokenOpsWithFunctionalOpsPass", Transposed(), "aten.t_copy.default"),
        ("ScalarToTensorPass", Transposed(), "_tensor_constant"),
        ("RemoveMixedTypeOperators", Mixed(), "aten._to_copy.default"),
    ],
)
def test_each_pass_runs_on_its_own_operators(
    ran: list[str], name: str, model: nn.Module, rewritten: str
) -> None:
    """Straight on the functionalized graph (in the lowering an earlier pass may take them)."""
    program = torch.export.export(model, TRANSPOSED).run_decompositions({})
    result = idle_edge_passes._passes()[name]()(program.graph_module)
    assert ran == [name]
    assert rewritten in result.graph_module.code.replace("torch.ops.", "")
    ran.clear()
    plain = torch.export.export(Plain(), PLAIN).run_decompositions({})
    assert idle_edge_passes._passes()[name]()(plain.graph_module).modified is False
    assert ran == []


def test_dynamic_shapes_and_control_flow_run_every_pass(
    ran: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = torch.export.Dim("rows", min=2, max=8)
    dynamic = {"x": {0: rows}}
    assert portable(Plain(), PLAIN, dynamic_shapes=dynamic) == as_shipped(
        monkeypatch, portable, Plain(), PLAIN, dynamic_shapes=dynamic
    )
    assert "SymToTensorPass" in ran and "ScalarToTensorPass" in ran
    ran.clear()
    spec = "TOSA-1.0+FP+cf"
    assert tosa(Branching(), PLAIN, spec) == as_shipped(monkeypatch, tosa, Branching(), PLAIN, spec)
    assert "NormalizeTransposePass" in ran and "SymToTensorPass" in ran
