"""One test's pipeline.run(), answered by hil: variant, check, their assertions, their rule.

    their pipeline call -> (target, recipe) chosen at collection, variant from the call
      -> hil.Session.check (export, deploy, run, hil's verdict)
      -> their stage assertions on hil's lowering (hil.executorch_ops.stages)
      -> their qtol rule on the same arrays (hil.executorch_ops.their_rule)
      -> one record (hil's, with an "executorch" part), then raise what failed

A test whose edits change the program beyond hil's recipe options (call.unapplied) has its
program built by their own pipeline where a target runs that program as it is
(hil.executorch_ops.their_program: their stage checks run by their code); on an Ethos-U
target, an edit that only adds partitioner checks is made on hil's own lowering with the
test's objects (hil.executorch_ops.checked); on a host target (XNNPACK, portable) such an
edit is an Arm partitioner's and not applicable there (the record says so; the case is judged
for its outputs only); elsewhere it is NOT JUDGED, the skip naming each edit. No edit is
recorded and silently left out.

A failed hil verdict fails the test as any hil check does; a judged stage assertion that
does not hold fails it as a partition mismatch. A case ExecuTorch's own tests mark as an
expected failure (their xfails, not the "no FVP" ones) is an expected failure here too when hil
fails it as a test fails (with both sides' reasons), and a pass, listed as a difference, when
hil passes it. NOT JUDGED and the pipelines, targets and
variants hil cannot honour are skips that say why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from hil.case import Case, case_from_module
from hil.devices import RecipeSpec
from hil.errors import TEST_FAILURES, HilError, PartitionMismatch, TargetUnavailable
from hil.executorch_ops import checked, mapping, stages, their_program, their_rule
from hil.executorch_ops.calls import PipelineCall
from hil.plugin.state import RECORD_KEY, HilState
from hil.plugin.state import Variant as HilVariant

EXTRA = "executorch"  # the record's key for what this plugin adds
# the option: every program their pipeline can build for the target, built by it (not only
# those whose edits hil's recipe does not make); the proof that hil judges their program
THEIR_PROGRAM = "hil_their_program"


@dataclass(frozen=True)
class Choice:
    """The target and recipe one collected item runs on; `recipe` None: none fits (`reason`)."""

    target: str
    recipe: str | None
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.target}-{self.recipe}" if self.recipe else f"{self.target}-unfit"

    def __repr__(self) -> str:
        return self.id


@dataclass
class CaseRunner:
    """Answers the pipelines of one test item."""

    item: pytest.Item
    state: HilState
    choice: Choice
    case_name: str
    their_xfail: str | None = None
    noting: list[tuple[Case, str, str | RecipeSpec | None]] | None = None  # the look-ahead
    runs: int = 0  # the test's pipeline runs so far

    def __call__(self, call: PipelineCall) -> None:
        self.runs += 1
        recipe = self.choice.recipe
        if call.pipeline in mapping.NOT_ANSWERED or recipe is None:
            why = self.choice.reason or mapping.fit_reason(call.pipeline, [self.choice.target])
            pytest.skip(why)
        spec = self.state.registry.get(self.choice.target)
        if recipe not in mapping.recipes_for(call.pipeline, spec):
            pytest.skip(mapping.fit_reason(call.pipeline, [self.choice.target]))
        recipe = mapping.call_recipe(call, recipe)
        if recipe not in spec.recipe_names:
            pytest.skip(
                f"{call.pipeline} asks for hil's {recipe} recipe, which "
                f"{self.choice.target} does not list"
            )
        if (subset := mapping.subset_reason(call, spec, self.choice.target)) is not None:
            pytest.skip(subset)
        variant = mapping.variant_of(call, recipe)
        if variant.unsupported:
            pytest.skip(f"{call.pipeline} [{variant.label}]: {variant.unsupported}")
        theirs, ours = mapping.their_cpu(call), spec.recipe(recipe).options.get("cpu")
        if theirs is not None and ours is not None and theirs != ours:
            pytest.skip(
                f"{call.pipeline}: the test is for the {theirs}, {self.choice.target}'s "
                f"{recipe} recipe for the {ours}"
            )
        always = bool(self.item.config.getoption(THEIR_PROGRAM, False))
        by_them = (bool(call.unapplied) or always) and their_program.answers(call, recipe)
        checks = checked.checks_of(call) if recipe == checked.RECIPE else None
        name = self._run_name()
        elsewhere = stages.not_arm(recipe) and checked.checks_of(call) is not None
        if call.unapplied and not by_them and checks is None and not elsewhere:
            pytest.skip(
                f"{name}: NOT JUDGED: the test changes {'; '.join(call.unapplied)}, which hil "
                f"does not apply on {self.choice.target} ({recipe} recipe); hil builds such a "
                "program with their own pipeline only where the target runs it as it is "
                f"({', '.join('/'.join(a) for a in sorted(their_program.ANSWERS))})"
            )
        # calibrated as their harness calibrates: on the test's own samples, else on the
        # test's inputs alone (an operator defined on positive inputs gets positive ones)
        samples = call.option("calibration_samples")
        given = list(samples) if samples is not None else [call.inputs]
        case = case_from_module(name, call.module, call.inputs, calibration=lambda: given)
        chosen: str | RecipeSpec = variant.recipe(recipe) if variant.options else recipe
        if self.noting is not None:
            if not by_them and checks is None:  # built in the test's own run
                self.noting.append((case, self.choice.target, chosen))
            return  # the body goes on: a test that runs pipelines in a loop notes them all
        self._check(call, case, chosen, variant, recipe, by_them, checks)

    def _run_name(self) -> str:
        """The test's name; a second pipeline run in the same test (a loop over samples)
        is `name#2`, and so on: each its own record and artifact."""
        return self.case_name if self.runs == 1 else f"{self.case_name}#{self.runs}"

    def _quantized(self, case: Case, chosen: str | RecipeSpec) -> bool:
        """Whether the program quantizes something (its export, made now or cached, says): only
        then does the test's bar for the quantized model apply, never to a float program's
        target check. An export that fails is left to the check, which reports it."""
        try:
            artifact = self.state.session.export(case, self.choice.target, chosen)
        except HilError:
            return False
        return bool(artifact.quantized_ops)

    def _check(
        self,
        call: PipelineCall,
        case: Case,
        chosen: str | RecipeSpec,
        variant: mapping.Variant,
        recipe: str,
        by_them: bool = False,
        checks: list[Any] | None = None,
    ) -> None:
        session, target = self.state.session, self.choice.target
        hil_variant = HilVariant(case.name, case, target, recipe)
        earlier = session.broken_cause(target)
        try:
            session.target(target)
        except TargetUnavailable as e:
            if self.state.options.require:
                pytest.fail(f"target {target} is required but unavailable: {e}", pytrace=False)
            pytest.skip(f"target {target} unavailable: {e}")
        except HilError as e:
            if earlier is not None:
                pytest.skip(
                    f"target {target} is out of service since an earlier failure: {earlier}"
                )
            self._record_error(hil_variant, e, call, variant)
            raise
        bar = mapping.quantization_bar(call)
        if bar is not None and not by_them and self._quantized(case, chosen):
            case = replace(case, tolerance=bar)
        try:
            if by_them:
                result = their_program.check(session, call, case, target, variant.options)
            elif checks is not None:
                result = checked.check(session, call, case, target, variant.options, checks)
            else:
                result = session.check(case, target, chosen)
        except HilError as e:
            self._record_error(hil_variant, e, call, variant)
            self._expected(e)
            raise
        numerics = mapping.numerics(call.pipeline, call.options)
        # their program: their stage checks ran in their pipeline, by their code
        judged = (
            []
            if by_them
            else stages.evaluate(call.assertions, result.artifact, recipe, call.pipeline)
        )
        if stages.not_arm(recipe):  # an Arm partitioner's checks: not this backend's
            judged += stages.edits_not_applicable(call.unapplied, recipe)
        theirs = their_rule.their_verdict(call, numerics, result.arrays_path, result.artifact)
        record = result.to_record()
        record[EXTRA] = self._extra(call, variant, judged, theirs, checks)
        record[EXTRA]["arm_lowering"] = not stages.not_arm(recipe)
        self.item.user_properties.append((RECORD_KEY, record))
        self.item.config.hook.pytest_hil_result(item=self.item, result=result, record=record)
        try:
            result.raise_for_failures(allow_not_judged=True)  # the outcome hook reports it
        except HilError as e:
            self._expected(e)
            raise
        failed = [c for c in judged if c.status == stages.FAILED]
        if failed and self.their_xfail:
            # their expected failure qualifies their own assertions (hil's verdict held)
            pytest.xfail(
                f"ExecuTorch expects it ({self.their_xfail}): "
                + "; ".join(f"{c.assertion.check}.{c.assertion.after}: {c.note}" for c in failed)
            )
        if failed:
            raise PartitionMismatch(
                f"{case.name} on {target}: their stage assertions do not hold on hil's "
                "lowering: "
                + "; ".join(f"{c.assertion.check}.{c.assertion.after}: {c.note}" for c in failed),
                fix="the operator is lowered otherwise than the test asserts: see the "
                "partition report (hil explore) or correct the assertion",
            )
        if result.verdict == "NOT JUDGED":
            message = result.not_judged_message() or "NOT JUDGED"
            if self.state.options.require:
                pytest.fail(f"--hil-require: {message}", pytrace=False)
            pytest.skip(message)

    def _expected(self, error: HilError) -> None:
        """A test failure (a verdict, an export, a missing kernel) of a case ExecuTorch itself
        expects to fail is that expected failure: xfail, with both sides' words. A lost link
        or a crash never is."""
        if self.their_xfail and isinstance(error, TEST_FAILURES):
            first = error.message.splitlines()[0]
            pytest.xfail(f"ExecuTorch expects it ({self.their_xfail}); hil: {first}")

    def _extra(
        self,
        call: PipelineCall,
        variant: mapping.Variant,
        checked: list[stages.StageResult],
        theirs: their_rule.TheirVerdict,
        checks: list[Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "pipeline": call.pipeline,
            "variant": variant.label,
            "test": self.item.nodeid,
            "their_rule": theirs.word,
            "their_rule_detail": theirs.detail,
            "their_rule_max_error": theirs.max_error,
            "their_rule_allowed": theirs.allowed,
            "their_xfail": self.their_xfail,
            "stage_assertions": [c.to_record() for c in checked],
            "accepted_not_run": sorted(set(call.accepted)),
            "built_by": "their pipeline"
            if call.their_pipeline is not None
            else "hil's recipe with the test's partitioner checks"
            if checks
            else "hil's recipe",
            "their_edits": list(call.unapplied),
            # their serialize stage's .pte digest, beside the artifact's (record["artifact"])
            "their_pte_sha256": their_program.serialized_digest(call.their_pipeline)
            if call.their_pipeline is not None
            else None,
        }

    def _record_error(
        self, hil_variant: HilVariant, error: HilError, call: PipelineCall, variant: mapping.Variant
    ) -> None:
        from hil.plugin.records import error_record

        record = error_record(hil_variant, error)
        record[EXTRA] = {
            "pipeline": call.pipeline,
            "variant": variant.label,
            "test": self.item.nodeid,
            "their_rule": "n/a",
            "their_xfail": self.their_xfail,
        }
        self.item.user_properties.append((RECORD_KEY, record))
        self.item.config.hook.pytest_hil_error(item=self.item, record=record, error=error)


RunnerFactory = Callable[[pytest.Item], CaseRunner]
