"""Steps every recipe shares: torch.export, PT2E quantization, output scales, serialization.

Heavy imports happen inside the functions, so importing hil stays fast and free of torch
compile machinery until something is actually exported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch.utils import _pytree as pytree

from hil.arrays import Array, to_array
from hil.call import fresh
from hil.case import BuiltCase, Inputs
from hil.errors import ExportError, ResourceExhausted, resource_exhaustion
from hil.export.stages import brief

T = TypeVar("T")

# Where lower_to_pte writes an ETRecord while a `recording_etrecord` block runs (hil.explain.cpu
# re-exports a failing case inside one); outside such a block, None: green runs pay nothing.
_ETRECORD_PATH: ContextVar[Path | None] = ContextVar("hil_etrecord_path", default=None)


@contextmanager
def recording_etrecord(path: Path) -> Iterator[None]:
    """Within the block, every lowering also writes ExecuTorch's ETRecord (the exported and
    edge programs and the debug-handle map of the .pte) to `path`; the .pte stays the same."""
    token = _ETRECORD_PATH.set(path)
    try:
        yield
    finally:
        _ETRECORD_PATH.reset(token)


def exporter_step(step: str, case: str, action: Callable[[], T]) -> T:
    """Run one export step; turn any failure into an ExportError carrying the exporter's words,
    except running out of memory or disk, which is this machine's problem (ResourceExhausted)."""
    try:
        return action()
    except (ExportError, ResourceExhausted):
        raise
    except Exception as e:
        exhausted = resource_exhaustion(e)
        if exhausted:
            raise ResourceExhausted(
                f"case {case!r}: {step} ran out of {exhausted}: {type(e).__name__}: {e}",
                fix=f"free {exhausted} (or run fewer workers) and run again; this is not "
                "remembered as the model's failure",
            ) from e
        raise ExportError(
            f"case {case!r}: {step} failed: {brief(e)}",
            fix="the operator or pattern may be unsupported by this backend; restrict the case "
            "to other recipes (Case(recipes=...)) or mark it xfail with the reason",
        ) from e


def export_program(
    built: BuiltCase, module: torch.nn.Module | None = None, strict: bool = False
) -> Any:
    """torch.export of the case's module (or of a quantized stand-in for it); `strict`
    captures it with TorchDynamo, as ExecuTorch's own test harness does."""
    target = module if module is not None else built.module
    step = "torch.export (strict)" if strict else "torch.export"
    return exporter_step(step, built.case.name, lambda: export_flat(target, built.inputs, strict))


class FlatOutputs(torch.nn.Module):
    """The model with its outputs as a flat tuple, in the order the verdict reads them
    (flatten_outputs)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: Any) -> tuple[torch.Tensor, ...]:
        return tuple(flatten_outputs(self.model(*args)))


def export_flat(module: torch.nn.Module, inputs: Inputs, strict: bool = False) -> Any:
    """torch.export, with outputs a program can be saved with. A model returning a named
    tuple (`torch.topk`'s torch.return_types.topk, a collections.namedtuple) exports, but neither
    torch.export.save nor ExecuTorch's serializer can name its type ("No registered
    serialization name"): it is exported again with its outputs flattened. Other models export
    as they are, so their programs stay byte-identical to ExecuTorch's own flow."""
    program = torch.export.export(module, inputs, strict=strict)
    try:
        pytree.treespec_dumps(program.call_spec.out_spec)
    except NotImplementedError:
        return torch.export.export(FlatOutputs(module), inputs, strict=strict)
    return program


def output_scales(graph: torch.fx.GraphModule) -> tuple[float | None, ...]:
    """The quantization step of each graph output: the scale of its final dequantize, if any."""
    output = next(n for n in graph.graph.nodes if n.op == "output")
    values = output.args[0]
    values = values if isinstance(values, (tuple, list)) else (values,)
    scales: list[float | None] = []
    for node in values:
        scale = None
        if isinstance(node, torch.fx.Node) and "dequantize_per_tensor" in str(node.target):
            candidate = node.args[1]
            scale = float(candidate) if isinstance(candidate, (int, float)) else None
        scales.append(scale)
    return tuple(scales)


def run_reference(
    module: Callable[..., Any], inputs: Inputs, *, copy: bool = True
) -> tuple[Array, ...]:
    """Outputs of a PyTorch callable as numpy arrays in their dtypes (nested outputs flattened);
    it runs on copies of the inputs unless `copy` is False (the caller's own copies)."""
    return tuple(to_array(t) for t in reference_tensors(module, inputs, copy=copy))


def reference_tensors(
    module: Callable[..., Any], inputs: Inputs, *, copy: bool = True
) -> list[torch.Tensor]:
    """Outputs of a PyTorch callable as tensors (nested outputs flattened)."""
    with torch.no_grad():
        return flatten_outputs(module(*(fresh(inputs) if copy else inputs)))


def flatten_outputs(result: Any) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in flatten_outputs(item)]
    if isinstance(result, dict):
        return [t for key in result for t in flatten_outputs(result[key])]
    if hasattr(result, "to_tuple"):  # transformers ModelOutput
        return flatten_outputs(result.to_tuple())
    raise ExportError(f"model returned {type(result).__name__}; expected tensors")


def lower_to_pte(
    case: str, program: Any, partitioners: Sequence[Any] = (), **edge_options: Any
) -> bytes:
    """to_edge_transform_and_lower + to_executorch, returning the serialized program."""
    from executorch.exir import to_edge_transform_and_lower

    etrecord = _ETRECORD_PATH.get()

    def run() -> bytes:
        edge = to_edge_transform_and_lower(
            program,
            partitioner=list(partitioners),
            generate_etrecord=etrecord is not None,
            **edge_options,
        )
        executorch = edge.to_executorch()
        if etrecord is not None:
            executorch.get_etrecord().save(str(etrecord))
        return bytes(executorch.buffer)

    return exporter_step("lowering to ExecuTorch", case, run)
