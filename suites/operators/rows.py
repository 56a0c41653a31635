"""How a one-line operator row becomes a hil.Case.

A row names the operator, gives a factory of the module under test and its inputs' shapes, and
passes any other hil.Case field (recipes=, targets=, xfail=, tolerance=, tags=, budget_ms=)
straight through, so a restriction for one target is one keyword on the row that needs it.

The module is built under a fixed seed (its weights, hence its cache key, are the same in every
process), and functional ops are wrapped in `Fn`, which records a readable label as
configuration: hil's fingerprint hashes plain attributes and Python function code but not
builtins, so without the label Fn(torch.add) and Fn(torch.mul) would share a cache entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

import hil
from suites.factories import Shape, seeded_inputs, seeded_module

ModuleFactory = Callable[[], nn.Module]


class Fn(nn.Module):
    """The module form of a functional op (torch.where, torch.cat, a + b)."""

    def __init__(self, function: Callable[..., Any], label: str) -> None:
        super().__init__()
        self.function = function
        self.label = label  # part of the fingerprint; see the module docstring

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.function(*inputs)

    def extra_repr(self) -> str:
        return self.label


def fn(function: Callable[..., Any], label: str | None = None) -> ModuleFactory:
    """A row's module factory for a functional op: `fn(lambda a, b: torch.cat([a, b], 1))`."""
    text = label or str(getattr(function, "__qualname__", repr(function)))
    return lambda: Fn(function, text)


def op(
    name: str,
    make: ModuleFactory,
    *shapes: Shape,
    full: bool = False,
    seed: int = 0,
    **case_options: Any,
) -> hil.Case:
    """One operator row as a hil.Case.

    `shapes` are the inputs (a tuple is a float32 normal input; suites.factories has ints(),
    mask(), uniform() and half() for others). `full=True` puts the row in the full sweep only
    (tag "full", run with --hil-full). Any other keyword is a hil.Case field, passed through.
    """
    if not shapes:
        raise ValueError(f"operator row {name!r} needs at least one input shape")
    tags = frozenset(case_options.pop("tags", ())) | ({"full"} if full else frozenset())
    return hil.Case(
        name=name,
        model=seeded_module(make, seed),
        inputs=seeded_inputs(*shapes, seed=seed),
        tags=tags,
        **case_options,
    )


def by_name(cases: Iterable[hil.Case]) -> Mapping[str, hil.Case]:
    """The rows as {name: case}, the form @pytest.mark.hil_cases takes; names must be unique."""
    table: dict[str, hil.Case] = {}
    for case in cases:
        if case.name in table:
            raise ValueError(f"two operator rows are named {case.name!r}")
        table[case.name] = case
    return table
