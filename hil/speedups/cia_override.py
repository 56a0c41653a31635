"""torch 2.13's override of CompositeImplicitAutograd kernels during a decomposition, made
cheaper and otherwise the same.

Every `run_decompositions` enters `_override_composite_implicit_decomp` (twice per pass): for
each of ~1000 preservable CIA operators it saves the operator's Python kernels, registers an
"autograd not implemented" kernel on each absent Autograd* key, the decomposition on the CIA
key, a fake-tensor rule where none exists, and the original CIA kernel on each absent backend
key; on exit it restores them. torch does each registration through `py_impl(key)(fn)` and
makes a fresh "not implemented" closure per key: about 6,000 registrations and 3,300 closures a
pass, which cProfile put at a fifth of a cold export (hil's operator bench on u55-ref, u85-ref
and host, 2026-12: 29 s of 144 s in one process, 73 ms a pass).

Here each operator's kernels are written straight into its table, after the same checks
`py_impl` makes (no Python key, nothing overwritten), with one dispatch-cache clear per
operator instead of one per key, and one "not implemented" kernel per operator shared by its
Autograd* keys (torch's closures differ only in identity); which keys a table lacks is found
with the hashes a set of them keeps (5.3 -> 2.2 ms a pass over torch's 557 operators, 2026-12).
What is registered, in which order relative to the CIA kernel lookup, and what is restored are
torch's (tests/unit/test_export_speedup.py compares the tables and the decomposed graphs).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

_CIA = torch._C.DispatchKey.CompositeImplicitAutograd
_not_implemented: dict[Any, Callable[..., Any]] = {}  # operator -> its shared kernel


def _force_dispatch_to_orig_cia_callable(
    fake_tensor_mode: Any, op: Any, *args: Any, **kwargs: Any
) -> Any:
    """The fake-tensor rule torch registers: run the original CIA kernel under the fake mode,
    so an operator the decomposition preserves is not traced on the meta device."""
    original = kwargs.pop("original_callable")
    with fake_tensor_mode:
        return original(*args, **kwargs)


def _not_implemented_for(op: Any, make: Callable[..., Callable[..., Any]]) -> Callable[..., Any]:
    kernel = _not_implemented.get(op)
    if kernel is None:
        kernel = _not_implemented[op] = make(op, deferred_error=True)
    return kernel


def _refusing_the_python_key(keys: Any) -> frozenset[Any]:
    """The keys, after the refusal `py_impl` makes of the Python key (torch's lists never hold
    it; checked once, here, not on every registration). As a set: which of them a table lacks
    is then found, and written, with the hashes the set keeps (a DispatchKey's own hash is a
    call into C++, ten per operator per pass)."""
    found = frozenset(keys)
    if torch._C.DispatchKey.Python in found:
        raise AssertionError("Please register a mode for the DispatchKey.Python key instead.")
    return found


@contextlib.contextmanager
def override_composite_implicit_decomp(
    cia_ops_to_callable: Mapping[Any, Callable[..., Any]],
) -> Iterator[None]:
    from torch._export.utils import _get_decomp_for_cia
    from torch._higher_order_ops.utils import autograd_not_implemented
    from torch._subclasses.fake_impls import (
        _deregister_op_impl,
        _is_op_registered_to_fake_rule,
        register_op_impl,
    )
    from torch.export import exported_program as ep

    alias_keys = _refusing_the_python_key(ep._AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE)
    backend_keys = _refusing_the_python_key(ep._BACKEND_KEYS_TO_OVERRIDE)
    saved: dict[Any, dict[Any, Any]] = {}
    try:
        for op, decomposition in cia_ops_to_callable.items():
            kernels = op.py_kernels  # written only where a key is absent: py_impl's refusal
            saved[op] = kernels.copy()
            missing = alias_keys.difference(kernels)
            if missing:
                kernels.update(
                    dict.fromkeys(missing, _not_implemented_for(op, autograd_not_implemented))
                )
            original = _get_decomp_for_cia(op)  # before the CIA kernel is replaced, as torch
            kernels.pop(_CIA, None)
            kernels[_CIA] = decomposition
            if not _is_op_registered_to_fake_rule(op):
                register_op_impl(op)(
                    functools.partial(
                        _force_dispatch_to_orig_cia_callable, original_callable=original
                    )
                )
            kernels.update(dict.fromkeys(backend_keys.difference(kernels), original))
            op._dispatch_cache.clear()
        yield
    finally:
        for op, kernels in saved.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
            _deregister_op_impl(op)
