"""A device's profile as a record and a line, and a damaged ETDump refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.errors import ExplainError
from hil.explain.profile import profile_of
from hil.runner.driver import DeviceTrace
from hil.verdict.profile import OperatorTime, Profile


def test_a_damaged_etdump_is_an_explain_error_saying_its_size(tmp_path: Path) -> None:
    trace = DeviceTrace(b"not an etdump", b"", 1_000_000_000, 0)
    with pytest.raises(ExplainError, match=r"ETDump \(13 bytes\) cannot be read"):
        profile_of(trace, tmp_path / "model.pte")


def test_a_profile_names_its_slowest_operators_their_share_and_the_layout_work() -> None:
    profile = Profile(
        unit="QEMU instructions",
        runs=3,
        total=1000.0,
        operators=(
            OperatorTime(4, "cortex_m::quantized_conv2d.out", False, 600.0),
            OperatorTime(1, "dim_order_ops::_clone_dim_order.out", True, 300.0),
        ),
    )
    line = profile.describe()
    assert line.startswith("1,000 QEMU instructions an inference (median of 3")
    assert "cortex_m::quantized_conv2d.out [4] 60 %" in line
    assert "dim_order_ops::_clone_dim_order.out [1] (layout) 30 %" in line
    assert line.endswith("layout copies 30 %")
    assert profile.covered == pytest.approx(0.9)
    assert Profile("ns (emulated)", 3, 2.5e9, ()).describe().startswith("2.5 s (emulated)")
