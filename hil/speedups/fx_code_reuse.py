"""torch.fx's generated source, made again only when the graph changed since it was last made.

`GraphModule.recompile` writes the module's Python source from its graph, and recompiles every
submodule's graph with it. ExecuTorch's Arm lowering recompiles after each of its passes, so
the branches of a `torch.cond` (and every other submodule) have their source written once per
pass, though the pass left them as they were: in a profile of `test_cond` (cold, one
process), fx's `_gen_python_code` ran 41,674 times and took 19 % of the run.

The source of a plain call (recompile's: no option, none of fx's `FX_GRAPH_SHOW_*` switches;
those read the nodes' metadata, and are always made as shipped) depends on the graph's nodes
in order (each node's operation, name, target, arguments and type annotation, and whether it
is a wrapped function), the graph's code generator (its attributes: the function name, the
pytree layout of inputs and outputs, a body transformer), the root module's name and fx's
registered builtins. All of those are kept with the source the graph last made, the node's
arguments, target and type by identity (a node's arguments are a new tuple whenever they
change); where any differs, the source is made as shipped. Sources are handed out as fresh
copies, so a caller that adds to the globals changes nothing kept.
tests/unit/test_fx_code_reuse.py checks that after an edit of each kind the source is torch's
own, and that a source reading node metadata is made as shipped; that programs stay
byte-identical, tests/integration/test_pristine_export.py checks for a program per recipe on
every `make test`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from torch.fx import graph as fx_graph

from hil.speedups.patch_once import Part, Patch

SWITCHES = ("FX_GRAPH_SHOW_STRIDE", "FX_GRAPH_SHOW_DEVICE", "FX_GRAPH_SHOW_META")
KEPT = "_hil_made_source"  # the graph's attribute holding its last source and what made it


@dataclass(frozen=True)
class Made:
    """A graph's last generated source and everything it was made from."""

    nodes: list[tuple[Any, ...]]
    generator: tuple[Any, ...]
    call: tuple[Any, ...]
    code: Any  # torch.fx.graph.PythonCode


def _nodes(graph: Any) -> list[tuple[Any, ...]]:
    return [
        (n, n._args, n._kwargs, n.target, n.type, n.op, n.name, n.meta.get("is_wrapped", False))
        for n in graph.nodes
    ]


def _same_nodes(kept: list[tuple[Any, ...]], now: list[tuple[Any, ...]]) -> bool:
    if len(kept) != len(now):
        return False
    for old, new in zip(kept, now, strict=True):
        for i in range(5):  # the node, its arguments, target and type: the same objects
            if old[i] is not new[i]:
                return False
        if old[5] != new[5] or old[6] != new[6] or old[7] != new[7]:
            return False
    return True


def _generator(graph: Any) -> tuple[Any, ...]:
    codegen = graph._codegen
    return (codegen, type(codegen), *sorted(vars(codegen).items(), key=lambda kv: kv[0]))


def _same_objects(kept: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    return len(kept) == len(now) and all(
        a is b or (isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] and a[1] is b[1])
        for a, b in zip(kept, now, strict=True)
    )


def _copy(code: Any) -> Any:
    lines = code._lineno_map
    return fx_graph.PythonCode(
        code.src, dict(code.globals), None if lines is None else dict(lines), code._prologue_start
    )


def _reusing(python_code: Any) -> Any:
    def python_code_made_once(self: Any, root_module: str, **options: Any) -> Any:
        if any(options.values()) or any(os.environ.get(s, "0") == "1" for s in SWITCHES):
            return python_code(self, root_module, **options)  # reads node.meta: as shipped
        call = (root_module, tuple(fx_graph._custom_builtins))
        nodes, generator = _nodes(self), _generator(self)
        kept: Made | None = getattr(self, KEPT, None)
        if (
            kept is not None
            and kept.call == call
            and _same_objects(kept.generator, generator)
            and _same_nodes(kept.nodes, nodes)
        ):
            return _copy(kept.code)
        code = python_code(self, root_module)
        setattr(self, KEPT, Made(nodes, generator, call, _copy(code)))
        return code

    python_code_made_once.__wrapped__ = python_code  # type: ignore[attr-defined]
    return python_code_made_once


def _shipped() -> tuple[Any, ...]:
    """The code whose inputs the fingerprint lists: a change there leaves the part out."""
    return (
        fx_graph.Graph.python_code,
        fx_graph.Graph._python_code,
        fx_graph.CodeGen._gen_python_code,
        fx_graph.CodeGen.gen_fn_def,
        fx_graph._PyTreeCodeGen.gen_fn_def,
        fx_graph.PythonCode.__init__,
    )


def applies() -> bool:
    return hasattr(fx_graph, "_custom_builtins") and hasattr(fx_graph.Graph, "python_code")


def _install() -> None:
    fx_graph.Graph.python_code = _reusing(fx_graph.Graph.python_code)  # type: ignore[method-assign]


PATCH = Patch(applies, _install)
PART = Part(
    "fx-code-reuse",
    _shipped,
    "7079fedb74ca8a98362740a21f2706df29c7c0131f6269d9b38ba0e585df80c4",
    PATCH,
)
