"""The host program's runnable module, pickled beside host_program.pt2 so a deploy loads it fast.

A reference target runs the host program on every check, warm runs included, and loading it
from the .pt2 (`torch.export.load(...).module()`: deserialize the schema, rebuild the graph,
unlift the state) took 11-14 ms of a warm u85-ref check's ~75 (2026-12). A GraphModule
pickles as its generated Python code and attributes and unpickles by tracing that code again:
about a third of the time. So the recipe also writes the unlifted module that way, once, when
it exports, from the .pt2 it has just saved.

What is pickled is a plain GraphModule over the unlifted graph: `torch.export`'s stateful
wrapper and its input-shape hook do not pickle (local lambdas), and hil never needs the hook,
since an artifact's key includes its inputs' shapes. The module is written only when, loaded
back, it calls the same operators with the same arguments in the same order as the one it was
made from; otherwise, and when the file is missing, altered or unreadable, the .pt2 is loaded
(it stays the program of record). The file's sha256 is kept in host_program.json, so a
damaged copy is never run. Unpickling runs code from the cache folder as loading the .pt2
already does (torch.export.load unpickles its pickled weights and objects).
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

HOST_MODULE = "host_program.module.pkl"


def write_host_module(program: Any, folder: Path) -> str | None:
    """Pickle the program's unlifted module into `folder`; its sha256, or None when it does
    not load back as the same calls (then nothing is written and deploys load the .pt2)."""
    unlifted = program.module()
    try:
        blob = pickle.dumps(torch.fx.GraphModule(unlifted, unlifted.graph))
        again = pickle.loads(blob)
    except Exception:  # an attribute that does not pickle: this program loads from the .pt2
        return None
    if calls(again) != calls(unlifted):
        return None
    (folder / HOST_MODULE).write_bytes(blob)
    return hashlib.sha256(blob).hexdigest()


def read_host_module(folder: Path, sha256: str) -> Any | None:
    """The pickled module when the file is there and is the one written; None otherwise."""
    try:
        blob = (folder / HOST_MODULE).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(blob).hexdigest() != sha256:
        return None
    try:
        return pickle.loads(blob)
    except Exception:  # written by another torch: the .pt2 still loads
        return None


def calls(module: torch.fx.GraphModule) -> list[tuple[Any, ...]]:
    """The graph's operations in order, each argument naming the operation it takes by
    position, or the attribute it reads by name (tracing again renames nodes and reads an
    attribute where it is first used); the outputs as the flat list of what is returned."""
    named: dict[torch.fx.Node, tuple[str, Any]] = {}
    found: list[tuple[Any, ...]] = []

    def name_of(arg: torch.fx.Node) -> tuple[str, Any]:
        return named[arg]

    for node in module.graph.nodes:
        if node.op == "get_attr":
            named[node] = ("attribute", node.target)
            continue
        named[node] = ("operation", len(found))
        if node.op == "output":
            leaves = pytree.tree_leaves(torch.fx.node.map_arg(node.args, name_of))
            found.append(("output", *leaves))
        elif node.op == "placeholder":
            found.append(("placeholder",))
        else:
            args = torch.fx.node.map_arg(node.args, name_of)
            kwargs = torch.fx.node.map_arg(node.kwargs, name_of)
            found.append((node.op, str(node.target), repr(args), repr(kwargs)))
    return found
