"""The host program: a lowered edge program made runnable on the host, and saved beside the .pte.

Reference targets must execute at run time, yet a warm run must export nothing. So a recipe saves,
with torch.export.save, the program exactly as lowering left it, with two substitutions that make
it loadable and runnable without ExecuTorch's runtime:

- each NPU delegate call becomes `hil::tosa_delegate(name, outputs, inputs)`
  (hil.ethos_u.tosa_delegate), in the top-level graph and in control-flow submodules alike,
  which the reference target answers with the delegate's TOSA graph;
- each edge-dialect operator becomes the aten (or cortex_m, quantized_decomposed) operator it
  wraps, so PyTorch's kernels (or the Cortex-M Python reference kernels) run the CPU part;
- a scratch-buffer allocation (`executorch.exir.memory.alloc`) becomes `aten.zeros`.

Loading needs the operator libraries registered: the recipe records which ones the program uses
(host_program.json) and `load_host_program` imports just those first. A deploy loads the
program's module from the faster pickled copy beside it when there is one (hil.recipes.host_module).
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from hil.errors import DeployError, ExportError
from hil.ethos_u.macs import aten_overload
from hil.ethos_u.tosa_delegate import OP, TensorSpec, encode_outputs
from hil.recipes.host_module import read_host_module, write_host_module
from hil.speedups import switch as speedups

HOST_PROGRAM = "host_program.pt2"

# Operator libraries a host program may use, and the modules that register them.
HOST_PROGRAM_META = "host_program.json"

# Operator namespaces a host program may use, and the module that registers each one. Only the
# namespaces a program uses are imported at load, so a warm run stays light (executorch.exir,
# which registers dim_order_ops, is slow to import).
OP_LIBRARIES: dict[str, str] = {
    "quantized_decomposed": "torch.ao.quantization.fx._decomposed",
    "dim_order_ops": "executorch.exir.passes.dim_order_ops_registry",
    # Importing the passes registers cortex_m ops (ops.operators alone hits a circular import).
    "cortex_m": "executorch.backends.cortex_m.passes",
    "hil": "hil.ethos_u.tosa_delegate",
}
BUILTIN_NAMESPACES = ("aten", "prims")


def is_delegate_call(node: torch.fx.Node) -> bool:
    delegate = torch.ops.higher_order.executorch_call_delegate
    return node.op == "call_function" and node.target is delegate


def delegate_calls(
    graph_module: torch.fx.GraphModule,
) -> Iterator[tuple[torch.fx.GraphModule, torch.fx.Node]]:
    """Each delegate call with the graph module that holds it: the top-level graph's in
    execution order, then those inside control-flow submodules (a torch.cond branch delegated
    on an NPU without TOSA's cf extension), submodule by submodule. Delegate names follow this
    order everywhere (lowered_modules, host_program)."""
    for module in [graph_module] + [
        nested
        for _, nested in graph_module.named_modules()
        if nested is not graph_module and isinstance(nested, torch.fx.GraphModule)
    ]:
        for node in list(module.graph.nodes):
            if is_delegate_call(node):
                yield module, node


def lowered_module_of(graph_module: torch.fx.GraphModule, node: torch.fx.Node) -> Any:
    """The LoweredBackendModule a delegate call names (its first argument, a get_attr)."""
    holder: Any = node.args[0]
    return getattr(graph_module, str(holder.target))


def tensor_spec(value: Any) -> TensorSpec:
    return TensorSpec(
        tuple(int(d) for d in value.shape),
        str(value.dtype).removeprefix("torch."),
        tuple(int(d) for d in value.dim_order()),
    )


def host_program(edge_program: Any, name_of: Callable[[int, Any], str]) -> Any:
    """A plain ExportedProgram from a lowered edge program (the edge program is not changed).

    `name_of(index, lowered_module)` names each delegate, in `delegate_calls` order.
    """
    from torch.export import ExportedProgram

    program = copy.deepcopy(edge_program)
    graph_module = program.graph_module
    graph = graph_module.graph
    for index, (holder_module, node) in enumerate(list(delegate_calls(graph_module))):
        _stand_in(holder_module, node, name_of(index, lowered_module_of(holder_module, node)))
    for module in graph_module.modules():  # the top graph and its control-flow submodules
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if node.op == "call_function":
                    _plain_op(node)
            module.recompile()
    return ExportedProgram(
        root=graph_module,
        graph=graph,
        graph_signature=program.graph_signature,
        state_dict=program.state_dict,
        range_constraints=program.range_constraints,
        module_call_graph=program.module_call_graph,
        constants=program.constants,
    )


def _plain_op(node: torch.fx.Node) -> None:
    """An edge operator as the ATen one it stands for; a scratch buffer as zeros."""
    if node.target is _alloc():
        _replace_alloc(node)
    else:
        node.target = aten_overload(node.target)


def _stand_in(graph_module: torch.fx.GraphModule, node: torch.fx.Node, name: str) -> None:
    """One delegate call as `hil::tosa_delegate(name, outputs, inputs)`; its lowered module,
    left without users, leaves the graph module."""
    holder: Any = node.args[0]
    outputs = encode_outputs([tensor_spec(v) for v in node.meta["val"]])
    graph = graph_module.graph
    with graph.inserting_before(node):
        call = graph.call_function(OP, (name, outputs, list(node.args[1:])))
    call.meta = dict(node.meta)
    node.replace_all_uses_with(call)
    graph.erase_node(node)
    if not holder.users:
        graph.erase_node(holder)
        delattr(graph_module, holder.target)


def _alloc() -> Any:
    from executorch.exir import memory

    return memory.alloc


def _replace_alloc(node: torch.fx.Node) -> None:
    """A scratch buffer (`memory.alloc`, e.g. for CMSIS-NN convolutions) as a plain zeros op."""
    spec: Any = node.args[0]
    if isinstance(spec, list):
        raise DeployError(f"{node.name}: a multi-buffer alloc has no host stand-in")
    shape, dtype = spec
    node.target = torch.ops.aten.zeros.default
    node.args = ([int(d) for d in shape],)
    node.kwargs = {"dtype": dtype}


def namespaces(program: Any) -> list[str]:
    """Operator namespaces the program calls (besides aten and prims)."""
    found = {
        node.target.namespace
        for node in program.graph.nodes
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
    }
    return sorted(found - set(BUILTIN_NAMESPACES))


def save_host_program(program: Any, folder: Path) -> Path:
    """Write the program and the list of operator libraries it needs."""
    used = namespaces(program)
    unknown = [n for n in used if n not in OP_LIBRARIES]
    if unknown:
        raise ExportError(
            f"the host program calls operators of {', '.join(unknown)}, which hil cannot load",
            fix="add the namespace and the module registering it to OP_LIBRARIES",
        )
    path = folder / HOST_PROGRAM
    torch.export.save(program, path)
    # from the saved program, so the fast copy is what loading the .pt2 would give
    module_sha256 = write_host_module(torch.export.load(path), folder)
    (folder / HOST_PROGRAM_META).write_text(
        json.dumps({"namespaces": used, "module_sha256": module_sha256})
    )
    return path


def load_host_program(folder: Path) -> Any:
    """The saved program as a callable module; DeployError when it is missing or unreadable."""
    path = folder / HOST_PROGRAM
    try:
        meta = json.loads((folder / HOST_PROGRAM_META).read_text())
        used = meta["namespaces"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DeployError(
            f"{folder} has no readable {HOST_PROGRAM_META}: the artifact was not made for a "
            f"reference target ({e})",
            fix="delete the cache entry (hil cache --clear) so the recipe writes it again",
        ) from e
    for namespace in used:
        importlib.import_module(OP_LIBRARIES[namespace])
    if meta.get("module_sha256"):
        module = read_host_module(folder, meta["module_sha256"])
        if module is not None:
            return module
    speedups.install(["schema-hints"])
    try:
        return torch.export.load(path).module()
    except Exception as e:
        raise DeployError(
            f"cannot load {path}: {type(e).__name__}: {e}",
            fix="delete the cache entry so the recipe writes it again",
        ) from e
