"""A Session ties the data path together for many checks: specs, cache, targets, references.

    case -> recipe -> artifact cache -> target (provisioned once) -> compare -> budgets -> result

Targets are provisioned on first use and reused; a target that failed to provision stays
broken and every later request gets the first cause again, at once (labgrid's never-retry).
A check that fails on the infrastructure is retried `retries` times (hil.session.retries); verdicts
on the model never are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hil.arrays import Array, save_check_arrays
from hil.artifacts.fingerprint import (
    digest_of,
    input_spec,
    model_fingerprint,
    tensors_fingerprint,
    tool_versions,
)
from hil.artifacts.store import Artifact, ArtifactCache
from hil.case import BuiltCase, Case
from hil.devices import DeviceRegistry, TimingPolicy, default_device_dirs
from hil.errors import HilError, InfrastructureError, InfrastructureRecovered, TargetCrash
from hil.recipes import Recipe, export_speedup, make_recipe
from hil.recipes.lowering import run_reference
from hil.session.retries import Attempts, check_with_retries
from hil.targets import Target, make_target
from hil.timing import timed_runs
from hil.verdict.budgets import BudgetKind, LatencyStats, budget_for, latency_stats
from hil.verdict.judge import Observation, Reference, judge
from hil.verdict.result import CheckResult

log = logging.getLogger("hil.session")

EAGER_POLICY = TimingPolicy(warmup=2, min_runs=5, min_time_s=0.05, max_runs=200, max_time_s=2.0)

BUILT_CASES_KEPT = 4

Progress = Callable[[str], None]
OutputRewrite = Callable[[tuple[Array, ...]], Sequence[Array]]


def default_cache_dir() -> Path:
    return Path(os.environ.get("HIL_CACHE_DIR", ".hil/cache"))


def default_results_dir() -> Path:
    return Path(os.environ.get("HIL_RESULTS_DIR", ".hil/results"))


class Session:
    """Runs checks; usable from scripts, notebooks and the pytest plugin alike."""

    def __init__(
        self,
        *,
        devices: DeviceRegistry | None = None,
        cache_dir: Path | None = None,
        results_dir: Path | None = None,
        progress: Progress | None = None,
        retries: int = 0,
    ) -> None:
        self._devices = devices
        self.cache = ArtifactCache(cache_dir or default_cache_dir())
        self.results_dir = results_dir or default_results_dir()
        self.progress: Progress = progress or (lambda message: log.info("%s", message))
        self._targets: dict[str, Target] = {}
        self._broken: dict[str, HilError] = {}
        self._built: dict[str, tuple[Case, BuiltCase]] = {}
        self._eager: dict[str, Reference] = {}
        self._fingerprints: dict[str, str] = {}
        self.retries = retries  # infrastructure failures retried per check
        self.last_attempts: Attempts | None = None  # every attempt of the latest check

    # -- the parts -------------------------------------------------------------------------

    @property
    def devices(self) -> DeviceRegistry:
        if self._devices is None:  # found lazily: no file system probing in the constructor
            self._devices = DeviceRegistry.from_dirs(default_device_dirs())
        return self._devices

    def target(self, name: str) -> Target:
        """The provisioned target; provisioned on first use, its first failure remembered."""
        if name in self._broken:
            raise self._broken[name]
        if name not in self._targets:
            spec = self.devices.get(name)
            target = make_target(spec)
            try:
                with _heartbeat(self.progress, f"provisioning target {name} ({spec.kind})"):
                    target.provision()
            except HilError as e:
                self._broken[name] = e
                target.teardown()
                raise
            self._targets[name] = target
        return self._targets[name]

    def mark_broken(self, name: str, cause: HilError) -> None:
        """Take a target out of service for the rest of the session (first cause wins)."""
        self._broken.setdefault(name, cause)
        self._drop(name)

    def broken_cause(self, name: str) -> HilError | None:
        return self._broken.get(name)

    def reinstate(self, name: str) -> None:
        """Lift an out-of-service mark, so the next use provisions the target afresh (a retry)."""
        self._broken.pop(name, None)
        self._drop(name)

    def board_of(self, name: str) -> str | None:
        """Where the target's next check runs (its labgrid place if it has one, else its
        name); None while it is not provisioned."""
        target = self._targets.get(name)
        return target.describe().get("place", name) if target is not None else None

    def built(self, case: Case) -> BuiltCase:
        """The case's module and inputs, built once while the case is in use.

        Suites run case by case (every target and recipe of a case in a row), so a few recent
        cases are kept and older ones released: a sweep of big models does not pile up in memory.
        """
        memo = self._built.pop(case.name, None)
        if memo is None or memo[0] is not case:
            memo = (case, case.build())
            self._eager.pop(case.name, None)
            self._fingerprints.pop(case.name, None)
        self._built[case.name] = memo  # most recent last
        while len(self._built) > BUILT_CASES_KEPT:
            oldest = next(iter(self._built))
            del self._built[oldest]
            self._eager.pop(oldest, None)
        return memo[1]

    def artifact(self, built: BuiltCase, recipe: Recipe) -> Artifact:
        """The case's .pte for `recipe`, from the cache or exported now."""
        name = built.case.name
        if name not in self._fingerprints:
            self._fingerprints[name] = model_fingerprint(built.module)
        material: dict[str, Any] = {
            "model": self._fingerprints[name],
            "inputs": input_spec(built.inputs),
            **recipe.key_material(),
            "versions": dict(tool_versions()),
        }
        if recipe.quantized:  # calibration and the stored quantized reference depend on values
            material["input_values"] = tensors_fingerprint(built.inputs)
            material["calibration"] = tensors_fingerprint(
                t for sample in built.calibration_or_default() for t in sample
            )
        key = digest_of(material)

        def build(workdir: Path) -> Any:
            export_speedup.install()
            with _heartbeat(self.progress, f"exporting {name} with {recipe.name}"):
                return recipe.export(built, workdir)

        artifact = self.cache.get_or_build(
            key, material, build, recipe=recipe.name, numerics=recipe.numerics
        )
        if artifact.exported_now and artifact.export_seconds >= 5.0:
            self.progress(f"exported {name} with {recipe.name} in {artifact.export_seconds:.1f} s")
        if artifact.rebuilt_because:
            log.warning("rebuilt %s [%s]: %s", name, recipe.name, artifact.rebuilt_because)
        return artifact

    def eager(self, built: BuiltCase) -> Reference:
        """Eager PyTorch outputs (the reference) and eager latency (for comparison tables)."""
        name = built.case.name
        if name not in self._eager:
            outputs = run_reference(built.module, built.inputs)
            self._eager[name] = Reference(outputs, time_eager(built))
        return self._eager[name]

    # -- the check ------------------------------------------------------------------------

    def check(
        self,
        case: Case,
        target: str,
        recipe: str | None = None,
        *,
        rewrite_outputs: OutputRewrite | None = None,
    ) -> CheckResult:
        """Export, deploy, run and judge one case on one target with one recipe.

        A runner crash drops the target, so the next check provisions it afresh; any other
        infrastructure failure (lost link, hang) takes the target out of service for the session,
        unless the target recovered by itself (InfrastructureRecovered). Infrastructure failures
        are retried `self.retries` times; `last_attempts` keeps every attempt.

        `rewrite_outputs` changes the target's outputs before they are judged and stored, the
        way a kernel bug would (fault-injection benches and tests: bench/mutants.py).
        """
        result, error, self.last_attempts = check_with_retries(
            self, case, target, recipe,
            lambda: self._check_once(case, target, recipe, rewrite_outputs),
            self.retries,
        )
        if error is not None:
            raise error
        assert result is not None
        return result

    def _check_once(
        self, case: Case, target: str, recipe: str | None, rewrite: OutputRewrite | None
    ) -> CheckResult:
        try:
            return self._check(case, target, recipe, rewrite)
        except TargetCrash:
            self._drop(target)
            raise
        except InfrastructureRecovered:
            raise  # the target is in service again (power-cycled, another board)
        except InfrastructureError as e:
            self.mark_broken(target, e)
            raise

    def _drop(self, name: str) -> None:
        target = self._targets.pop(name, None)
        if target is not None:
            target.teardown()

    def _check(
        self, case: Case, target: str, recipe: str | None, rewrite: OutputRewrite | None
    ) -> CheckResult:
        spec = self.devices.get(target)
        recipe_spec = spec.recipe(recipe) if recipe else spec.recipes[0]
        recipe_obj = make_recipe(
            recipe_spec.name, recipe_spec.options, shared_dir=self.cache.root / "shared"
        )
        device = self.target(target)  # first: a missing target must not cost an export
        built = self.built(case)
        artifact = self.artifact(built, recipe_obj)
        reference = self.eager(built)
        deployment = device.deploy(artifact)
        budget = budget_for(case, spec, recipe_obj.name)
        beside = budget is not None and budget.kind is BudgetKind.VS_EAGER
        before = time_eager(built) if beside else None
        run = device.run(deployment, built.inputs, case.timing or spec.latency.policy)
        if before is not None:  # eager on both sides of the run: load that came and went
            reference = replace(reference, beside=best_of(before, time_eager(built)))
        if rewrite is not None:
            run = replace(run, outputs=tuple(rewrite(run.outputs)))
        name = _safe(f"{case.name}--{spec.name}--{recipe_obj.name}")
        arrays = save_check_arrays(
            self.results_dir / "arrays" / f"{name}.npz",
            input=built.inputs,
            reference=reference.outputs,
            output=run.outputs,
            quantized_reference=artifact.quantized_reference() or (),
        )
        seen = Observation(
            outputs=run.outputs,
            timings_us=run.timings_us,
            timing=run.timing,
            counters=run.counters,
            deploy_bytes=deployment.bytes_sent,
            log=run.log,
            target_info=device.describe(),
            device_kernels=device.runs_device_kernels,
            not_the_model=run.not_the_model,
        )
        return judge(built, spec, recipe_obj, artifact, reference, seen, arrays)

    def close(self) -> None:
        for target in self._targets.values():
            try:
                target.teardown()
            except Exception:
                log.exception("teardown of %s failed", target.spec.name)
        self._targets.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def time_eager(built: BuiltCase) -> LatencyStats | None:
    """Eager PyTorch's latency on one thread: torch's OpenMP workers spin and stall whenever
    another process holds a core, which made eager times swing 100x on shared CI machines."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            _, timings = timed_runs(lambda: built.module(*built.inputs), EAGER_POLICY)
    finally:
        torch.set_num_threads(threads)
    return latency_stats(timings)


def best_of(*stats: LatencyStats | None) -> LatencyStats | None:
    """The window whose best time is the best: the one least disturbed by load."""
    timed = [s for s in stats if s is not None]
    return min(timed, key=lambda s: s.min_us, default=None)


@contextlib.contextmanager
def _heartbeat(progress: Progress, what: str, every_s: float = 5.0) -> Iterator[None]:
    """Say `what` is still going every few seconds, so a long export is never silent."""
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(every_s):
            progress(f"{what} ({time.monotonic() - started:.0f} s so far)")

    thread = threading.Thread(target=beat, name="hil-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)
