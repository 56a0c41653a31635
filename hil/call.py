"""A model's call as torch.export takes it: tensors, tuples, lists and dicts of them, and
constants of any kind (ints, floats, bools, None, strings, dtypes, ...).

Every runtime hil drives takes the program's inputs as a flat list, and the runner protocol
carries tensors only (ExecuTorch would take a scalar as an input value too, but a board's runner
is fed tensors). So a call that is not a flat row of tensors is bound: the case's module is
wrapped in `BoundCall`, whose forward takes the tensor leaves, rebuilds the call with the
constants in place and calls the model. torch.export then traces the constants as constants,
and every target receives tensors only. Any leaf that is not a tensor is a constant: whether
torch.export takes it is torch.export's to say (its own error, at export, names it). The
constants are part of the model's fingerprint (a new `dim` is a new export).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from hil.errors import CaseError

Inputs = tuple[torch.Tensor, ...]


class Slot(enum.Enum):
    """Where a tensor of the call goes among its constants (None is a constant too: an
    optional argument such as div's `rounding_mode=None`)."""

    TENSOR = "tensor"


class BoundCall(torch.nn.Module):
    """`model(*call)` as a module of the call's tensors: the structure and constants held."""

    def __init__(self, model: torch.nn.Module, structure: str, constants: tuple[Any, ...]) -> None:
        super().__init__()
        self.model = model
        self.structure = structure  # the call's tree (torch's pytree spec, serialized)
        self.constants = constants  # per leaf: the constant, or Slot.TENSOR where a tensor goes
        self._spec = pytree.treespec_loads(structure)

    def forward(self, *tensors: torch.Tensor) -> Any:
        given = iter(tensors)
        leaves = [next(given) if c is Slot.TENSOR else c for c in self.constants]
        args = pytree.tree_unflatten(leaves, self._spec)
        return self.model(*args)


def fresh(inputs: Any) -> tuple[Any, ...]:
    """Copies of a call's tensors, for one in-process run: a model may write into the inputs it
    is handed (`x += y`, as residual blocks do), and the case's own inputs must stay the values
    every reference and target is given (measured: ExecuTorch's in-place add test was 212 steps
    off when eager's timing runs had grown the input the target then received)."""
    return tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs)


@dataclass(frozen=True)
class FlatCall:
    tensors: Inputs
    structure: str
    constants: tuple[Any, ...]  # Slot.TENSOR where a tensor goes


def flatten_call(call: Any, what: str = "inputs") -> FlatCall | Inputs:
    """The call's tensors, or the tensors beside its structure and constants (a FlatCall)
    when it is more than a row of tensors."""
    if isinstance(call, torch.Tensor):
        return (call,)
    if not isinstance(call, (tuple, list)):
        raise CaseError(
            f"{what} must be a tensor or a tuple of the model's arguments, "
            f"got {type(call).__name__}"
        )
    if all(isinstance(item, torch.Tensor) for item in call):  # () too: a model of no inputs
        return tuple(call)
    leaves, spec = pytree.tree_flatten(tuple(call))
    constants = tuple(Slot.TENSOR if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves)
    tensors = tuple(leaf for leaf in leaves if isinstance(leaf, torch.Tensor))
    if not tensors:
        raise CaseError(f"{what} hold no tensor: there is nothing to feed the program")
    return FlatCall(tensors, pytree.treespec_dumps(spec), constants)


def bind(
    model: torch.nn.Module, call: Any, samples: list[Any]
) -> tuple[torch.nn.Module, Inputs, list[Inputs]]:
    """The module to export and its tensor inputs (and calibration samples' tensors): `model`
    itself for a row of tensors, else a BoundCall. Samples must have the call's structure and
    constants."""
    flat = flatten_call(call)
    if not isinstance(flat, FlatCall):
        rows = [flatten_call(s, "a calibration sample") for s in samples]
        if any(isinstance(r, FlatCall) for r in rows):
            raise CaseError(
                "a calibration sample is structured, but the inputs are a row of "
                "tensors: give them the same structure"
            )
        return model, flat, [r for r in rows if not isinstance(r, FlatCall)]
    tensors: list[Inputs] = []
    for i, sample in enumerate(samples):
        row = flatten_call(sample, f"calibration sample {i}")
        if not isinstance(row, FlatCall) or (row.structure, row.constants) != (
            flat.structure,
            flat.constants,
        ):
            raise CaseError(
                f"calibration sample {i} differs from the inputs in structure or "
                "constants; only the tensors may change"
            )
        tensors.append(row.tensors)
    return BoundCall(model, flat.structure, flat.constants).eval(), flat.tensors, tensors
