"""hil's ethos-u recipe with the test's own partitioner checks, lowered in the test's process.

`pipeline.change_args("to_edge_transform_and_lower", additional_checks=[DontPartition(op)])`
is an edit of the partitioner, which ExecuTorch's EthosUPartitioner takes as it is
(`additional_checks`). On an Ethos-U target (u85-ref), where their pipeline's own program is
not the one the device runs (their EthosU85PipelineINT compiles for an ethos-u85-128 with
Shared_Sram, their TosaPipelineINT for the generic TOSA INT profile), hil applies that edit to
its own lowering, with the test's very objects:

    the quantized model (hil's, from the shared store)
      -> EthosUPartitioner(the device's compile spec, additional_checks=the test's checks)
         in the test's process: each check sees the nodes, `has_rejected_node()` answers
         and the rejection is logged, as in their harness
      -> the artifact keyed by that program's digest (the store keeps what comes after)

The lowering runs in every run (a check object's state is the test's, made now); a program
equal to one stored is served from the store like any other.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hil.artifacts.code_key import code_key
from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase, Case
from hil.executorch_ops.calls import PipelineCall
from hil.recipes.ethos_u import EthosURecipe
from hil.session.random_stream import random_stream_kept
from hil.session.resolved import Resolved
from hil.verdict.result import CheckResult

LOWERING = "to_edge_transform_and_lower"
RECIPE = "ethos-u"


def checks_of(call: PipelineCall) -> list[Any] | None:
    """The test's partitioner checks, when they are its only edit hil's recipe does not make
    (None: another edit, or none)."""
    changed = call.changed.get(LOWERING, {})
    lowering_only = all(u.startswith(f"{LOWERING}(") for u in call.unapplied)
    if not call.unapplied or not lowering_only or set(changed) != {"additional_checks"}:
        return None
    return list(changed["additional_checks"] or [])


class CheckedEthosU(EthosURecipe):
    """The ethos-u recipe whose partitioner also asks the test's checks; made once in the
    test's process (make), then handed to the store as made."""

    def __init__(
        self, options: Mapping[str, Any], checks: Sequence[Any], *, shared_dir: Path | None
    ) -> None:
        super().__init__(options, shared_dir=shared_dir)
        self.checks = list(checks)
        self._made: tuple[ExportProduct, Path] | None = None

    def make(self, built: BuiltCase) -> None:
        folder = Path(tempfile.mkdtemp(prefix="hil-checked-"))
        self._made = (super().export(built, folder), folder)

    def key_material(self) -> Mapping[str, Any]:
        assert self._made is not None, "make() first"
        return {
            **super().key_material(),
            "partition_checks": [type(c).__name__ for c in self.checks],
            "program": hashlib.sha256(self._made[0].pte).hexdigest(),
            "built_by": code_key(__name__),
        }

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        assert self._made is not None, "make() first"
        product, folder = self._made
        shutil.copytree(folder, workdir, dirs_exist_ok=True)
        return product

    def partition_checks(self) -> list[Any]:
        return self.checks

    def close(self) -> None:
        if self._made is not None:
            shutil.rmtree(self._made[1], ignore_errors=True)


def check(
    session: Any,
    call: PipelineCall,
    case: Case,
    target: str,
    options: Mapping[str, Any],
    checks: Sequence[Any],
) -> CheckResult:
    """The case lowered now with the test's checks, checked on `target` as any artifact."""
    spec = session.devices.get(target)
    recipe = CheckedEthosU(
        {**spec.recipe(RECIPE).options, **options}, checks, shared_dir=session.cache.root / "shared"
    )
    try:
        with random_stream_kept():
            recipe.make(session.built(case))
            result: CheckResult = session._check_once(Resolved(case, spec, recipe), None)
    finally:
        recipe.close()
    return result
