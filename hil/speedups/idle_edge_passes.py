"""An ExecuTorch edge pass that would find nothing to rewrite in a graph is not run.

Making the edge program, ExecuTorch runs a row of `ExportPass`es over the whole graph, and
each one retraces it (every node through fake tensors, about 5-10 ms on an operator test's
graph) even where none of its operators is there. Six of them rewrite only nodes a glance at
the graph can name:

* `NormalizeTransposePass`: `aten.t`;
* `ReplaceBrokenOpsWithFunctionalOpsPass`: view operators;
* `ScalarToTensorPass`: a Python number where the operator's schema takes a tensor;
* `SymToTensorPass`: a symbolic number (dynamic shapes) where the schema takes a tensor;
* `RemoveMixedTypeOperators`: `add`, `sub`, `mul`, `div` and `minimum`;
* `LegalizePortableDimOrderPass` (in `to_executorch`): the pooling and reduction operators it
  lists itself.

Each of these passes keeps every other node as the retrace rebuilds it: same name, same
operator, same arguments. Its `val` and provenance are made again by the next pass that
retraces (`OpReplacePass` always follows the first five, `SpecPropPass` the last), and the
debug handles come from each node's oldest ancestor, which a skipped retrace does not change.
So the pass is skipped on a graph that holds none of its operators, only where the graph is
plain: every node one the retrace copies as it is (operators, `getitem`, delegate calls; no
`cond`, `while_loop` or other higher-order operator, no submodule), with a static `val`.
Anything else runs the pass as shipped.

Measured on ExecuTorch's operator tests (cold, one process, three files): the six retraces
were 6.1 s of 69 s, about 40 ms of each lowering. tests/unit/test_idle_edge_passes.py checks
that the skip happens, that a graph with each pass's operators runs it, and that the programs
are byte-identical to the shipped passes'; tests/integration/test_pristine_export.py compares
a program per recipe on every `make test`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from hil.speedups.patch_once import Part, Patch


def _passes() -> dict[str, Any]:
    """The passes this part guards, by name."""
    from executorch.exir.passes.legalize_portable_dim_order_pass import (
        LegalizePortableDimOrderPass,
    )
    from executorch.exir.passes.normalize_transpose_pass import NormalizeTransposePass
    from executorch.exir.passes.remove_mixed_type_operators import RemoveMixedTypeOperators
    from executorch.exir.passes.replace_broken_ops_with_function_ops_pass import (
        ReplaceBrokenOpsWithFunctionalOpsPass,
    )
    from executorch.exir.passes.scalar_to_tensor_pass import ScalarToTensorPass
    from executorch.exir.passes.sym_to_tensor_pass import SymToTensorPass

    return {
        p.__name__: p
        for p in (
            NormalizeTransposePass,
            ReplaceBrokenOpsWithFunctionalOpsPass,
            ScalarToTensorPass,
            SymToTensorPass,
            RemoveMixedTypeOperators,
            LegalizePortableDimOrderPass,
        )
    }


def _replaced() -> list[Any]:
    """The shipped code whose conditions the guards restate, and the retrace they skip."""
    from executorch.exir.pass_base import ExportPass, _ExportPassBase, map_args

    passes = _passes()
    return [
        *(p.call_operator for p in passes.values()),
        passes["ScalarToTensorPass"].call,
        ExportPass.ExportInterpreter.call_function,
        ExportPass.call_delegate,
        _ExportPassBase.ExportInterpreter.call_function,
        map_args,
    ]


def _calls(graph_module: Any) -> list[Any] | None:
    """The graph's operator calls, or None where the graph is not plain (see the docstring)."""
    import torch
    from executorch.exir.delegate import executorch_call_delegate
    from executorch.exir.dialects.edge._ops import EdgeOpOverload
    from executorch.exir.passes.executorch_prim_ops_registry import _EXECUTORCH_SYM_OPS

    calls = []
    for node in graph_module.graph.nodes:
        if node.op in ("output", "get_attr"):
            continue
        if node.op == "placeholder":
            if not _static(node.meta.get("val")):
                return None
            continue
        target = node.target
        if node.op != "call_function" or not _static(node.meta.get("val")):
            return None
        if target is operator.getitem or target is executorch_call_delegate:
            continue  # a delegate's call: the retrace copies it (ExportPass.call_delegate)
        if not isinstance(target, (torch._ops.OpOverload, EdgeOpOverload)):
            return None  # control flow, a symbolic-size helper, any other callable
        if target in _EXECUTORCH_SYM_OPS:
            return None
        calls.append(node)
    if any(isinstance(m, torch.fx.GraphModule) for m in graph_module.children()):
        return None
    return calls


def _static(value: Any) -> bool:
    """A node's `val`: tensors (or tuples and lists of them) of known, fixed shape."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(value, (tuple, list)):
        return all(_static(v) for v in value)
    return (
        isinstance(value, FakeTensor)
        and all(isinstance(d, int) for d in value.shape)
        and all(isinstance(s, int) for s in value.stride())
    )


def _aten(*names: str) -> frozenset[Any]:
    import torch

    return frozenset(operator.attrgetter(n)(torch.ops.aten) for n in names)


def _mixed_type_ops() -> frozenset[Any]:
    """RemoveMixedTypeOperators' allow list (its call_operator's, pinned by the digest)."""
    return _aten(
        "add.Tensor", "mul.Tensor", "sub.Tensor", "div.Tensor", "div.Tensor_mode", "minimum.default"
    )


def _scalar_for_tensor(node: Any) -> bool:
    """A Python number where the operator's schema takes a tensor (what ScalarToTensorPass
    rewrites), found the way its `map_args` walks the schema."""
    import torch

    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return True
    for i, argument in enumerate(schema.arguments):
        if argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        elif not argument.kwarg_only and i < len(node.args):
            value = node.args[i]
        else:
            continue
        if isinstance(value, (float, int, bool)) and isinstance(argument.type, torch.TensorType):
            return True
    return False


def _needs(name: str, pass_type: Any) -> Callable[[list[Any]], bool]:
    """Whether a plain graph's calls hold something the pass named `name` rewrites."""
    if name == "NormalizeTransposePass":
        transpose = _aten("t.default")
        return lambda calls: any(n.target in transpose for n in calls)
    if name == "ReplaceBrokenOpsWithFunctionalOpsPass":
        return lambda calls: any(getattr(n.target, "is_view", True) for n in calls)
    if name == "ScalarToTensorPass":
        return lambda calls: any(_scalar_for_tensor(n) for n in calls)
    if name == "SymToTensorPass":
        return lambda calls: False  # a plain graph holds no symbolic number
    if name == "RemoveMixedTypeOperators":
        mixed = _mixed_type_ops()
        return lambda calls: any(n.target in mixed for n in calls)
    if name == "LegalizePortableDimOrderPass":
        targets = pass_type._target_ops
        return lambda calls: any(n.target in targets for n in calls)
    raise ValueError(f"no guard written for {name}")


def _guarded(run: Callable[..., Any], needs: Callable[[list[Any]], bool]) -> Callable[..., Any]:
    """The pass's `call` (`run`, as shipped), skipped where a plain graph needs nothing."""
    from torch.fx.passes.infra.pass_base import PassResult

    def call_unless_idle(self: Any, graph_module: Any) -> Any:
        calls = _calls(graph_module)
        if calls is not None and not needs(calls):
            return PassResult(graph_module, False)
        return run(self, graph_module)

    call_unless_idle.__wrapped__ = run  # type: ignore[attr-defined]
    return call_unless_idle


def applies() -> bool:
    try:
        passes = _passes()
    except ImportError:
        return False
    return hasattr(passes["LegalizePortableDimOrderPass"], "_target_ops")


def _skip_idle_passes() -> None:
    for name, pass_type in _passes().items():
        shipped = pass_type.call
        pass_type.call = _guarded(shipped, _needs(name, pass_type))


PART = Part(
    "idle-edge-passes",
    _replaced,
    "c9a547d377f9b4bbdcf1e0ab52adfd14aafdb0470897973bfdc282dfbe802811",
    Patch(applies, _skip_idle_passes),
)
