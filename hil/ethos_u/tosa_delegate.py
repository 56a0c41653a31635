"""The `hil::tosa_delegate` operator: an Ethos-U delegate call that runs the delegate's TOSA graph.

Why it exists: a .pte's Ethos-U delegate holds Vela's command stream, which only an NPU (or an
FVP) can execute. What Vela compiled, though, is a TOSA graph, and Arm's TOSA reference model
executes TOSA exactly as the specification defines it. So the Ethos-U recipe keeps, beside the
.pte, each delegate's TOSA flatbuffer (the very bytes Vela received; the recipe checks that Vela
turns them into the delegate's command stream again) and the non-delegated rest of the program
as a torch.export file in which every delegate call is this operator. At run time the reference
targets load that file and run it under `TosaRunner`, which answers each `hil::tosa_delegate`
call by running the named TOSA graph in the reference model. Nothing is computed at export time
and replayed: every run executes the TOSA graphs and the CPU operators afresh.

Outside a TosaRunner the operator refuses to run, so a program that still contains delegate
calls can never be mistaken for a complete one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from hil.arrays import RAW_BITS
from hil.capture import captured_output
from hil.errors import HilError, RunRefused, TargetCrash, TargetStateError

DTYPES: Mapping[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
    )
}


@dataclass(frozen=True)
class TensorSpec:
    """Shape, dtype and dim order of one delegate output (what the fake kernel must produce)."""

    shape: tuple[int, ...]
    dtype: str
    dim_order: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype, "dim_order": list(self.dim_order)}


def encode_outputs(specs: Sequence[TensorSpec]) -> str:
    return json.dumps([s.to_json() for s in specs], separators=(",", ":"))


def decode_outputs(text: str) -> list[TensorSpec]:
    return [
        TensorSpec(tuple(item["shape"]), item["dtype"], tuple(item["dim_order"]))
        for item in json.loads(text)
    ]


def _empty_like_spec(spec: TensorSpec) -> torch.Tensor:
    return torch.empty(spec.shape, dtype=DTYPES[spec.dtype])


@torch.library.custom_op("hil::tosa_delegate", mutates_args=())
def tosa_delegate(delegate: str, outputs: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Stands for one NPU delegate; runs only inside a TosaRunner (see module docstring)."""
    raise TargetStateError(
        f"hil::tosa_delegate({delegate!r}) ran outside a TosaRunner: this program's NPU "
        "delegates need the TOSA reference model",
        fix="run the program through hil's ethos_u_ref target (hil.targets.ethos_u_ref)",
    )


@tosa_delegate.register_fake
def _tosa_delegate_fake(
    delegate: str, outputs: str, inputs: list[torch.Tensor]
) -> list[torch.Tensor]:
    return [_empty_like_spec(spec) for spec in decode_outputs(outputs)]


OP = torch.ops.hil.tosa_delegate.default


def to_tosa_layout(tensor: torch.Tensor) -> np.ndarray[Any, Any]:
    """A tensor as the TOSA graph sees it: permuted into its dim order (NHWC when channels-last)."""
    order = tensor.dim_order()
    data = tensor.detach().permute(order) if list(order) != sorted(order) else tensor.detach()
    data = data.contiguous()
    if data.dtype in RAW_BITS:  # numpy lacks the type: its bits go, the graph names the type
        data = data.view(RAW_BITS[data.dtype])
    return np.asarray(data.numpy(), order="C")  # ascontiguousarray would make a 0-d tensor 1-d


def from_tosa_layout(array: np.ndarray[Any, Any], spec: TensorSpec) -> torch.Tensor:
    """A TOSA output back in PyTorch's logical shape (undoing the dim-order permutation)."""
    physical = [spec.shape[i] for i in spec.dim_order]
    dtype = DTYPES[spec.dtype]
    values = np.array(array, copy=True)
    if dtype in RAW_BITS and values.dtype.kind in "uV":  # the type's bits (void: no numpy type)
        bits = values.view(f"u{RAW_BITS[dtype].itemsize}")
        tensor = torch.from_numpy(bits).view(dtype).reshape(physical)
    else:
        tensor = torch.from_numpy(values).reshape(physical)
    if list(spec.dim_order) == sorted(spec.dim_order):
        return tensor.to(dtype)
    inverse = [spec.dim_order.index(i) for i in range(len(spec.dim_order))]
    return tensor.permute(inverse).contiguous().to(dtype)


NDArray = np.ndarray[Any, Any]
RunGraph = Callable[[bytes, list[NDArray]], tuple[list[NDArray], str, str]]


def run_reference_model(
    graph: bytes, inputs: list[np.ndarray[Any, Any]]
) -> tuple[list[np.ndarray[Any, Any]], str, str]:
    """Run one TOSA flatbuffer in Arm's reference model: (outputs, status name, its messages)."""
    import tosa_reference_model as reference

    with captured_output() as messages:
        outputs, status = reference.run(
            graph, inputs, verbosity="LOW", initialize_variable_tensor_from_numpy=True
        )
    return list(outputs), str(status.name), messages[0] if messages else ""


def _refusal(
    delegate: str, error: ValueError, graph: bytes, arrays: Sequence[NDArray]
) -> RunRefused:
    """The reference model's refusal, told by what it is: inputs the graph does not declare,
    or a graph whose declared inputs are exactly what the program passes, which its own
    validation rejects (ExecuTorch 1.5.1's bfloat16 conv_transpose2d: "Invalid TOSA graph")."""
    lowering = (
        "a defect of the lowering (ExecuTorch's Arm backend) for this model, not of the target"
    )
    difference = input_difference(graph, arrays)
    if difference:
        return RunRefused(
            f"TOSA reference model refused the inputs of delegate {delegate!r}: {error} "
            f"({difference})",
            fix=f"the program hands the delegate other tensors than its TOSA graph takes: "
            f"{lowering}; report it with the artifact (hil explore shows both sides)",
        )
    return RunRefused(
        f"TOSA reference model refused the graph of delegate {delegate!r}: {error} (the "
        f"program passes exactly the inputs it declares: {declared_inputs(graph)})",
        fix=f"the graph the lowering wrote fails the reference model's own validation: "
        f"{lowering}, or a type the reference model does not run; report it with the "
        "artifact (hil explore shows the graph)",
    )


def declared_inputs(graph: bytes) -> str:
    from hil.artifacts.tosa_graph import parse_tosa

    return _shown(_declared(parse_tosa(graph)))


def _declared(tosa: Any) -> list[tuple[tuple[int, ...], str]]:
    """(shape, TOSA element type) of each input a graph declares."""
    return [(tosa.shapes.get(n, ()), tosa.dtypes.get(n, "?")) for n in tosa.inputs]


def _shown(items: Sequence[tuple[tuple[int, ...], str]]) -> str:
    return ", ".join(f"{dtype}{list(shape)}" for shape, dtype in items) or "none"


def input_difference(graph: bytes, arrays: Sequence[NDArray]) -> str:
    """What differs between the arrays handed to a delegate and the inputs its TOSA graph
    declares: count, shapes, element types ("" when nothing does)."""
    from hil.artifacts.tosa_graph import parse_tosa

    try:
        tosa = parse_tosa(graph)
    except HilError as e:
        return f"its TOSA graph cannot be read: {e.message}"
    wanted = _declared(tosa)
    given = [(tuple(a.shape), str(a.dtype)) for a in arrays]

    if len(wanted) != len(given):
        said = (
            f"the graph takes {len(wanted)} input(s) ({_shown(wanted)}), the program "
            f"passes {len(given)} ({_shown(given)})"
        )
        if len(wanted) < len(given):  # ExecuTorch's EthosUBackend.cpp: outputs at args[n_in + i]
            said += (
                "; ExecuTorch's Ethos-U runtime counts a delegate's inputs from its "
                "compiled graph, so on a device its outputs would be written over the "
                "call's first arguments"
            )
        return said
    differences = [
        f"input {i}: graph {w_dtype}{list(w_shape)}, passed {g_dtype}{list(g_shape)}"
        for i, ((w_shape, w_dtype), (g_shape, g_dtype)) in enumerate(
            zip(wanted, given, strict=True)
        )
        if tuple(w_shape) != tuple(g_shape) or not _same_type(w_dtype, g_dtype)
    ]
    return "; ".join(differences)


def _same_type(tosa: str, numpy: str) -> bool:
    """Whether a TOSA element type ("INT8", "FP32", "BOOL") matches a numpy dtype name."""
    names = {
        "INT8": "int8",
        "INT16": "int16",
        "INT32": "int32",
        "INT48": "int64",
        "BOOL": "bool",
        "FP16": "float16",
        "FP32": "float32",
        "UINT8": "uint8",
        "UINT16": "uint16",
        "BF16": "uint16",
        "FP8E4M3": "uint8",
        "FP8E5M2": "uint8",
        "SHAPE": "int64",
        "INT4": "int8",
    }
    return names.get(tosa, "") == numpy


class TosaRunner(TorchFunctionMode):
    """Answers `hil::tosa_delegate` calls with the TOSA reference model; all else runs as usual.

    `graphs` maps delegate names to TOSA flatbuffers. A status other than TOSA_VALID is a
    TargetCrash that names the delegate, the status and the reference model's own words.
    """

    def __init__(
        self, graphs: Mapping[str, bytes], run_graph: RunGraph = run_reference_model
    ) -> None:
        super().__init__()
        self.graphs = graphs
        self.run_graph = run_graph
        self.calls: list[str] = []
        self.log = logging.getLogger("hil.ethos_u.tosa_delegate")

    def __torch_function__(
        self,
        func: Any,
        types: Any,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        if func is OP:
            delegate, outputs, inputs = args
            return self.call(delegate, decode_outputs(outputs), inputs)
        if func is torch.ops.higher_order.cond:
            return self._cond(*args)
        if func is torch.ops.higher_order.while_loop:
            return self._while_loop(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))

    # A control-flow operator reaches this mode whole, and the mode is off while it is handled:
    # torch's own kernel would run the branches without it, so a delegate inside one (a
    # torch.cond branch on an NPU without TOSA's cf extension) would find no runner. These run
    # the branches as torch's eager kernels do, with the mode on.

    def _cond(self, pred: Any, true_fn: Any, false_fn: Any, operands: Sequence[Any]) -> Any:
        with self:
            return (true_fn if bool(pred) else false_fn)(*operands)

    def _while_loop(
        self,
        cond_fn: Any,
        body_fn: Any,
        carried: Sequence[Any],
        additional: Sequence[Any],
        *rest: Any,
        **options: Any,
    ) -> tuple[Any, ...]:
        values = tuple(carried)
        with self:
            while bool(cond_fn(*values, *additional)):
                values = tuple(body_fn(*values, *additional))
        return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in values)

    def call(
        self, delegate: str, outputs: list[TensorSpec], inputs: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]:
        if delegate not in self.graphs:
            raise TargetStateError(
                f"the program calls NPU delegate {delegate!r}, which this deployment lacks "
                f"(it has {', '.join(sorted(self.graphs)) or 'none'})",
                fix="delete the artifact's cache entry to re-export it",
            )
        arrays = [to_tosa_layout(t) for t in inputs]
        try:
            results, status, messages = self.run_graph(self.graphs[delegate], arrays)
        except ValueError as e:  # the reference model refuses inputs or a graph it cannot bind
            raise _refusal(delegate, e, self.graphs[delegate], arrays) from e
        except HilError:
            raise
        except Exception as e:  # not the CPU part's: keep it apart from a CPU operator's refusal
            raise TargetCrash(
                f"TOSA reference model failed on delegate {delegate!r}: {type(e).__name__}: {e}",
                fix="report it with the artifact: the reference model should answer every "
                "graph with a status",
            ) from e
        self.calls.append(delegate)
        if messages.strip():
            self.log.debug("reference model on %s: %s", delegate, messages.strip())
        if status == "TOSA_UNPREDICTABLE":  # the program's fault, as a kernel's own check is
            raise RunRefused(
                f"TOSA reference model returned {status} for delegate {delegate!r}: the TOSA "
                "specification leaves this graph's result undefined for these inputs",
                fix="the inputs are outside what the operator is defined on (its REQUIRE "
                "below; e.g. pow of a base <= 0, integer overflow): a device's answer cannot "
                "be trusted either; give inputs inside its domain",
                log_tail=_relevant(messages),
            )
        if status != "TOSA_VALID":
            raise TargetCrash(
                f"TOSA reference model returned {status} for delegate {delegate!r}",
                fix="the reference model rejected the graph itself: a defect of the lowering "
                "(ExecuTorch's Arm backend) or of the reference model; report it with the "
                "artifact",
                log_tail=_relevant(messages),
            )
        if len(results) != len(outputs):
            raise TargetCrash(
                f"delegate {delegate!r} returned {len(results)} outputs, expected {len(outputs)}"
            )
        return [from_tosa_layout(a, spec) for a, spec in zip(results, outputs, strict=True)]


def _relevant(messages: str) -> str:
    """The reference model's messages without its version chatter."""
    lines = [line for line in messages.splitlines() if "Different TOSA spec" not in line]
    return "\n".join(lines[-12:])
