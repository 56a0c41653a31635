"""The host program: a lowered edge program made runnable on the host, and saved beside the .pte.

Reference targets must execute at run time, yet a warm run must export nothing. So a recipe saves,
with torch.export.save, the program exactly as lowering left it, with two substitutions that make
it loadable and runnable without ExecuTorch's runtime:

- each NPU delegate call becomes `hil::tosa_delegate(name, outputs, inputs)` (hil.tosa_delegate),
  which the reference target answers with the delegate's TOSA graph;
- each edge-dialect operator becomes the aten (or cortex_m, quantized_decomposed) operator it
  wraps, so PyTorch's kernels (or the Cortex-M Python reference kernels) run the CPU part;
- a scratch-buffer allocation (`executorch.exir.memory.alloc`) becomes `aten.zeros`.

Loading needs the operator libraries registered: `load_host_program` imports them first.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from hil.errors import DeployError
from hil.macs import aten_overload
from hil.tosa_delegate import OP, TensorSpec, encode_outputs

HOST_PROGRAM = "host_program.pt2"

# Operator libraries a host program may use, and the modules that register them.
OP_LIBRARIES = (
    "torch.ao.quantization.fx._decomposed",  # quantized_decomposed.*
    "executorch.exir.passes.dim_order_ops_registry",  # dim_order_ops.*
    "hil.tosa_delegate",  # hil::tosa_delegate
)


def is_delegate_call(node: torch.fx.Node) -> bool:
    delegate = torch.ops.higher_order.executorch_call_delegate
    return node.op == "call_function" and node.target is delegate


def tensor_spec(value: Any) -> TensorSpec:
    return TensorSpec(
        tuple(int(d) for d in value.shape),
        str(value.dtype).removeprefix("torch."),
        tuple(int(d) for d in value.dim_order()),
    )


def host_program(edge_program: Any, name_of: Callable[[int, Any], str]) -> Any:
    """A plain ExportedProgram from a lowered edge program (the edge program is not changed).

    `name_of(index, lowered_module)` names each delegate, in execution order.
    """
    from torch.export import ExportedProgram

    program = copy.deepcopy(edge_program)
    graph_module = program.graph_module
    graph = graph_module.graph
    index = 0
    for node in list(graph.nodes):
        if is_delegate_call(node):
            holder = node.args[0]
            lowered = getattr(graph_module, holder.target)
            values = node.meta["val"]
            outputs = encode_outputs([tensor_spec(v) for v in values])
            with graph.inserting_before(node):
                call = graph.call_function(
                    OP, (name_of(index, lowered), outputs, list(node.args[1:]))
                )
            call.meta = dict(node.meta)
            node.replace_all_uses_with(call)
            graph.erase_node(node)
            if not holder.users:
                graph.erase_node(holder)
                delattr(graph_module, holder.target)
            index += 1
        elif node.op == "call_function" and node.target is _alloc():
            _replace_alloc(node)
        elif node.op == "call_function":
            node.target = aten_overload(node.target)
    graph_module.recompile()
    return ExportedProgram(
        root=graph_module,
        graph=graph,
        graph_signature=program.graph_signature,
        state_dict=program.state_dict,
        range_constraints=program.range_constraints,
        module_call_graph=program.module_call_graph,
        constants=program.constants,
    )


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


def save_host_program(program: Any, folder: Path) -> Path:
    path = folder / HOST_PROGRAM
    torch.export.save(program, path)
    return path


def load_host_program(folder: Path, libraries: tuple[str, ...] = OP_LIBRARIES) -> Any:
    """The saved program as a callable module; DeployError when it is missing or unreadable."""
    for module in libraries:
        importlib.import_module(module)
    path = folder / HOST_PROGRAM
    if not path.exists():
        raise DeployError(
            f"{folder} has no {HOST_PROGRAM}: the artifact was not made for a reference target",
            fix="delete the cache entry (hil cache --clear) so the recipe writes it again",
        )
    try:
        return torch.export.load(path).module()
    except Exception as e:
        raise DeployError(
            f"cannot load {path}: {type(e).__name__}: {e}",
            fix="delete the cache entry so the recipe writes it again",
        ) from e
