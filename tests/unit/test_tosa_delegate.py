"""The hil::tosa_delegate operator and its runner: layouts, and refusing a bad TOSA status."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from hil.errors import RunRefused, TargetCrash, TargetStateError
from hil.ethos_u.tosa_delegate import (
    OP,
    TensorSpec,
    TosaRunner,
    decode_outputs,
    encode_outputs,
    from_tosa_layout,
    to_tosa_layout,
)

SPEC = TensorSpec((1, 2, 3, 4), "int8", (0, 2, 3, 1))  # a channels-last output


def test_output_specs_round_trip() -> None:
    assert decode_outputs(encode_outputs([SPEC])) == [SPEC]


def test_channels_last_goes_to_nhwc_and_back() -> None:
    tensor = torch.arange(24, dtype=torch.int8).reshape(1, 2, 3, 4)
    nhwc = to_tosa_layout(tensor.to(memory_format=torch.channels_last))
    assert nhwc.shape == (1, 3, 4, 2)
    back = from_tosa_layout(nhwc, SPEC)
    assert torch.equal(back, tensor)
    contiguous = to_tosa_layout(tensor)
    assert contiguous.shape == (1, 2, 3, 4)


def test_a_zero_dimensional_tensor_stays_zero_dimensional() -> None:
    """numpy's ascontiguousarray returns at least 1-d: the VGF scenario of index_put's 0-d value
    refused the shape (1,) it was handed."""
    assert to_tosa_layout(torch.tensor(5.0)).shape == ()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_types_numpy_lacks_travel_as_their_bits(dtype: torch.dtype) -> None:
    """bfloat16 and float8 reach the reference model as unsigned integers of their width and
    come back (as such, or as numpy's void of that width) bit for bit."""
    tensor = torch.linspace(-3, 3, 24).reshape(1, 2, 3, 4).to(dtype)
    raw = to_tosa_layout(tensor.to(memory_format=torch.channels_last))
    assert raw.dtype.kind == "u" and raw.dtype.itemsize == tensor.element_size()
    spec = TensorSpec((1, 2, 3, 4), str(dtype).removeprefix("torch."), (0, 2, 3, 1))
    for given in (raw, raw.view(f"V{raw.dtype.itemsize}")):
        back = from_tosa_layout(given, spec)
        assert back.dtype == dtype and torch.equal(back.view(torch.uint8), tensor.view(torch.uint8))


def test_the_operator_refuses_to_run_outside_a_runner() -> None:
    with pytest.raises(TargetStateError, match="outside a TosaRunner"):
        OP("delegate_0", encode_outputs([SPEC]), [torch.zeros(1, dtype=torch.int8)])


def fake_reference(status: str, messages: str = "") -> Any:
    """Stands in for the reference model's Python binding (the library boundary)."""

    def run(graph: bytes, inputs: list[np.ndarray[Any, Any]]) -> Any:
        return [inputs[0][..., :1].copy()], status, messages

    return run


def test_runner_answers_delegate_calls() -> None:
    spec = TensorSpec((2, 1), "int8", (0, 1))
    runner = TosaRunner({"delegate_0": b"graph"}, fake_reference("TOSA_VALID"))
    with runner:
        out = OP(
            "delegate_0", encode_outputs([spec]), [torch.tensor([[3, 4], [5, 6]], dtype=torch.int8)]
        )
    assert runner.calls == ["delegate_0"]
    assert out[0].tolist() == [[3], [5]]


def test_an_unpredictable_result_is_the_programs_refusal_with_the_reason() -> None:
    """TOSA leaves the result undefined (an overflow, pow of a base <= 0): the program's fault on
    these inputs, as a kernel's own check is (RunRefused: a test failure, which a test may
    expect), not a crash of the target."""
    spec = TensorSpec((1, 1), "int32", (0, 1))
    runner = TosaRunner(
        {"delegate_0": b"graph"},
        fake_reference("TOSA_UNPREDICTABLE", "Integer addition: positive overflow"),
    )
    with pytest.raises(RunRefused) as caught, runner:
        OP("delegate_0", encode_outputs([spec]), [torch.tensor([[1]], dtype=torch.int32)])
    assert "TOSA_UNPREDICTABLE" in str(caught.value)
    assert "positive overflow" in str(caught.value)


def test_a_graph_the_reference_model_rejects_is_a_crash_with_the_status() -> None:
    spec = TensorSpec((1, 1), "int32", (0, 1))
    runner = TosaRunner({"delegate_0": b"graph"}, fake_reference("TOSA_ERROR", "bad graph"))
    with pytest.raises(TargetCrash) as caught, runner:
        OP("delegate_0", encode_outputs([spec]), [torch.tensor([[1]], dtype=torch.int32)])
    assert "TOSA_ERROR" in str(caught.value)


def test_an_unknown_delegate_is_named() -> None:
    with pytest.raises(TargetStateError, match="delegate_7"), TosaRunner({}):
        OP("delegate_7", encode_outputs([SPEC]), [torch.zeros(1, dtype=torch.int8)])


def _declaring(shape: tuple[int, ...], dtype: str) -> Any:
    """parse_tosa of a graph that declares one input of `shape` and TOSA type `dtype`."""
    from pathlib import Path

    from hil.artifacts.tosa_graph import TosaGraph

    def parse(data: bytes, path: Path = Path("<memory>")) -> TosaGraph:
        return TosaGraph(path, "main", (), ("in0",), ("out0",), {"in0": shape}, {"in0": dtype})

    return parse


def refusing(error: str) -> Any:
    def run(graph: bytes, inputs: list[np.ndarray[Any, Any]]) -> Any:
        raise ValueError(error)

    return run


def test_inputs_the_graph_does_not_declare_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hil.artifacts.tosa_graph.parse_tosa", _declaring((1, 4), "INT8"))
    runner = TosaRunner({"delegate_0": b"graph"}, refusing("Invalid inputs"))
    with pytest.raises(RunRefused) as caught, runner:
        OP("delegate_0", encode_outputs([SPEC]), [torch.zeros(1, 2, dtype=torch.int8)])
    assert "input 0: graph INT8[1, 4], passed int8[1, 2]" in str(caught.value)
    assert "other tensors than its TOSA graph takes" in caught.value.fix


def test_a_graph_refused_with_the_inputs_it_declares_is_said_to_be_the_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing differs between what the program passes and what the graph declares: the
    reference model's validation rejects the graph itself, and the fix must not say inputs."""
    monkeypatch.setattr("hil.artifacts.tosa_graph.parse_tosa", _declaring((1, 2), "INT8"))
    runner = TosaRunner({"delegate_0": b"graph"}, refusing("Invalid TOSA graph"))
    with pytest.raises(RunRefused) as caught, runner:
        OP("delegate_0", encode_outputs([SPEC]), [torch.zeros(1, 2, dtype=torch.int8)])
    assert "refused the graph of delegate 'delegate_0': Invalid TOSA graph" in str(caught.value)
    assert "exactly the inputs it declares: INT8[1, 2]" in str(caught.value)
    assert "fails the reference model's own validation" in caught.value.fix
    assert "other tensors" not in caught.value.fix
