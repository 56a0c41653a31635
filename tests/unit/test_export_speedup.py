"""The export speed-ups change how often torch does work, never what it finds or registers."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch._export import utils

from hil.recipes import export_speedup


@pytest.fixture(scope="module")
def installed() -> Any:
    assert export_speedup.install(), f"torch {torch.__version__} is not the pinned one"
    return utils._collect_all_valid_cia_ops


def test_every_module_that_collects_uses_the_one_scan_collector(installed: Any) -> None:
    from torch.export import decomp_utils, exported_program

    assert decomp_utils._collect_all_valid_cia_ops is installed
    assert exported_program._collect_all_valid_cia_ops is installed


def test_the_collected_ops_are_torchs_own(installed: Any) -> None:
    assert installed() == installed.__wrapped__()


def test_the_registry_is_scanned_once_per_collection(
    installed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[str] = []
    query = torch._C._dispatch_get_registrations_for_dispatch_key

    def counted(key: str) -> Any:
        scans.append(key)
        return query(key)

    monkeypatch.setattr(torch._C, "_dispatch_get_registrations_for_dispatch_key", counted)
    installed()
    assert scans.count("CompositeImplicitAutograd") == 1
    installed.__wrapped__()  # torch's own: once per namespace
    assert scans.count("CompositeImplicitAutograd") > 10


def test_an_op_registered_between_collections_is_found(installed: Any) -> None:
    installed()
    library = torch.library.Library("hil_speedup_test", "DEF")
    try:
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CompositeImplicitAutograd")
        assert torch.ops.hil_speedup_test.twice.default in installed()
    finally:
        library._destroy()


def test_py_impl_registers_as_torchs_own_and_is_made_once_per_operator_and_key(
    installed: Any,
) -> None:
    from torch._C import DispatchKey
    from torch._ops import OperatorBase

    library = torch.library.Library("hil_speedup_test", "DEF")
    try:
        library.define("thrice(Tensor x) -> Tensor")
        op = torch.ops.hil_speedup_test.thrice.default
        register = op.py_impl(DispatchKey.CompositeImplicitAutograd)
        assert op.py_impl(DispatchKey.CompositeImplicitAutograd) is register
        assert op.py_impl(DispatchKey.Meta) is not register  # another key, another function

        def kernel(x: torch.Tensor) -> torch.Tensor:
            return x * 3

        assert register(kernel) is kernel
        assert op.py_kernels[DispatchKey.CompositeImplicitAutograd] is kernel
        with pytest.raises(RuntimeError, match="Trying to override a python impl"):
            register(kernel)  # torch's own check still runs, on the same function
        own = OperatorBase.py_impl.__wrapped__  # type: ignore[attr-defined]
        del op.py_kernels[DispatchKey.CompositeImplicitAutograd]
        own(op, DispatchKey.CompositeImplicitAutograd)(kernel)
        assert op.py_kernels[DispatchKey.CompositeImplicitAutograd] is kernel
    finally:
        library._destroy()


def test_another_torch_is_left_as_shipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._ops import OperatorBase

    monkeypatch.setattr(export_speedup, "_installed", False)
    monkeypatch.setattr(torch, "__version__", "2.14.0")
    before = utils._materialize_cpp_cia_ops
    py_impl = OperatorBase.py_impl
    assert export_speedup.install() is False
    assert utils._materialize_cpp_cia_ops is before
    assert OperatorBase.py_impl is py_impl
