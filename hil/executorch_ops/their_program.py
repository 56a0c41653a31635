"""Their program: ExecuTorch's own pipeline builds it, hil runs it and gives the verdict.

A test that edits its pipeline beyond what hil's recipes take as options (a partitioner check
added with `change_args("to_edge_transform_and_lower", additional_checks=[...])`, another
lowering route) describes a program hil's recipe does not make. Rather than re-implement each
edit, hil builds that program with their code:

    their pipeline class, the test's arguments, every edit the test made (in its order)
      -> their stages up to to_executorch (their own stage checks included, by their code),
         minus `run_method_and_compare_outputs*`: the run and the comparison are hil's
      -> the artifact: their .pte, each delegate's TOSA graph (the TOSA backend's output),
         the rest of the program as the host program, the partition report
      -> hil's check on the target (deploy, run, verdict), keyed by their program's digest

The partitioner's checks run in the test's process, on the test's own objects: a
`DontPartition` reports `has_rejected_node()` and logs its rejection, as in their harness.
Their lowering runs in every run (it is the test's to make); only the store's work after it is
served from the cache.

Where it answers: a TosaPipelineFP on a TOSA FP reference target (tosa-fp-ref), whose program
that target runs as it is. Their TosaPipelineINT program is for the generic TOSA INT profile
and their EthosU85PipelineINT one for an ethos-u85-128 with Shared_Sram: neither is the
program u85-ref is configured to run, so those edits are refused by name (runner).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hil.artifacts.code_key import code_key
from hil.artifacts.store import ExportProduct
from hil.case import BuiltCase, Case
from hil.errors import ExportError
from hil.executorch_ops.calls import PipelineCall
from hil.recipes.arm_lowered import DELEGATES
from hil.recipes.arm_partition import lowered_modules, missing_cpu_kernels, partition_report
from hil.recipes.delegate_files import TOSA_FILE
from hil.recipes.host_program import host_program, save_host_program
from hil.recipes.tosa import TosaFpRecipe
from hil.session.random_stream import random_stream_kept
from hil.session.resolved import Resolved
from hil.verdict.result import CheckResult

# (their pipeline, hil's recipe) whose program the recipe's targets run as their pipeline built it
ANSWERS = {("TosaPipelineFP", "tosa-fp")}
RUN_STAGE = "run_method_and_compare_outputs"  # theirs: the run and comparison hil replaces


def answers(call: PipelineCall, recipe: str) -> bool:
    """Whether their pipeline builds this call's program for `recipe`'s target. Not yet their
    to_edge-then-partition route (`use_to_edge_transform_and_lower=False`): measured on
    misc/test_lifted_tensor, the host program hil makes of it asks for the lifted constant as
    an input (TypeError in the run), so it is refused by name until that is fixed."""
    other_route = call.option("use_to_edge_transform_and_lower", True) is False
    return (call.pipeline, recipe) in ANSWERS and call.their is not None and not other_route


@dataclass
class Built:
    """Their pipeline after its build stages, and what hil takes from it."""

    pipeline: Any
    program: Any  # their lowered edge program, as their lowering stage left it
    partitioner: Any
    pte: bytes  # their to_executorch's program

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.pte).hexdigest()


def build(call: PipelineCall) -> Built:
    """Their pipeline as the test built and edited it, run to its program (their checks too).
    The lowered program is copied as their lowering stage leaves it: their to_executorch
    rewrites it in place (out-variants, memory plan), and hil runs it from the edge program."""
    import copy

    from executorch.backends.test.harness.stages import StageType

    assert call.their is not None
    pipeline = call.their.make()
    for edit in call.edits:
        edit.apply(pipeline)
    for stage in [s.id for s in pipeline._stages if s.id.split(".")[0] == RUN_STAGE]:
        pipeline.pop_stage(stage)
    lowering = next(
        (s for s in ("to_edge_transform_and_lower", "partition") if pipeline.has_stage(s)), None
    )
    kept: list[Any] = []

    def keep_lowered_program() -> None:
        stage = pipeline.tester.stages[
            StageType.TO_EDGE_TRANSFORM_AND_LOWER
            if lowering == "to_edge_transform_and_lower"
            else StageType.PARTITION
        ]
        partitioners = getattr(stage, "partitioners", None) or [stage.partitioner]
        kept.append((copy.deepcopy(stage.artifact.exported_program()), partitioners[0]))

    if lowering is not None:
        pipeline.add_stage_after(lowering, keep_lowered_program)
    pipeline.run()  # their stage checks fail the test as in their harness
    call.their_pipeline = pipeline
    executorch = pipeline.tester.stages[StageType.TO_EXECUTORCH]
    if not kept or executorch is None:
        raise ExportError(
            f"{call.pipeline}: the test's pipeline made no lowered program (its stages: "
            f"{[s.id for s in pipeline._stages]})",
            fix="hil judges a program: the test must keep its lowering and to_executorch stages",
        )
    program, partitioner = kept[0]
    return Built(pipeline, program, partitioner, bytes(executorch.artifact.buffer))


def serialized_digest(pipeline: Any) -> str | None:
    """sha256 of the .pte their pipeline's serialize stage holds (else its to_executorch
    stage's buffer): read from their stage, apart from the bytes hil took (Built.pte), so that
    a record can show the program hil judged is the one their pipeline made."""
    from executorch.backends.test.harness.stages import StageType

    stages = pipeline.tester.stages
    serialized = stages.get(StageType.SERIALIZE)
    if serialized is not None and serialized.artifact is not None:
        return hashlib.sha256(bytes(serialized.artifact)).hexdigest()
    executorch = stages.get(StageType.TO_EXECUTORCH)
    if executorch is None:
        return None
    return hashlib.sha256(bytes(executorch.artifact.buffer)).hexdigest()


class TheirTosaFp(TosaFpRecipe):
    """The tosa-fp recipe's artifact, made from their pipeline's program instead of hil's
    lowering: its key is their program's digest (and this module's code), its files are the
    ones the tosa-fp recipe keeps, so tosa-fp-ref runs it as any tosa-fp artifact."""

    def __init__(self, options: Mapping[str, Any], built: Built) -> None:
        super().__init__(options)
        self.built = built

    def key_material(self) -> Mapping[str, Any]:
        return {
            **super().key_material(),
            "their_program": self.built.sha256,
            "built_by": code_key(__name__),
        }

    def export(self, built: BuiltCase, workdir: Path) -> ExportProduct:
        program = self.built.program
        lowered = lowered_modules(program)
        names = [f"delegate_{i}" for i in range(len(lowered))]
        for name, module in zip(names, lowered, strict=True):
            folder = workdir / DELEGATES / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / TOSA_FILE).write_bytes(bytes(module.processed_bytes))
        pte = self.built.pte
        report = partition_report(program, self.built.partitioner, len(pte), backend="TOSA")
        report = replace(report, missing_kernels=missing_cpu_kernels(pte))
        save_host_program(host_program(program, lambda i, _: names[i]), workdir)
        details = dict(self._details(names, lowered, report, workdir))
        details["built_by"] = f"their {type(self.built.pipeline).__name__}"
        return ExportProduct(pte=pte, details=details)


def check(
    session: Any, call: PipelineCall, case: Case, target: str, options: Mapping[str, Any]
) -> CheckResult:
    """Their program, built now, checked on `target` as hil checks any artifact."""
    built = build(call)
    spec = session.devices.get(target)
    recipe = TheirTosaFp({**spec.recipe("tosa-fp").options, **options}, built)
    with random_stream_kept():
        result: CheckResult = session._check_once(Resolved(case, spec, recipe), None)
    return result
