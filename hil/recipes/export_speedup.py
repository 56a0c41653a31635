"""One scan of torch's C++ operator registry per decomposition pass, where torch 2.13 does ~40.

Every `run_decompositions` (ExecuTorch's lowering calls it three times per program) collects
the CompositeImplicitAutograd ops of every `torch.ops` namespace. torch's collector asks the
C++ dispatcher for *all* such ops and materializes them in `torch.ops` once per namespace,
although the answer does not depend on the namespace and nothing registers an op while the
collector runs. That repeated scan was about a sixth of an Ethos-U export's time.

`install()` wraps the collector so that, within one collection on one thread, the registry is
scanned on the first namespace only. The collector returns what it returned before
(tests/unit/test_export_speedup.py compares the sets; every .pte of the suites came out
byte-identical with and without it), and a collection after a new op is registered scans
afresh. It applies only to the torch it was measured on (the version hil pins); any other
version is left exactly as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

PATCHED_TORCH = "2.13."
_state = threading.local()
_install_lock = threading.Lock()
_installed = False


def applies() -> bool:
    """Whether this torch is the one the speed-up was written against."""
    from torch._export import utils

    return torch.__version__.startswith(PATCHED_TORCH) and all(
        hasattr(utils, name) for name in ("_materialize_cpp_cia_ops", "_collect_all_valid_cia_ops")
    )


def install() -> bool:
    """Install the speed-up once per process; False when this torch is not the pinned one."""
    global _installed
    with _install_lock:
        if _installed:
            return True
        if not applies():
            return False
        from torch._export import utils
        from torch.export import decomp_utils, exported_program

        utils._materialize_cpp_cia_ops = _once_per_collection(utils._materialize_cpp_cia_ops)
        collect = _marking_a_collection(utils._collect_all_valid_cia_ops)
        for module in (utils, decomp_utils, exported_program):  # each holds its own reference
            if getattr(module, "_collect_all_valid_cia_ops", None) is not None:
                module._collect_all_valid_cia_ops = collect  # type: ignore[attr-defined]
        _installed = True
        return True


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
