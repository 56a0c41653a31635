"""The operators a runner's ExecuTorch registers, as the driver checks a program against them
before sending it (hil.sdk builds the runner and writes the list; hil.sdk.kernels reads it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hil.errors import MissingKernel


@dataclass(frozen=True)
class KernelList:
    """An SDK's registered operators: what decides MISSING KERNEL on its board."""

    operators: frozenset[str]
    available: frozenset[str]  # every operator its ExecuTorch tree has a kernel for
    rebuild: str  # `hil sdk build ...` of this SDK
    path: Path

    def missing_for(self, name: str, pte: Path, used: Iterable[str]) -> MissingKernel | None:
        """The MissingKernel of a program calling `used` on this SDK's runner, or None."""
        missing = sorted(set(used) - self.operators)
        if not missing:
            return None
        selectable = [op for op in missing if op in self.available]
        absent = [op for op in missing if op not in self.available]
        said = []
        if selectable:
            said.append(f"{', '.join(selectable)} not selected when the SDK was built")
        if absent:
            said.append(f"{', '.join(absent)} in no kernel library of its ExecuTorch")
        fix = (
            f"rebuild the SDK with this program's kernels: {self.rebuild} --ops-from suites {pte}"
            if selectable
            else "export the model without that operator, or give ExecuTorch a kernel for it"
        )
        return MissingKernel(
            f"{name}: the runner's ExecuTorch has no kernel for {', '.join(missing)} "
            f"({'; '.join(said)}; {self.path})",
            operator=missing[0],
            fix=fix,
        )
