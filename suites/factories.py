"""Reproducible factories for suite cases: seeded inputs of any dtype, modules built under a seed.

The artifact cache keys an export by the model's weights and the inputs' shapes, so a case
whose weights changed from one process to the next would be re-exported on every run. Building
every module under a fixed seed is what makes a warm run export nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from hil.case import Inputs


@dataclass(frozen=True)
class InputSpec:
    """One input: shape, dtype and the range its seeded values come from.

    Floats are normal(0, 1) unless `low`/`high` ask for a uniform range (divisors, positive
    inputs); integers are uniform in [low, high); bools are fair coin flips.
    """

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    low: float | None = None
    high: float | None = None

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        if self.dtype == torch.bool:
            return torch.rand(self.shape, generator=generator) > 0.5
        if not self.dtype.is_floating_point:
            low = int(self.low if self.low is not None else -100)
            high = int(self.high if self.high is not None else 100)
            return torch.randint(low, high, self.shape, generator=generator, dtype=self.dtype)
        if self.low is not None and self.high is not None:
            unit = torch.rand(self.shape, generator=generator)
            return (self.low + (self.high - self.low) * unit).to(self.dtype)
        return torch.randn(self.shape, generator=generator).to(self.dtype)


def ints(
    *shape: int, low: int = -100, high: int = 100, dtype: torch.dtype = torch.int32
) -> InputSpec:
    """An integer input, uniform in [low, high) (token ids, int32 arithmetic)."""
    return InputSpec(tuple(shape), dtype, low, high)


def mask(*shape: int) -> InputSpec:
    """A boolean input (e.g. the condition of torch.where)."""
    return InputSpec(tuple(shape), torch.bool)


def uniform(*shape: int, low: float, high: float, dtype: torch.dtype = torch.float32) -> InputSpec:
    """A float input uniform in [low, high): divisors away from zero, saturating activations."""
    return InputSpec(tuple(shape), dtype, low, high)


def half(*shape: int) -> InputSpec:
    """A float16 input, normal(0, 1)."""
    return InputSpec(tuple(shape), torch.float16)


Shape = tuple[int, ...] | InputSpec


def as_spec(shape: Shape) -> InputSpec:
    """A plain shape tuple means a float32 normal input."""
    return shape if isinstance(shape, InputSpec) else InputSpec(tuple(shape))


def seeded_inputs(*shapes: Shape, seed: int = 0) -> Callable[[], Inputs]:
    """A factory of reproducible inputs, one per shape or spec."""
    specs = tuple(as_spec(s) for s in shapes)

    def make() -> Inputs:
        generator = torch.Generator().manual_seed(seed)
        return tuple(spec.sample(generator) for spec in specs)

    return make


def seeded_module(make: Callable[[], nn.Module], seed: int = 0) -> Callable[[], nn.Module]:
    """`make` run under a fixed seed, without disturbing the caller's random state."""

    def build() -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return make()

    return build
