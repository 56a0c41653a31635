"""hil.runner.pte_plan reads what ExecuTorch's own deserializer and runtime read from a real .pte,
and hil.runner.pools turns it into the pool sizes a runner needs (and refuses with them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from hil.errors import PoolsTooSmall
from hil.runner.pools import (
    PoolNeeds,
    carve,
    check_fits,
    measured_peaks,
    needs_of,
    render,
)
from hil.runner.pte_plan import NotAProgram, method_plan


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return self.fc(h) + y


@pytest.fixture(scope="module")
def pte() -> Iterator[bytes]:
    exir = pytest.importorskip("executorch.exir")
    torch.manual_seed(0)
    example = (torch.randn(1, 3, 16, 16), torch.randn(1, 4))
    program = exir.to_edge_transform_and_lower(
        torch.export.export(Small().eval(), example)
    ).to_executorch()
    yield bytes(program.buffer)


def test_the_plan_matches_executorchs_own_reading(pte: bytes) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.runtime import Runtime

    theirs = deserialize_pte_binary(pte).program.execution_plan[0]
    ours = method_plan(pte)
    assert ours.name == theirs.name == "forward"
    assert list(ours.planned_buffers) == list(theirs.non_const_buffer_sizes[1:])
    assert ours.planned_bytes > 0
    assert ours.operators == tuple(
        f"{op.name}.{op.overload}" if op.overload else op.name for op in theirs.operators
    )
    assert "aten::convolution.out" in ours.operators
    meta = Runtime.get().load_program(pte).metadata("forward")
    assert [t.nbytes if t else None for t in ours.inputs] == [
        meta.input_tensor_meta(i).nbytes() for i in range(meta.num_inputs())
    ]
    assert ours.delegates == ()


def test_needs_carve_at_the_runners_alignment(pte: bytes) -> None:
    needs = needs_of(pte, {"method_pool_peak_bytes": 5000.0, "temp_pool_peak_bytes": 0.0})
    assert needs.model == len(pte)
    assert needs.planned == carve(method_plan(pte).planned_buffers)
    assert needs.io == carve([1 * 3 * 16 * 16 * 4, 1 * 4 * 4]) == 3072 + 16
    assert (needs.method, needs.temp) == (5000, 0)
    assert carve([1, 1, 1]) == 129 and carve([]) == 0


def test_defines_round_up_and_leave_out_what_only_a_run_can_tell() -> None:
    needs = PoolNeeds(model=10_000, planned=4096, io=1, method=None, temp=None)
    assert needs.defines() == {
        "HIL_POOL_MODEL_SIZE": "0x3000",
        "HIL_POOL_PLANNED_SIZE": "0x1000",
        "HIL_POOL_IO_SIZE": "0x1000",
    }
    assert needs.defines(headroom=0.5)["HIL_POOL_PLANNED_SIZE"] == "0x2000"
    assert "from a run" in render(needs)


def test_a_model_too_big_for_a_pool_is_refused_with_the_sizes(pte: bytes) -> None:
    planned = method_plan(pte).planned_bytes
    pools = {"model": 1 << 20, "planned": 1024, "io": 1 << 20, "method": 1 << 20}
    with pytest.raises(PoolsTooSmall) as caught:
        check_fits("qemu-m55", pte, pools)
    err = caught.value
    assert [s.pool for s in err.shortfalls] == ["planned"]
    assert f"planned pool: needs {err.shortfalls[0].needed} bytes, has 1024" in err.message
    assert err.shortfalls[0].needed >= planned
    assert err.fix is not None and "HIL_POOL_PLANNED_SIZE" in err.fix
    assert check_fits("qemu-m55", pte, {"planned": 1 << 20}).planned <= 1 << 20


def test_counters_and_plain_peaks_are_both_read() -> None:
    assert measured_peaks({"method_pool_peak_bytes": 7.0, "runner_clock_hz": 1.0, "temp": 3.0}) == {
        "method": 7,
        "temp": 3,
    }


def test_what_is_not_a_pte_is_refused() -> None:
    with pytest.raises(NotAProgram, match="file identifier"):
        method_plan(b"\x00" * 64)
