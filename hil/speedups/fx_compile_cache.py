"""torch.fx's generated code, compiled once per distinct source instead of at every recompile.

Every `GraphModule.recompile` (each GraphModule made, and each pass that touched a graph)
generates the module's Python source and compiles it. Over an Ethos-U lowering most of those
sources are ones compiled already: a pass that changed nothing recompiles the same graph.
py-spy put `compile` at 4 % of a cold run of ExecuTorch's mean tests on u55-ref, u85-ref and
host (2026-12). The code object is now kept per source text and handed out under the file
name torch gives this compile (its own linecache key, registered as before), so tracebacks
and source lookups read as they did; Python's `compile` of the same text, file name and flags
makes the same code.
"""

from __future__ import annotations

import types
from collections import OrderedDict
from typing import Any

from torch.fx import graph_module

from hil.speedups.patch_once import Part, Patch

KEPT = 256  # distinct sources; a lowering's passes revisit far fewer
_compiled: OrderedDict[str, types.CodeType] = OrderedDict()


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    """`code` and the functions it defines, as compiled under `filename`."""
    consts = tuple(
        _renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def _code_for(src: str, filename: str) -> types.CodeType:
    code = _compiled.get(src)
    if code is None:
        code = compile(src, filename, "exec", dont_inherit=True)
        _compiled[src] = code
        if len(_compiled) > KEPT:
            _compiled.popitem(last=False)
        return code
    _compiled.move_to_end(src)
    return code if code.co_filename == filename else _renamed(code, filename)


def _exec_compiled_once(
    src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None
) -> None:
    key = graph_module._loader.cache(src, globals, co_fields)
    exec(_code_for(src, key), globals)


def applies() -> bool:
    """Whether torch.fx compiles generated code the way this was written against."""
    shipped = getattr(graph_module, "_exec_with_source", None)
    names = getattr(getattr(shipped, "__code__", None), "co_names", ())
    return hasattr(graph_module, "_loader") and {"_loader", "compile", "exec"} <= set(names)


def _compile_once() -> None:
    _exec_compiled_once.__wrapped__ = graph_module._exec_with_source  # type: ignore[attr-defined]
    graph_module._exec_with_source = _exec_compiled_once


PATCH = Patch(applies, _compile_once)
install = PATCH.install  # each distinct source compiled once from now on; False where fx differs
PART = Part(
    "fx-compile-cache",
    lambda: (graph_module._exec_with_source,),
    "bf2f72aae032ec3ca01baef82a605113d1313c4f054c47253a26df49ac4d9d02",
    PATCH,
)
