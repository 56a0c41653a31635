"""The kernels an SDK registers: chosen from the programs, the registry counted for every
library (the kernel lists of the installed executorch package are ExecuTorch's real ones)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.sdk_trees import CORTEX_M, PRIM, QUANTIZED, make_trees

from hil.errors import UsageError
from hil.sdk import kernels


def wheel() -> Path:
    import executorch

    return Path(next(iter(executorch.__path__)))


def test_the_catalogue_reads_each_library_of_a_tree(tmp_path: Path) -> None:
    cat = kernels.catalogue(make_trees(tmp_path).executorch)
    assert set(cat.libraries["portable"]) == {
        "aten::add.out",
        "aten::convolution.out",
        "aten::relu.out",
        "aten::mean.out",
        "aten::view_copy.out",
        "dim_order_ops::_to_dim_order_copy.out",
    }
    assert set(cat.libraries["quantized"]) == set(QUANTIZED)
    assert set(cat.libraries["cortex_m"]) == set(CORTEX_M)
    assert set(cat.libraries["prim"]) == set(PRIM)


def test_selection_takes_the_portable_kernels_used_and_every_kernel_of_the_rest(
    tmp_path: Path,
) -> None:
    cat = kernels.catalogue(make_trees(tmp_path).executorch)
    chosen = kernels.select(
        cat, ["aten::add.out", "aten::relu.out", QUANTIZED[0], CORTEX_M[0], "aten::hardswish.out"]
    )
    assert chosen.portable == ("aten::add.out", "aten::relu.out")
    assert chosen.unavailable == ("aten::hardswish.out",)
    assert set(chosen.registered) == {
        "aten::add.out",
        "aten::relu.out",
        *QUANTIZED,
        *CORTEX_M,
        *PRIM,
    }
    # one registry entry per kernel: 2 portable + 2 quantized + 2 cortex_m + 2 prim
    assert chosen.max_kernel_num == 8


def test_executorchs_own_kernel_lists_are_read() -> None:
    """The installed package ships the yaml files the SDK build reads from a checkout."""
    root = wheel()
    portable = kernels._kernels(root / kernels.PORTABLE_YAML)
    quantized = kernels._kernels(root / kernels.QUANTIZED_YAML)
    cortex_m = kernels._kernels(root / kernels.CORTEX_M_YAML)
    assert (
        "aten::convolution.out" in portable and "dim_order_ops::_to_dim_order_copy.out" in portable
    )
    assert len(portable) > 150
    assert all(op.startswith("quantized_decomposed::") for op in quantized) and quantized
    assert "cortex_m::quantized_conv2d.out" in cortex_m


def test_a_kernel_list_round_trips_and_decides_missing_kernel(tmp_path: Path) -> None:
    cat = kernels.catalogue(make_trees(tmp_path).executorch)
    path = tmp_path / "kernels.json"
    rebuild = "hil sdk build --executorch /src/et --board qemu-m55"
    kernels.write_kernel_list(
        path, {"portable": ["aten::add.out"], "prim": list(PRIM)}, 3, cat, rebuild
    )
    listed = kernels.read_kernel_list(path)
    assert listed is not None and listed.operators == {"aten::add.out", *PRIM}
    assert listed.missing_for("qemu-m55", tmp_path / "m.pte", ["aten::add.out", PRIM[0]]) is None
    error = listed.missing_for(
        "qemu-m55", tmp_path / "m.pte", ["aten::add.out", "aten::relu.out", "aten::sin.out"]
    )
    assert error is not None and error.operator == "aten::relu.out"
    assert error.message.startswith(
        "qemu-m55: the runner's ExecuTorch has no kernel for "
        "aten::relu.out, aten::sin.out (aten::relu.out not "
        "selected when the SDK was built; aten::sin.out in no "
        "kernel library of its ExecuTorch"
    )
    assert (
        error.fix == f"rebuild the SDK with this program's kernels: {rebuild} --ops-from "
        f"suites {tmp_path / 'm.pte'}"
    )
    only_absent = listed.missing_for("qemu-m55", tmp_path / "m.pte", ["aten::sin.out"])
    assert only_absent is not None and "export the model without" in (only_absent.fix or "")
    path.write_text("{not json")
    assert kernels.read_kernel_list(path) is None


def test_a_file_that_is_not_a_program_is_a_usage_error(tmp_path: Path) -> None:
    bogus = tmp_path / "model.pte"
    bogus.write_bytes(b"\0" * 64)
    with pytest.raises(UsageError, match="is not an ExecuTorch program"):
        kernels.program_operators(bogus)


def test_programs_needing_no_portable_kernel_still_get_a_selective_build(tmp_path: Path) -> None:
    """ExecuTorch reads an empty EXECUTORCH_SELECT_OPS_LIST as "all 200 portable kernels"."""
    cat = kernels.catalogue(make_trees(tmp_path).executorch)
    chosen = kernels.select(cat, [QUANTIZED[0], QUANTIZED[1]])
    assert chosen.portable == (kernels.FLOOR,)
