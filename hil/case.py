"""Suite cases: a model or operator, its reference inputs, and what it must meet.

A Case holds factories, not tensors, so a table of a hundred cases costs nothing to collect;
`build()` makes the module and inputs once per process when a case actually runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

import torch

from hil.call import Inputs as Inputs  # re-exported: the targets take Inputs from here
from hil.call import bind, flatten_call
from hil.devices import TimingPolicy
from hil.errors import CaseError
from hil.threads import one_thread
from hil.tolerance_override import ToleranceOverride

V = TypeVar("V")


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


def first_match(table: Mapping[str, V], target: str, recipe: str) -> tuple[str, V] | None:
    """The most specific entry of a per-variant table, and its key.

    Keys, most specific first: "target/recipe", "target", "*/recipe" (or just "recipe"), "*".
    Budgets, xfails, expected fallbacks and counter budgets all use this one rule.
    """
    for key in (f"{target}/{recipe}", target, f"*/{recipe}", recipe, "*"):
        if key in table:
            return key, table[key]
    return None


@dataclass(frozen=True)
class Case:
    """One thing to test on a target.

    `budget_ms` maps "target/recipe", "target", "*/recipe" or "*" to a latency budget in ms on
    a named piece of hardware ("*" entries are for the reference machine and get each device's
    scale). `budget_vs_eager` maps the same keys to a ratio for targets whose hardware is the
    machine hil runs on (host, vboard): the target's best time over eager PyTorch's there.
    `xfail` maps the same kind of keys to the reason the combination is expected to fail;
    `tolerance` is one ToleranceOverride, or a table of them keyed the same way.
    `fully_delegated` asserts that nothing falls back to the CPU on targets that partition
    (Ethos-U, Cortex-M); `expected_fallback` names the operators expected on the CPU instead
    ("avg_pool3d"), for every such target or per "target/recipe" key like `xfail`.
    `tags` mark the case for opt-in runs ("full", "large"); "full@ethos-u" (or "@u85-ref",
    "@u85-ref/ethos-u") tags only the variants of that recipe or target, e.g. to keep a slow
    export out of one target's default run.
    `counter_budgets` maps a target counter ("npu_cycles", "sram_bytes", "flash_bytes") to
    limits keyed like `budget_ms` (taken as they are, never scaled); on a target that does not
    report the counter the budget is NOT JUDGED.
    `inputs` returns the model's arguments: a tensor, or a tuple of them; an argument may be a
    tuple, list or dict of tensors, or a constant int, float or bool (hil.call binds those).
    `missing_kernels` maps an operator ("avg_pool3d") to the reason the case accepts that the
    device's runtime has no CPU kernel for it; any other missing kernel fails the case on
    targets that stand in for a device.
    """

    name: str
    model: Callable[[], torch.nn.Module]
    inputs: Callable[[], Any]  # the model's arguments: a tensor, or a tuple (hil.call)
    calibration: Callable[[], Sequence[Any]] | None = None  # samples shaped like the inputs
    labels: Callable[[], torch.Tensor] | None = None
    classifier: bool = False
    max_accuracy_drop: float | None = None
    budget_ms: Mapping[str, float] = field(default_factory=_empty)
    budget_vs_eager: Mapping[str, float] = field(default_factory=_empty)
    tolerance: ToleranceOverride | Mapping[str, ToleranceOverride] | None = None
    recipes: frozenset[str] | None = None
    targets: frozenset[str] | None = None
    xfail: Mapping[str, str] = field(default_factory=_empty)
    timing: TimingPolicy | None = None
    tags: frozenset[str] = frozenset()
    fully_delegated: bool = False
    expected_fallback: frozenset[str] | Mapping[str, frozenset[str]] | None = None
    counter_budgets: Mapping[str, Mapping[str, float]] = field(default_factory=_empty)
    missing_kernels: Mapping[str, str] = field(default_factory=_empty)

    def applies_to(self, target: str, recipe: str) -> bool:
        if self.targets is not None and target not in self.targets:
            return False
        return self.recipes is None or recipe in self.recipes

    def tolerance_for(self, target: str, recipe: str) -> ToleranceOverride | None:
        """The case's override for one variant: one for all, or the most specific entry of a
        table keyed like `xfail` ("target/recipe", "target", "*/recipe", "*")."""
        if self.tolerance is None or isinstance(self.tolerance, ToleranceOverride):
            return self.tolerance
        found = first_match(self.tolerance, target, recipe)
        return found[1] if found else None

    def xfail_reason(self, target: str, recipe: str) -> str | None:
        found = first_match(self.xfail, target, recipe)
        return found[1] if found else None

    def tags_for(self, target: str, recipe: str) -> frozenset[str]:
        """The tags of one (target, recipe) variant: plain tags, and NAME@SELECTOR ones whose
        selector names this target, this recipe or "target/recipe"."""
        selectors = {target, recipe, f"{target}/{recipe}"}
        tags = set()
        for tag in self.tags:
            name, _, selector = tag.partition("@")
            if not selector or selector in selectors:
                tags.add(name)
        return frozenset(tags)

    def expected_fallback_for(self, target: str, recipe: str) -> frozenset[str] | None:
        """Operators expected on the CPU (empty: fully delegated); None: nothing asserted."""
        if self.fully_delegated:
            return frozenset()
        table = self.expected_fallback
        if table is None or isinstance(table, (set, frozenset)):
            return None if table is None else frozenset(table)
        found = first_match(table, target, recipe)
        return frozenset(found[1]) if found else None

    def build(self) -> BuiltCase:
        """Instantiate the model and inputs; any failure is a CaseError naming the case. On
        one thread: a factory that runs the model (BatchNorm statistics, training) gives the
        same tensors in every process (hil.threads)."""
        try:
            with one_thread():
                module, inputs, calibration = bind(
                    self.model().eval(),
                    self.inputs(),
                    list(self.calibration()) if self.calibration else [],
                )
                labels = self.labels() if self.labels else None
        except CaseError:
            raise
        except Exception as e:
            raise CaseError(
                f"case {self.name!r} could not be built: {type(e).__name__}: {e}",
                fix="fix the case's model or input factory in its suite",
            ) from e
        if self.max_accuracy_drop is not None and labels is None:
            raise CaseError(f"case {self.name!r} sets max_accuracy_drop but has no labels")
        return BuiltCase(self, module, inputs, calibration, labels)


@dataclass(frozen=True)
class BuiltCase:
    case: Case
    module: torch.nn.Module
    inputs: Inputs
    calibration: list[Inputs]
    labels: torch.Tensor | None

    def calibration_or_default(self) -> list[Inputs]:
        """The case's calibration set, or the reference inputs plus seeded variations of them
        that keep each input's dtype and stay inside its range (an operator defined only on
        positive inputs is calibrated on positive values; token ids stay valid ids)."""
        if self.calibration:
            return self.calibration
        generator = torch.Generator().manual_seed(0)
        samples = [self.inputs]
        for _ in range(7):
            samples.append(tuple(_like(t, generator) for t in self.inputs))
        return samples


def _like(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A seeded variation of `tensor`: its shape and dtype, values inside its own range.

    Floats: each finite value moved by noise as wide as the values' spread, then held inside
    [min, max]; infinities and NaN (a mask's -inf) stay where they are. Integers: uniform in
    [min, max]. Booleans: as given (a mask's pattern is part of the input's meaning).
    """
    if tensor.dtype == torch.bool or tensor.numel() == 0:
        return tensor.clone()
    if tensor.dtype.is_floating_point:
        finite = torch.isfinite(tensor)
        values = tensor[finite].double()
        if values.numel() < 2:
            return tensor.clone()
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float64)
        moved = (tensor.double() + noise * values.std()).clamp(values.min(), values.max())
        return torch.where(finite, moved.to(tensor.dtype), tensor)
    if tensor.is_complex():
        return tensor.clone()
    low, high = int(tensor.min()), int(tensor.max()) + 1
    return torch.randint(low, high, tensor.shape, generator=generator, dtype=tensor.dtype)


def seeded(
    *shapes: tuple[int, ...], seed: int = 0, dtype: torch.dtype = torch.float32
) -> Callable[[], Inputs]:
    """A factory of reproducible normal-distributed inputs of the given shapes."""

    def make() -> Inputs:
        generator = torch.Generator().manual_seed(seed)
        return tuple(torch.randn(s, generator=generator, dtype=dtype) for s in shapes)

    return make


def case_from_module(
    name: str,
    module: torch.nn.Module,
    inputs: Sequence[Any] | torch.Tensor,
    **options: Any,
) -> Case:
    """A Case around an already-built module and its call: a tensor, or a sequence of the
    model's arguments (tensors, tuples and lists of them, constant ints and floats)."""
    call = tuple(inputs) if isinstance(inputs, (tuple, list)) else inputs
    flatten_call(call)  # bad input is refused here, where the caller passed it
    return Case(name=name, model=lambda: module, inputs=lambda: call, **options)
