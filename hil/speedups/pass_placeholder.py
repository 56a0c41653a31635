"""ExecuTorch's export passes, made with one shared placeholder interpreter instead of one each.

Every ExecuTorch pass (`_ExportPassBase`: each of the ~150 Arm passes of an Ethos-U lowering,
made anew for each program) builds, when constructed, an fx Interpreter over a fresh empty
GraphModule, and a GraphModule generates and compiles its Python code when made: ~0.2 ms a
pass, which py-spy put at 5 % of a cold run of ExecuTorch's conv2d tests on u55-ref, u85-ref
and host (2026-12). That interpreter is only a stand-in until the pass runs (`call_submodule`
swaps in its own); it is asked to call a function, a method or to return an output, none of
which reads or changes its state. One stand-in, made once, serves every pass here.

The constructor below sets what ExecuTorch 1.5's sets, with the shared stand-in; `install()`
first checks that ExecuTorch's own constructor still sets exactly those attributes, and
leaves it as shipped otherwise.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from hil.speedups.patch_once import Part, Patch

EXPECTED_ATTRIBUTES = frozenset(
    {"interpreter", "tracer", "fake_tensor_mode", "_initialized", "node_debug_str"}
)


@functools.cache
def _stand_in() -> torch.fx.Interpreter:
    return torch.fx.Interpreter(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph()))


def _init_with_shared_stand_in(self: Any) -> None:
    from torch.fx.graph import CodeGen

    self.interpreter = _stand_in()
    self.tracer = self.ExportTracer(self, CodeGen())
    self.fake_tensor_mode = None
    self._initialized = True
    self.node_debug_str = None


def _made_by(init: Any) -> dict[str, Any]:
    """What a plain ExecuTorch pass holds once `init` has made it."""
    from executorch.exir.pass_base import ExportPass

    made = ExportPass.__new__(ExportPass)
    init(made)
    return dict(vars(made))


def applies() -> bool:
    """Whether ExecuTorch's pass constructor sets what this one does, of the same kinds."""
    try:
        from executorch.exir.pass_base import _ExportPassBase
    except ImportError:
        return False
    theirs = _made_by(_ExportPassBase.__init__)
    if set(theirs) != EXPECTED_ATTRIBUTES:
        return False
    if type(theirs["interpreter"]) is not torch.fx.Interpreter:
        return False
    ours = _made_by(_init_with_shared_stand_in)
    plain = EXPECTED_ATTRIBUTES - {"interpreter", "tracer"}
    return (
        {k: type(v) for k, v in ours.items()} == {k: type(v) for k, v in theirs.items()}
        and all(ours[k] == theirs[k] for k in plain)
        and set(vars(ours["tracer"])) == set(vars(theirs["tracer"]))
    )


def _share_the_stand_in() -> None:
    from executorch.exir.pass_base import _ExportPassBase

    _init_with_shared_stand_in.__wrapped__ = _ExportPassBase.__init__  # type: ignore[attr-defined]
    _ExportPassBase.__init__ = _init_with_shared_stand_in


PATCH = Patch(applies, _share_the_stand_in)
install = PATCH.install  # passes made from now on share the stand-in; False where theirs differs


def _pass_init() -> tuple[Any, ...]:
    from executorch.exir.pass_base import _ExportPassBase

    return (_ExportPassBase.__init__,)


PART = Part(
    "pass-placeholder",
    _pass_init,
    "628402d2fd5adeca823d04e44232275b13eb7ca8f554939a2a3913e639172007",
    PATCH,
)
