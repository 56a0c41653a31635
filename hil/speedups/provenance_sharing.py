"""torch.fx's node provenance, kept as torch keeps it, without copying every ancestor anew.

While a pass replays a graph with node metadata preserved (every ExecuTorch pass does), each
node it visits gets a `NodeSource` whose `from_node` is a deep copy of the node's whole
provenance chain. The chain grows by one level per pass, so over the ~150 passes of an
Ethos-U lowering the copies grow quadratically: py-spy put them at 7 % of a cold run of
ExecuTorch's conv2d tests on u55-ref, u85-ref and host (2026-12).

A `NodeSource` is not changed once made (torch and ExecuTorch only read it, serialize it or
make new ones; torch's transform observer appends to a node's own list, never to a source's),
so the copy is now of the list alone and the sources in it are shared. A lowering's chains
(`to_dict()`) and program come out the same (tests/unit/test_provenance_and_pass_speedups.py).
"""

from __future__ import annotations

import copy
from typing import Any

from torch.fx import traceback as fx_traceback

from hil.speedups.patch_once import Part, Patch


def _copy_sharing_sources(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """`copy.deepcopy`, except that a list of NodeSources is copied as a list of the same
    sources (each immutable once made)."""
    if isinstance(value, list) and all(isinstance(v, fx_traceback.NodeSource) for v in value):
        return list(value)
    return copy.deepcopy(value, memo)


class _CopySharingSources:
    """The `copy` module as torch.fx.traceback sees it: its own, but for `deepcopy`."""

    deepcopy = staticmethod(_copy_sharing_sources)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def applies() -> bool:
    """Whether this torch makes provenance the way this was written against: NodeSource's
    constructor deep-copies the chain through the module's own `copy`."""
    init = getattr(getattr(fx_traceback, "NodeSource", None), "__init__", None)
    names = getattr(getattr(init, "__code__", None), "co_names", ())
    return getattr(fx_traceback, "copy", None) is copy and {"copy", "deepcopy"} <= set(names)


def _share_sources() -> None:
    fx_traceback.copy = _CopySharingSources()  # type: ignore[attr-defined,assignment]


PATCH = Patch(applies, _share_sources)
install = PATCH.install  # share provenance sources from now on; False where torch differs
PART = Part(
    "provenance-sharing",
    lambda: (fx_traceback.NodeSource.__init__,),
    "494c7c373036b741d9bb120ac2473642d990161623d8576c393cc88720fa1c8a",
    PATCH,
)
