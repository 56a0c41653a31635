"""A decomposition pass with nothing to decompose is skipped, one with something is run, and
the program is the same bytes either way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from hil.speedups import idle_decompositions
from hil.speedups import switch as speedups


class Sigmoid(nn.Module):
    """Nothing the tables decompose once functionalized (TOSA keeps sigmoid)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) * 2.0


class Hardswish(nn.Module):
    """An operator the core-ATen table decomposes that the TOSA partitioner does not keep."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.hardswish(x) + torch.logit(x.clamp(0.1, 0.9))


@pytest.fixture(scope="module")
def installed() -> None:
    assert "idle-decompositions" in speedups.install(), "ExecuTorch is not the one measured"


@pytest.fixture
def shipped_runs(installed: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The tables the shipped `run_decompositions` is called with, while the part is in place."""
    from torch.export.exported_program import ExportedProgram

    tables: list[Any] = []
    shipped = ExportedProgram.run_decompositions.__wrapped__

    def counting(self: Any, table: Any = None, *args: Any, **kwargs: Any) -> Any:
        tables.append(table)
        return shipped(self, table, *args, **kwargs)

    monkeypatch.setattr(
        ExportedProgram, "run_decompositions", idle_decompositions._decompositions(counting)
    )
    yield tables


def lowered(model: nn.Module, spec: str = "TOSA-1.0+FP") -> bytes:
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
    from executorch.exir import to_edge_transform_and_lower

    program = torch.export.export(model, (torch.rand(2, 5),))
    partitioner = TOSAPartitioner(TosaCompileSpec(spec))
    return bytes(
        to_edge_transform_and_lower(program, partitioner=[partitioner]).to_executorch().buffer
    )


def as_shipped(
    model: nn.Module, monkeypatch: pytest.MonkeyPatch, spec: str = "TOSA-1.0+FP"
) -> bytes:
    """The program with ExecuTorch's lowering as shipped (the part taken out for the call)."""
    from executorch.exir.program import _program
    from torch.export.exported_program import ExportedProgram

    with monkeypatch.context() as m:
        m.setattr(
            _program,
            "_gen_edge_manager_for_partitioners",
            _program._gen_edge_manager_for_partitioners.__wrapped__,
        )
        m.setattr(
            ExportedProgram, "run_decompositions", ExportedProgram.run_decompositions.__wrapped__
        )
        return lowered(model, spec)


def test_passes_with_nothing_to_decompose_are_skipped_and_the_program_is_the_same(
    shipped_runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    program = lowered(Sigmoid())
    assert len(shipped_runs) == 1 and not shipped_runs[0], "only the functionalizing pass runs"
    assert program == as_shipped(Sigmoid(), monkeypatch)


def test_a_pass_with_something_to_decompose_runs(
    shipped_runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    program = lowered(Hardswish())
    assert len(shipped_runs) >= 2 and shipped_runs[1], "the decomposing pass ran"
    assert program == as_shipped(Hardswish(), monkeypatch)


def test_outside_a_lowering_every_call_runs(shipped_runs: list[Any]) -> None:
    """torch.export users outside ExecuTorch's edge generation get torch's own behaviour."""
    program = torch.export.export(Sigmoid(), (torch.rand(2, 5),)).run_decompositions({})
    program.run_decompositions()
    assert len(shipped_runs) == 2


class Doubling(nn.Module):
    """A while_loop: its program needs every decomposition pass to be delegated."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor]:
        def below(value: torch.Tensor) -> torch.Tensor:
            return value.sum() < 40.0

        def double(value: torch.Tensor) -> tuple[torch.Tensor]:
            return (value + value,)

        return torch.ops.higher_order.while_loop(below, double, (x,), ())  # type: ignore[no-any-return]


def test_a_loop_program_runs_every_pass(
    shipped_runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    program = lowered(Doubling(), "TOSA-1.0+FP+cf")
    assert len(shipped_runs) == 3
    assert program == as_shipped(Doubling(), monkeypatch, "TOSA-1.0+FP+cf")


class Branching(nn.Module):
    """A `cond` whose branches the check looks into; `hardswish` makes the decomposing pass run."""

    def __init__(self, decomposed: bool = False) -> None:
        super().__init__()
        self.decomposed = decomposed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def positive(value: torch.Tensor) -> torch.Tensor:
            if self.decomposed:
                return torch.nn.functional.hardswish(value)
            return torch.sigmoid(value)

        def negative(value: torch.Tensor) -> torch.Tensor:
            return value * 2.0

        predicate = x.sum(dim=(0, 1)) > 0  # x.sum() is aten.sum.default, which the table decomposes
        return torch.cond(predicate, positive, negative, (x,))  # type: ignore[no-any-return]


def test_a_cond_program_with_nothing_to_decompose_skips_and_is_the_same(
    shipped_runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    program = lowered(Branching(), "TOSA-1.0+FP+cf")
    assert len(shipped_runs) == 1, "the check sees into both branches"
    assert program == as_shipped(Branching(), monkeypatch, "TOSA-1.0+FP+cf")


def test_a_branch_with_something_to_decompose_runs_the_pass(
    shipped_runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    program = lowered(Branching(decomposed=True), "TOSA-1.0+FP+cf")
    assert len(shipped_runs) >= 2 and shipped_runs[1]
    assert program == as_shipped(Branching(decomposed=True), monkeypatch, "TOSA-1.0+FP+cf")


class LoopInBranch(nn.Module):
    """A `while_loop` inside a `cond` branch: the check does not look into the loop."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def looping(value: torch.Tensor) -> torch.Tensor:
            return Doubling()(value)[0]

        def passing(value: torch.Tensor) -> torch.Tensor:
            return value.clone()

        return torch.cond(x.sum() > 0, looping, passing, (x,))  # type: ignore[no-any-return]


def test_a_loop_at_any_depth_runs_every_pass() -> None:
    loop = torch.export.export(Doubling(), (torch.rand(2, 5),)).graph_module
    nested = torch.export.export(LoopInBranch(), (torch.rand(2, 5),)).graph_module
    branch = torch.export.export(Branching(), (torch.rand(2, 5),)).graph_module
    assert idle_decompositions._calls_control_flow_besides_cond(loop)
    assert idle_decompositions._calls_control_flow_besides_cond(nested)
    assert not idle_decompositions._calls_control_flow_besides_cond(branch)


def test_table_membership_is_the_materialized_tables_without_materializing_it() -> None:
    """The skip's check answers as the materialized table would, for every operator torch
    knows as composite and for the operators of a quantized graph, and leaves the table as it
    was where the answer was known."""
    import operator

    from executorch.exir.tracer import _default_decomposition_table
    from torch._export.utils import _collect_all_valid_cia_ops

    def table() -> Any:
        fresh = _default_decomposition_table()
        for op in (torch.ops.aten.hardswish.default, torch.ops.aten.linear.default):
            fresh.pop(op, None)  # kept by a partitioner
        return fresh

    ops = [
        *_collect_all_valid_cia_ops(),
        torch.ops.aten.hardswish.default,
        torch.ops.aten.linear.default,
        torch.ops.aten.sigmoid.default,
        torch.ops.aten.native_layer_norm.default,
        torch.ops.quantized_decomposed.quantize_per_tensor.default,
        torch.ops.quantized_decomposed.dequantize_per_channel.default,
        operator.getitem,
    ]
    materialized = table()
    answers = {op: op in materialized for op in ops}
    assert materialized.has_materialized
    lazy = table()
    view = idle_decompositions._as_materialized(lazy)
    assert bool(view) and not lazy.has_materialized
    known = [  # ATen's, the quantizer's that ExecuTorch removes, and what is no operator
        op
        for op in ops
        if getattr(op, "namespace", "aten") == "aten" or op in lazy.deleted_custom_ops
    ]
    assert torch.ops.quantized_decomposed.dequantize_per_channel.default in known
    assert {op: op in view for op in known} == {op: answers[op] for op in known}
    assert not lazy.has_materialized, "known answers must not materialize the table"
    assert {op: op in view for op in ops} == answers
