"""A Session runs checks: the target pool, the references, and the check between them.

    case -> recipe -> artifact cache -> target (provisioned once) -> compare -> budgets -> result

A check's names (its case, a target's name, a recipe choice) are resolved once, into one
Resolved (hil.session.resolved) that every step of the check takes.

The pool (hil.session.pool) provisions targets once and remembers a failed one's first cause;
the references (hil.session.references) build cases, eager outputs and artifacts once. A check
that fails on the infrastructure is retried `retries` times (hil.session.retries); verdicts on
the model never are.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from hil.arrays import Array, save_check_arrays
from hil.artifacts.keys import export_source
from hil.artifacts.store import Artifact, ArtifactCache
from hil.case import BuiltCase, Case, Inputs
from hil.device_search import find_devices
from hil.devices import DeviceRegistry, DeviceSpec, RecipeSpec
from hil.errors import (
    HilError,
    InfrastructureError,
    InfrastructureRecovered,
    TargetCrash,
)
from hil.paths import default_cache_dir, default_results_dir
from hil.progress import Progress
from hil.recipes import Recipe, make_recipe
from hil.runner.driver import DeviceTrace
from hil.session.beside_eager import run_beside_eager
from hil.session.lowered import lowered_reference
from hil.session.pool import TargetPool
from hil.session.prefetch import ExportPool, default_workers, plan
from hil.session.random_stream import random_stream_kept
from hil.session.references import References, time_eager
from hil.session.resolved import Resolved
from hil.session.retries import Attempts, check_with_retries
from hil.targets import Target
from hil.targets.base import Deployment
from hil.verdict.altered import alterations
from hil.verdict.budgets import BudgetKind, budget_for
from hil.verdict.judge import Observation, RecipeFacts, judge
from hil.verdict.result import CheckResult

log = logging.getLogger("hil.session")
# runs of a profile from the device's ETDump (each instruction's time is their median): the
# device's own min_runs (an FVP's runs are slow), at most this
PROFILE_RUNS = 5

OutputRewrite = Callable[[tuple[Array, ...]], Sequence[Array]]
# A recipe of the device file by name (None: its first), or a variant of one (RecipeSpec).
RecipeChoice = str | RecipeSpec | None


class Session:
    """Runs checks; usable from scripts, notebooks and the pytest plugin alike."""

    def __init__(
        self,
        *,
        devices: DeviceRegistry | None = None,
        cache_dir: str | Path | None = None,
        results_dir: str | Path | None = None,
        progress: Progress | None = None,
        retries: int = 0,
        explain: bool = False,
        profile: bool = True,
    ) -> None:
        self._devices = devices
        self.results_dir = Path(results_dir) if results_dir else default_results_dir()
        self.progress: Progress = progress or (lambda message: log.info("%s", message))
        self.targets = TargetPool(lambda: self.devices, self.progress)
        cache = ArtifactCache(Path(cache_dir) if cache_dir else default_cache_dir())
        self.references = References(cache, self.progress)
        self.retries = retries  # infrastructure failures retried per check
        self.explain = explain  # find the first divergent operator on passing checks too
        self.profile = profile  # each check on a runner target: per-operator time (its ETDump)
        self.last_attempts: Attempts | None = None  # every attempt of the latest check
        self._ahead: ExportPool | None = None  # exports made ahead (export_ahead)

    # -- the parts: one-line doors for scripts and fixtures ----------------------------------

    @property
    def devices(self) -> DeviceRegistry:
        if self._devices is None:  # found lazily: no file system probing in the constructor
            self._devices = find_devices().registry
        return self._devices

    @property
    def cache(self) -> ArtifactCache:
        return self.references.cache

    def target(self, name: str) -> Target:
        """The provisioned target; provisioned on first use, its first failure remembered."""
        return self.targets.get(name)

    def broken_cause(self, name: str) -> HilError | None:
        return self.targets.broken_cause(name)

    def board_of(self, name: str) -> str | None:
        return self.targets.board_of(name)

    def built(self, case: Case) -> BuiltCase:
        return self.references.built(case)

    def artifact(self, built: BuiltCase, recipe: Recipe, *, export: bool = True) -> Artifact:
        return self.references.artifact(built, recipe, export=export)

    # -- the check ------------------------------------------------------------------------

    def check(
        self,
        case: Case,
        target: str,
        recipe: RecipeChoice = None,
        *,
        rewrite_outputs: OutputRewrite | None = None,
    ) -> CheckResult:
        """Export, deploy, run and judge one case on one target with one recipe: a recipe
        name of the device file, or a RecipeSpec naming one with options that replace some of
        the device's (a variant: another quantization of the same recipe, another artifact).

        A runner crash drops the target, so the next check provisions it afresh; any other
        infrastructure failure (lost link, hang) takes the target out of service for the session,
        unless the target recovered by itself (InfrastructureRecovered). Infrastructure failures
        are retried `self.retries` times; `last_attempts` keeps every attempt.

        `rewrite_outputs` changes the target's outputs before they are judged and stored, the
        way a kernel bug would (fault-injection benches and tests: bench/mutants.py).
        """
        resolved: list[Resolved] = []  # once, by the first attempt (its errors are attempts too)

        def once() -> CheckResult:
            if not resolved:
                resolved.append(self.resolve(case, target, recipe))
            return self._check_once(resolved[0], rewrite_outputs)

        with random_stream_kept():
            result, error, self.last_attempts = check_with_retries(
                self.targets, case, target, recipe, once, self.retries
            )
        if error is not None:
            raise error
        assert result is not None
        return result

    def _check_once(self, check: Resolved, rewrite: OutputRewrite | None) -> CheckResult:
        try:
            return self._check(check, rewrite)
        except TargetCrash:
            self.targets.drop(check.target)
            raise
        except InfrastructureRecovered:
            raise  # the target is in service again (power-cycled, another board)
        except InfrastructureError as e:
            self.targets.mark_broken(check.target, e)
            raise

    def resolve(self, case: Case, target: str, recipe: RecipeChoice = None) -> Resolved:
        """The check's names resolved: the target's device file and the recipe object."""
        spec = self.devices.get(target)
        return Resolved(case, spec, self._recipe(spec, recipe))

    def _recipe(self, spec: DeviceSpec, recipe: RecipeChoice) -> Recipe:
        if isinstance(recipe, RecipeSpec):  # a variant: the device's recipe, some options changed
            options = {**spec.recipe(recipe.name).options, **recipe.options}
            return make_recipe(recipe.name, options, shared_dir=self.cache.root / "shared")
        recipe_spec = spec.recipe(recipe) if recipe else spec.recipes[0]
        return make_recipe(
            recipe_spec.name, recipe_spec.options, shared_dir=self.cache.root / "shared"
        )

    def export(self, case: Case, target: str, recipe: RecipeChoice = None) -> Artifact:
        """The case's artifact for `target`'s recipe, from the cache or exported now (or by
        a worker, after export_ahead); no target is provisioned."""
        check = self.resolve(case, target, recipe)
        with random_stream_kept():
            return self._artifact(check, self.references.built(case))

    def _artifact(self, check: Resolved, built: BuiltCase) -> Artifact:
        """The artifact, after its export made ahead (if any) is done: one a worker made in
        this run is reported as exported now (with the worker's time) to the first check."""
        case, recipe = check.case, check.recipe
        made_ahead = None
        if self._ahead is not None:
            made_ahead = self._ahead.wait_for(case, export_source(case.name, recipe.key_material()))
        artifact = self.references.artifact(built, recipe)
        if made_ahead is not None and not artifact.exported_now:
            return replace(artifact, exported_now=True, export_seconds=made_ahead)
        return artifact

    def export_ahead(
        self, checks: Sequence[tuple[Case, str, RecipeChoice]], workers: int | None = None
    ) -> None:
        """Start exporting what `checks` (in the order they will run) need, in `workers`
        processes (default: one per core; 0 or 1 check: nothing). Call it before the first
        check: the workers are forked from this process (hil.session.prefetch)."""
        count = default_workers() if workers is None else workers
        if count < 1 or self._ahead is not None:
            return
        exports = [
            e for e in plan(checks, self._export_source) if not self.cache.probably_cached(e.source)
        ]
        if len(exports) < 2:  # a warm run forks nothing
            return
        self._ahead = ExportPool(
            exports,
            lambda e: self.export(e.case, e.target, e.recipe),
            count,
            self.results_dir / "export-workers",
            self.progress,
        )

    def probably_cached(self, case_name: str, target: str, recipe: RecipeChoice = None) -> bool:
        """Whether the case's last artifact for `target`'s recipe is in the cache, judged by
        its name alone (the case need not be built): what a plan may skip."""
        return self.cache.probably_cached(self._source_of(case_name, target, recipe))

    def _export_source(self, case: Case, target: str, recipe: RecipeChoice) -> str:
        return self._source_of(case.name, target, recipe)

    def _source_of(self, case_name: str, target: str, recipe: RecipeChoice) -> str:
        material = self._recipe(self.devices.get(target), recipe).key_material()
        return export_source(case_name, material)

    def _check(self, check: Resolved, rewrite: OutputRewrite | None) -> CheckResult:
        case, spec, recipe_obj = check.case, check.spec, check.recipe
        device = self.targets.get(check.target)  # first: a missing target must not cost an export
        built = self.references.built(case)
        artifact = self._artifact(check, built)
        reference = self.references.eager(built)
        deployment = device.deploy(artifact)
        budget = budget_for(case, spec, recipe_obj.name)
        policy = case.timing or spec.latency.policy
        windows = 1
        if (
            budget is not None
            and budget.kind is BudgetKind.VS_EAGER
            and budget.limit is not None
            and not reference.unavailable
        ):
            timed = run_beside_eager(
                lambda: device.run(deployment, built.inputs, policy),
                lambda: time_eager(built),
                budget,
            )
            run, windows = timed.run, timed.windows
            reference = replace(reference, beside=timed.eager)
        else:
            run = device.run(deployment, built.inputs, policy)
        lowered = lowered_reference(device, spec, deployment, artifact, built.inputs, run.outputs)
        if rewrite is not None:
            run = replace(run, outputs=tuple(rewrite(run.outputs)))
        if reference.written and len(run.outputs) == len(reference.outputs) + len(
            reference.written
        ):  # the program returns the inputs it wrote first: judged too, against eager's writes
            reference = replace(reference, outputs=reference.written + reference.outputs)
        name = check.file_stem
        arrays, arrays_sha256 = save_check_arrays(
            self.results_dir / "arrays" / f"{name}.npz",
            input=built.inputs,
            reference=reference.outputs,
            output=run.outputs,
            quantized_reference=artifact.quantized_reference() or (),
            lowered=lowered.outputs if lowered else (),
        )
        seen = Observation(
            outputs=run.outputs,
            timings_us=run.timings_us,
            timing=run.timing,
            timing_windows=windows,
            counters=run.counters,
            deploy_bytes=deployment.bytes_sent,
            log=run.log,
            target_info=device.describe(),
            device_kernels=device.capabilities.runs_device_kernels,
            not_the_model=run.not_the_model,
            lowered=lowered,
        )
        result = judge(built, spec, RecipeFacts.of(recipe_obj), artifact, reference, seen, arrays)
        result = replace(result, arrays_sha256=arrays_sha256)
        altered = alterations(seen.target_info, rewritten=rewrite is not None)
        if altered:
            result = replace(result, altered=altered)
        if self.profile and device.capabilities.records_etdump:
            result = self._profiled(result, device, deployment, built, artifact, spec)
        if rewrite is not None and not result.outputs_ok:
            result = replace(
                result,
                explained="first divergent operator: not looked for, the "
                "outputs were rewritten after the run (fault injection)",
            )
        elif self.explain or not result.outputs_ok:
            device_run = (
                functools.partial(self._trace, device, spec.name, deployment, built.inputs)
                if device.capabilities.records_etdump
                else None
            )
            result = self._explained(result, built, artifact, recipe_obj, spec, name, device_run)
        return result

    def _profiled(
        self,
        result: CheckResult,
        device: Target,
        deployment: Deployment,
        built: BuiltCase,
        artifact: Artifact,
        spec: DeviceSpec,
    ) -> CheckResult:
        """The result with each instruction's time from the device's own ETDump, recorded in
        runs apart from the judged ones; without, why not. Never changes the verdict."""
        from hil.explain.profile import profile_of

        try:
            runs = max(1, min(PROFILE_RUNS, spec.latency.policy.min_runs))
            trace = self._trace(device, spec.name, deployment, built.inputs, 0, runs)
            profile = profile_of(trace, artifact.pte_path, *device.clock_of(trace))
        except HilError as e:  # the judged runs are over: their verdict stands either way
            return replace(result, profiled=f"no per-operator time: {e.message}")
        return replace(result, profile=profile)

    def _trace(
        self,
        device: Target,
        name: str,
        deployment: Deployment,
        inputs: Inputs,
        debug_bytes: int,
        runs: int = 1,
    ) -> DeviceTrace:
        """A run of the device with its ETDump recorder; a runner that crashed or a link lost
        on the way takes the target down, so the next check provisions it afresh."""
        try:
            return device.trace(deployment, inputs, debug_bytes, runs)
        except (TargetCrash, InfrastructureError):
            self.targets.drop(name)
            raise

    def _explained(
        self,
        result: CheckResult,
        built: BuiltCase,
        artifact: Artifact,
        recipe: Recipe,
        spec: DeviceSpec,
        name: str,
        device_run: Callable[[int], DeviceTrace] | None = None,
    ) -> CheckResult:
        """The result with its first divergent operator, whose per-node errors are written
        where `hil explore` looks for them (<results>/node-errors/<case>--<target>--<recipe>).
        `device_run`: the target's explaining run with ETDump (debug-buffer bytes in)."""
        from hil.explain.dispatch import explain_check

        self.progress(f"{built.case.name} on {spec.name}: looking for the first divergent operator")
        divergence, why = explain_check(
            built,
            artifact,
            recipe,
            spec,
            self.results_dir / "explain" / name,
            self.cache.root / "shared",
            result.log,
            device_run,
        )
        if divergence is not None:
            path = self.results_dir / "node-errors" / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(divergence.to_node_errors(artifact.sha256), indent=2))
        return replace(result, divergence=divergence, explained=why)

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None
        self.targets.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
