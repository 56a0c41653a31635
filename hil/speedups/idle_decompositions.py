"""A decomposition pass of ExecuTorch's lowering that has nothing to decompose is not run.

`to_edge_transform_and_lower` decomposes each program three times for a partitioner that checks
operator support (the Arm partitioners do): once with no table, which functionalizes the
graph; once with the core-ATen table less the ops the partitioner keeps; once more with the
whole table, after the kept ops are renamed out of its way. Each pass retraces the whole
program, about 0.1 s on a one-operator graph: the three were about 30 % of a tiny int8
Ethos-U export here (cProfile, 2026-12).

On ExecuTorch's operator tests the graph left by the first pass usually holds no operator
either table would decompose, and retracing a graph without control flow that decomposes
nothing gives the same graph back. ExecuTorch's own lowering already skips its second pass on
that condition for partitioners that do not check support (`contains_any_call_fn_target_op`).
This part applies the same condition to the passes of the checking path, only to a program one
of the same lowering's passes made (the first, functionalizing pass always runs), and only
where the condition sees the whole program: ExecuTorch's check looks into `cond` branches
but not into a `while_loop`'s body, so a program calling any higher-order operator other than
`cond`, at any depth, runs every pass (their `test_while` rows: without the idle passes the
loop is not delegated and the program cannot be serialized).

Measured on their passed cases of eight operator-test files, cold on two cores: 145 s with
every pass, 126 s without the idle ones; on their whole folder all 4,066 programs hil makes
are byte-identical with and without the part (and, once `cond` programs skip too, the 50
programs of their `test_cond` and `test_while` files). tests/integration/test_pristine_export.py
compares a program per recipe on every `make test`, and tests/unit/test_idle_decompositions.py
that the skip happens, that a pass with work runs, and that a loop runs every pass.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from hil.speedups.patch_once import Part, Patch

# The programs the current edge generation's passes made: only those are known functional.
_made: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "hil_decomposed_programs", default=None
)


def _program_module() -> Any:
    from executorch.exir.program import _program

    return _program


def _exported_program() -> Any:
    from torch.export.exported_program import ExportedProgram

    return ExportedProgram


def _generation(generate: Callable[..., Any]) -> Callable[..., Any]:
    def generate_noting_passes(*args: Any, **kwargs: Any) -> Any:
        token = _made.set([])
        try:
            return generate(*args, **kwargs)
        finally:
            _made.reset(token)

    generate_noting_passes.__wrapped__ = generate  # type: ignore[attr-defined]
    return generate_noting_passes


def _decompositions(run: Callable[..., Any]) -> Callable[..., Any]:
    from executorch.exir.graph_module import contains_any_call_fn_target_op

    def run_unless_idle(self: Any, decomp_table: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = _made.get()
        if made is None:
            return run(self, decomp_table, *args, **kwargs)
        table = None if decomp_table is None else _as_materialized(decomp_table)
        if (
            table
            and not args
            and not kwargs
            and any(program is self for program in made)
            and not _calls_control_flow_besides_cond(self.graph_module)
            and not contains_any_call_fn_target_op(self.graph_module, table)
        ):
            return self
        program = run(self, decomp_table, *args, **kwargs)
        made.append(program)
        return program

    run_unless_idle.__wrapped__ = run  # type: ignore[attr-defined]
    return run_unless_idle


def _as_materialized(table: Any) -> Any:
    """The table's membership as torch's `CustomDecompTable` answers it once materialized, without
    materializing it (about 4 ms a table) where the answer is already known (a plain dict as is)."""
    from torch.export.decomp_utils import CustomDecompTable

    return _Materialized(table) if isinstance(table, CustomDecompTable) else table


class _Materialized:
    """Materializing adds to the table's own dict only the composite operators outside ATen that
    the caller has not removed (`CustomDecompTable.materialize`), so an operator already in the
    dict is in, and an ATen one or one removed is out; only another one needs the whole table."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def __len__(self) -> int:
        return len(self.table.decomp_table) or len(self.table)

    def __contains__(self, op: Any) -> bool:
        import torch
        from torch._export.utils import _is_aten_op

        own = self.table.decomp_table
        if op in own:
            return True
        if not isinstance(op, torch._ops.OpOverload):
            return False  # materializing adds operator overloads only
        if self.table.has_materialized or _is_aten_op(op) or op in self.table.deleted_custom_ops:
            return False
        return op in self.table


def _calls_control_flow_besides_cond(graph_module: Any) -> bool:
    """Whether the graph, or a `cond` branch in it, calls a higher-order operator other than
    `cond`: a `while_loop`, whose body `contains_any_call_fn_target_op` does not look into, or
    a `map` or `scan`, which it does look into but which no program here has shown to come back
    the same from an idle pass."""
    import torch
    from executorch.exir.graph_module import get_control_flow_submodules
    from torch._ops import HigherOrderOperator

    for node in graph_module.graph.nodes:
        if (
            node.op == "call_function"
            and isinstance(node.target, HigherOrderOperator)
            and node.target is not torch.ops.higher_order.cond
        ):
            return True
    return any(
        _calls_control_flow_besides_cond(sub)
        for _, sub, _ in get_control_flow_submodules(graph_module)
    )


def _custom_table_membership() -> tuple[Any, ...]:
    """The code `_Materialized` answers for: what materializing adds, and how the table counts."""
    from torch.export.decomp_utils import CustomDecompTable

    return (
        CustomDecompTable.__init__,
        CustomDecompTable.materialize,
        CustomDecompTable.__contains__,
        CustomDecompTable.__len__,
        CustomDecompTable.pop,
    )


def _control_flow_search() -> tuple[Any, ...]:
    """The code that decides which subgraphs the skip's condition sees."""
    from executorch.exir import graph_module

    return (
        graph_module.contains_any_call_fn_target_op,
        graph_module.get_control_flow_submodules,
        graph_module._get_control_flow_submodules,
    )


def applies() -> bool:
    from executorch.exir import graph_module

    return hasattr(_program_module(), "_gen_edge_manager_for_partitioners") and hasattr(
        graph_module, "contains_any_call_fn_target_op"
    )


def _skip_idle_passes() -> None:
    program = _program_module()
    program._gen_edge_manager_for_partitioners = _generation(
        program._gen_edge_manager_for_partitioners
    )
    exported = _exported_program()
    exported.run_decompositions = _decompositions(exported.run_decompositions)


PART = Part(
    "idle-decompositions",
    lambda: (
        _program_module()._gen_edge_manager_for_partitioners,
        _exported_program().run_decompositions,
        *_custom_table_membership(),
        *_control_flow_search(),
    ),
    "7fe8901622a70a5c009ea3f282af4b57f95c29ae5ff6d19c31f78ec5a7d52202",
    Patch(applies, _skip_idle_passes),
)
