"""The recipe contract: a PyTorch module plus inputs in, a .pte and its facts out
(hil.artifacts.store.ExportProduct, the store's input, is what a recipe hands over)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from hil.artifacts.code_key import code_key
from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase
from hil.errors import UsageError
from hil.speedups import switch as speedups
from hil.verdict.tolerances import StepAllowance


class Recipe(ABC):
    """Lowers a model for one backend configuration. Options come from the device spec."""

    name: ClassVar[str]
    # "fp32", "int8", "a16w8" (16-bit activations, int8 weights) or "a8w4" (4-bit weights); a
    # class default that a recipe may refine per instance from its options.
    numerics: str
    option_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    # A quantized recipe's backend: how far its correct kernels may be from the quantized
    # PyTorch model on one layer (measured, with the reason), per numerics; none for float.
    step_allowances: ClassVar[Mapping[str, StepAllowance]] = MappingProxyType({})

    @property
    def step_allowance(self) -> StepAllowance | None:
        return self.step_allowances.get(self.numerics)

    def __init__(
        self, options: Mapping[str, Any] | None = None, *, shared_dir: Path | None = None
    ) -> None:
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.option_defaults))
        if unknown:
            known = ", ".join(sorted(self.option_defaults)) or "none"
            raise UsageError(
                f"recipe {self.name!r} has no option(s) {', '.join(unknown)}; it takes: {known}"
            )
        self.options: Mapping[str, Any] = MappingProxyType({**self.option_defaults, **given})
        # Where recipes may keep intermediates shared between artifacts (e.g. a quantized model
        # several recipes lower); None: share nothing. Not part of the cache key.
        self.shared_dir = shared_dir
        self.validate()

    def validate(self) -> None:  # noqa: B027 - optional hook, most recipes need no checks
        """Check option values; raise UsageError naming the option. Override where needed."""

    def key_material(self) -> Mapping[str, Any]:
        """What about this recipe changes the .pte: its name, options, its own code and every
        hil module it can run (hil.artifacts.code_key: a docstring or comment edit re-exports
        nothing), and which of hil's speed-ups to torch may be in place (hil.speedups.switch)."""
        return {
            "recipe": self.name,
            "options": dict(self.options),
            "code": code_key(type(self).__module__),
            "speedups": speedups.declared(),
        }

    @property
    def quantized(self) -> bool:
        return self.numerics != "fp32"

    @abstractmethod
    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        """Lower `built.module` to a .pte; raise ExportError with the exporter's message."""
