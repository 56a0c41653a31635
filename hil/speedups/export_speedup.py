"""Costs torch 2.13 and ExecuTorch 1.5 pay on every export that change nothing they compute.

Every `run_decompositions` (ExecuTorch's lowering calls it three times per program):

1. collects the CompositeImplicitAutograd ops of every `torch.ops` namespace. torch's collector
   asks the C++ dispatcher for *all* such ops and materializes them in `torch.ops` once per
   namespace, although the answer does not depend on the namespace and nothing registers an op
   while the collector runs. That repeated scan was about a sixth of an Ethos-U export's time.
   Within one collection on one thread, the registry is now scanned on the first namespace
   only; a collection after a new op is registered scans afresh.
2. overrides and restores each of those ~1000 ops' Python kernels through `py_impl(key)`,
   about 6000 calls a pass. Each call builds the nested registration function anew, and with
   it the typing annotations it carries (`Callable[_P, _T]`, evaluated at every call): 18 us a
   call, a fifth of a cold export's time (cProfile of the host and u85-ref operator suites,
   2026-12: 65 s of 332 s). The function `py_impl(key)` returns depends only on the operator
   and the key, so it is now made once per (operator, key) and handed out again.
3. even so, those registrations and a fresh closure per key were still a fifth of a cold
   export (hil's operator bench, 2026-12: 29 s of 144 s); the override itself is now done by
   hil.speedups.cia_override, straight into each operator's table.

4. asks of every one of those ops, each time, whether it may be preserved: its tags, whether
   it is a metadata function, its schema's aliasing and mutation (fixed for an operator) and
   whether the dispatcher has a kernel for it (which a registration can change). py-spy put
   those answers at 4 % of a cold run of ExecuTorch's mean tests (2026-12). The fixed part is
   now asked once per operator; the kernel is looked up every time, as before.

Three more, each with its own check that it applies, come with it: node provenance shared
instead of deep-copied per pass (hil.speedups.provenance_sharing), one placeholder
interpreter for every ExecuTorch pass (hil.speedups.pass_placeholder) and fx's generated code
compiled once per distinct source (hil.speedups.fx_compile_cache).

The results are the ones torch computes (tests/unit/test_export_speedup.py compares them;
tests/integration/test_pristine_export.py, every program of a recipe byte-identical with and
without). Each part installs only on the code it was written against, checked by its digest,
and none at all in a pristine run (hil.speedups.switch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch._ops import OperatorBase

from hil.speedups import cia_override
from hil.speedups.patch_once import Part, Patch

_state = threading.local()
OVERRIDE_PARTS = (  # what hil.speedups.cia_override replaces and reads in torch.export
    "_override_composite_implicit_decomp",
    "_AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE",
    "_BACKEND_KEYS_TO_OVERRIDE",
)


def _utils() -> Any:
    from torch._export import utils

    return utils


def _has(module: Any, *names: str) -> bool:
    return all(hasattr(module, name) for name in names)


def _collect_once() -> None:
    from torch.export import decomp_utils, exported_program

    utils = _utils()
    utils._materialize_cpp_cia_ops = _once_per_collection(utils._materialize_cpp_cia_ops)
    collect = _marking_a_collection(utils._collect_all_valid_cia_ops)
    for module in (utils, decomp_utils, exported_program):  # each holds its own reference
        if getattr(module, "_collect_all_valid_cia_ops", None) is not None:
            module._collect_all_valid_cia_ops = collect  # type: ignore[union-attr]


def _preserve_check_once() -> None:
    utils = _utils()
    utils._check_valid_to_preserve = _fixed_part_asked_once(utils._check_valid_to_preserve)


def _py_impl_once() -> None:
    OperatorBase.py_impl = _made_once_per_key(OperatorBase.py_impl)  # type: ignore[method-assign,assignment]


def _override_cia() -> None:
    from torch.export import exported_program

    override = cia_override.override_composite_implicit_decomp
    override.__wrapped__ = exported_program._override_composite_implicit_decomp  # type: ignore[attr-defined]
    exported_program._override_composite_implicit_decomp = override


def _exported_program() -> Any:
    from torch.export import exported_program

    return exported_program


# Each part with the digest of the torch 2.13.0 code it replaces (hil.speedups.switch).
PARTS = (
    Part(
        "cia-collection-once",
        lambda: (_utils()._materialize_cpp_cia_ops, _utils()._collect_all_valid_cia_ops),
        "5a6ded3d7e7332e0b167551f2b9dc3cb087198b9dff8cbef09325bda4c3a549f",
        Patch(
            lambda: _has(_utils(), "_materialize_cpp_cia_ops", "_collect_all_valid_cia_ops"),
            _collect_once,
        ),
    ),
    Part(
        "preserve-check-once",
        lambda: (_utils()._check_valid_to_preserve,),
        "51267258f0e39cf8a4c1471e64c03f96434a56311e64f6bb4f1281f265eddec8",
        Patch(lambda: _has(_utils(), "_check_valid_to_preserve"), _preserve_check_once),
    ),
    Part(
        "py-impl-once",
        lambda: (OperatorBase.py_impl,),
        "3420ee9ca268054ee91a1de91b6a1664f34447e0ef3d55c3145808467cface5f",
        Patch(lambda: callable(getattr(OperatorBase, "py_impl", None)), _py_impl_once),
    ),
    Part(
        "cia-override",
        lambda: (_exported_program()._override_composite_implicit_decomp,),
        "be7e3b6fb16057aa220f1c751b27b6acadf9ed1e7380aa9d670b9c09d80ad182",
        Patch(lambda: _has(_exported_program(), *OVERRIDE_PARTS), _override_cia),
    ),
)


def _marking_a_collection(collect: Callable[[], Any]) -> Callable[[], Any]:
    def collect_with_one_scan() -> Any:
        if getattr(_state, "collecting", False):
            return collect()  # nested: the outer collection's scan stands
        _state.collecting, _state.scanned = True, False
        try:
            return collect()
        finally:
            _state.collecting = False

    collect_with_one_scan.__wrapped__ = collect  # type: ignore[attr-defined]
    return collect_with_one_scan


def _once_per_collection(materialize: Callable[[], None]) -> Callable[[], None]:
    def materialize_unless_done() -> None:
        if getattr(_state, "collecting", False):
            if _state.scanned:
                return
            _state.scanned = True
        materialize()

    materialize_unless_done.__wrapped__ = materialize  # type: ignore[attr-defined]
    return materialize_unless_done


def _fixed_part_asked_once(valid: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """torch's `_check_valid_to_preserve`, whose answer changes only with the dispatcher's
    kernel for the operator (its last question, asked every time here): with no kernel the
    answer is no; with one, torch's answer of the last time there was one stands."""
    with_kernel: dict[Any, bool] = {}  # operator -> torch's answer, asked with a kernel there

    def valid_asking_the_kernel(op: Any) -> bool:
        name = getattr(op, "name", None)
        if not callable(name) or not hasattr(op, "_schema"):
            return valid(op)
        if not torch._C._dispatch_has_kernel(name()):
            return False
        try:
            return with_kernel[op]
        except KeyError:
            answer = with_kernel[op] = valid(op)
            return answer
        except TypeError:  # an operator that cannot be hashed: asked each time, as before
            return valid(op)

    valid_asking_the_kernel.__wrapped__ = valid  # type: ignore[attr-defined]
    return valid_asking_the_kernel


def _made_once_per_key(py_impl: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """torch's `py_impl(key)`, whose result (a registration function of the operator and the
    key alone) is made on the first call for each (operator, key) and handed out after. The
    table holds the operators it has seen, as torch's own registries do."""
    made: dict[tuple[Any, Any], Any] = {}

    def py_impl_made_once(self: Any, k: Any) -> Any:
        try:
            return made[(self, k)]
        except KeyError:
            register = made[(self, k)] = py_impl(self, k)
            return register
        except TypeError:  # a key torch takes that cannot be hashed: made each time, as before
            return py_impl(self, k)

    py_impl_made_once.__wrapped__ = py_impl  # type: ignore[attr-defined]
    return py_impl_made_once
