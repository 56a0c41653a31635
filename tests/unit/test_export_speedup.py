"""The export speed-ups change how often torch does work, never what it finds or registers."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch._export import utils

from hil.speedups import switch as speedups
from hil.speedups.patch_once import code_digest

PARTS = ("cia-collection-once", "preserve-check-once", "py-impl-once", "cia-override")


@pytest.fixture(scope="module")
def installed() -> Any:
    in_place = speedups.install()
    assert set(PARTS) <= set(in_place), f"torch {torch.__version__} is not the one measured"
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


def test_each_part_installs_only_on_the_code_it_was_written_against() -> None:
    """The digest of the shipped code each part replaces, as written against (torch 2.13.0):
    another torch's code, or this torch's with a part in place, is judged by its original."""
    for part in speedups.parts():
        assert code_digest(part.replaced()) == part.digest, part.name
    assert code_digest([lambda: 1]) != code_digest([lambda: 2])


def _kernel_tables(ops: Any) -> dict[Any, dict[Any, str]]:
    """Each operator's Python kernels: key -> what is there (a shared decomposition by
    identity, any other kernel by its kind, since torch makes those afresh each time)."""
    return {
        op: {
            key: f"{type(k).__name__}:{getattr(k, '__qualname__', '')}"
            for key, k in op.py_kernels.items()
        }
        for op in ops
    }


def test_the_cia_override_registers_and_restores_what_torchs_own_does(installed: Any) -> None:
    from torch.export import exported_program

    ours = exported_program._override_composite_implicit_decomp
    torchs = ours.__wrapped__
    table = exported_program._split_decomp_table_to_cia_and_python_decomp(
        torch.export.default_decompositions()
    )[0]
    assert len(table) > 100
    before = _kernel_tables(table)
    seen = []
    for override in (torchs, ours):
        with override(table):
            seen.append(_kernel_tables(table))
            assert all(
                op.py_kernels[torch._C.DispatchKey.CompositeImplicitAutograd] is f
                for op, f in table.items()
            )
        assert _kernel_tables(table) == before
    assert seen[0] == seen[1]


def test_a_decomposition_under_the_cia_override_gives_torchs_graph(installed: Any) -> None:
    from torch.export import exported_program

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.norm = torch.nn.LayerNorm([4, 6, 6])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.nn.functional.gelu(self.norm(self.conv(x)))
            return torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1).softmax(-1)

    program = torch.export.export(Block().eval(), (torch.zeros(1, 3, 8, 8),))
    ours = exported_program._override_composite_implicit_decomp
    decomposed = program.run_decompositions().graph_module.code
    try:
        exported_program._override_composite_implicit_decomp = ours.__wrapped__
        assert program.run_decompositions().graph_module.code == decomposed
    finally:
        exported_program._override_composite_implicit_decomp = ours


def test_the_preservable_check_answers_as_torchs_own_for_every_aten_operator(
    installed: Any,
) -> None:
    check = utils._check_valid_to_preserve
    ops = [getattr(torch.ops.aten, name) for name in torch.ops.aten]
    overloads = [o for packet in ops for o in packet.op_overloads()]
    assert len(overloads) > 1000
    for _ in range(2):  # the first answer and the remembered one
        assert [check(o) for o in overloads] == [check.__wrapped__(o) for o in overloads]


def test_the_preservable_check_follows_the_dispatchers_kernel_each_time(
    installed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    check = utils._check_valid_to_preserve
    op = torch.ops.aten.gelu.default
    has_kernel = torch._C._dispatch_has_kernel
    kernels = {"aten::gelu": False}  # as if its kernel came later, then went again

    def dispatcher(name: str) -> bool:
        return kernels.get(name, has_kernel(name))

    monkeypatch.setattr(torch._C, "_dispatch_has_kernel", dispatcher)
    for there in (False, True, False, True):
        kernels["aten::gelu"] = there
        assert check(op) is there and check.__wrapped__(op) is there
