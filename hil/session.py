"""A Session ties the data path together for many checks: specs, cache, targets, references.

    case -> recipe -> artifact cache -> target (provisioned once) -> compare -> budgets -> result

Targets are provisioned on first use and reused; a target that failed to provision stays
broken and every later request gets the first cause again, at once (labgrid's never-retry).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hil import compare
from hil.arrays import Array
from hil.budgets import (
    LatencyStats,
    budget_for,
    judge_counters,
    judge_latency,
    judge_limit,
    latency_stats,
)
from hil.cache import Artifact, ArtifactCache
from hil.case import BuiltCase, Case
from hil.devices import DeviceRegistry, DeviceSpec, TimingPolicy, default_device_dirs
from hil.errors import HilError, InfrastructureError, TargetCrash
from hil.fingerprint import (
    digest_of,
    input_spec,
    model_fingerprint,
    tensors_fingerprint,
    tool_versions,
)
from hil.partition import PartitionReport, judge_partition
from hil.recipes import Recipe, make_recipe
from hil.recipes.lowering import run_reference
from hil.result import Accuracy, CheckResult
from hil.targets import Target, make_target
from hil.timing import timed_runs

log = logging.getLogger("hil.session")

EAGER_POLICY = TimingPolicy(warmup=2, min_runs=5, min_time_s=0.05, max_runs=200, max_time_s=2.0)

BUILT_CASES_KEPT = 4

Progress = Callable[[str], None]


def default_cache_dir() -> Path:
    return Path(os.environ.get("HIL_CACHE_DIR", ".hil/cache"))


def default_results_dir() -> Path:
    return Path(os.environ.get("HIL_RESULTS_DIR", ".hil/results"))


@dataclass(frozen=True)
class EagerReference:
    outputs: tuple[Array, ...]
    latency: LatencyStats | None


class Session:
    """Runs checks; usable from scripts, notebooks and the pytest plugin alike."""

    def __init__(
        self,
        *,
        devices: DeviceRegistry | None = None,
        cache_dir: Path | None = None,
        results_dir: Path | None = None,
        progress: Progress | None = None,
    ) -> None:
        self._devices = devices
        self.cache = ArtifactCache(cache_dir or default_cache_dir())
        self.results_dir = results_dir or default_results_dir()
        self.progress: Progress = progress or (lambda message: log.info("%s", message))
        self._targets: dict[str, Target] = {}
        self._broken: dict[str, HilError] = {}
        self._built: dict[str, tuple[Case, BuiltCase]] = {}
        self._eager: dict[str, EagerReference] = {}
        self._fingerprints: dict[str, str] = {}

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

    def eager(self, built: BuiltCase) -> EagerReference:
        """Eager PyTorch outputs (the reference) and eager latency (for comparison tables)."""
        name = built.case.name
        if name not in self._eager:
            import torch

            outputs = run_reference(built.module, built.inputs)
            with torch.no_grad():
                _, timings = timed_runs(lambda: built.module(*built.inputs), EAGER_POLICY)
            self._eager[name] = EagerReference(outputs, latency_stats(timings))
        return self._eager[name]

    # -- the check ------------------------------------------------------------------------

    def check(self, case: Case, target: str, recipe: str | None = None) -> CheckResult:
        """Export, deploy, run and judge one case on one target with one recipe.

        A runner crash drops the target, so the next check provisions it afresh; any other
        infrastructure failure (lost link, hang) takes the target out of service for the session.
        """
        try:
            return self._check(case, target, recipe)
        except TargetCrash:
            self._drop(target)
            raise
        except InfrastructureError as e:
            self.mark_broken(target, e)
            raise

    def _drop(self, name: str) -> None:
        target = self._targets.pop(name, None)
        if target is not None:
            target.teardown()

    def _check(self, case: Case, target: str, recipe: str | None) -> CheckResult:
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
        run = device.run(deployment, built.inputs, case.timing or spec.latency.policy)
        arrays = self._save_arrays(
            built, spec, recipe_obj, reference.outputs, run.outputs, artifact
        )
        return self._judge(
            built,
            spec,
            recipe_obj,
            artifact,
            reference,
            run.outputs,
            arrays,
            timings=run.timings_us,
            timing=run.timing,
            counters=run.counters,
            deploy_bytes=deployment.bytes_sent,
            log_text=run.log,
            target_info=device.describe(),
            steps_limit=_steps_limit(device.quantized_steps_limit, case),
        )

    def _judge(
        self,
        built: BuiltCase,
        spec: DeviceSpec,
        recipe: Recipe,
        artifact: Artifact,
        reference: EagerReference,
        outputs: tuple[Array, ...],
        arrays: Path,
        *,
        timings: tuple[float, ...],
        timing: str,
        counters: Mapping[str, float],
        deploy_bytes: int,
        log_text: str,
        target_info: Mapping[str, str],
        steps_limit: float | None = None,
    ) -> CheckResult:
        case = built.case
        problems = tuple(compare.shape_problems(reference.outputs, outputs))
        tolerance = compare.tolerance_for(
            recipe.numerics, reference.outputs, artifact.output_scales, case.tolerance
        )
        metrics = None
        breaches: tuple[compare.Breach, ...] = ()
        if not problems:
            metrics = compare.measure(reference.outputs, outputs, classifier=case.classifier)
            breaches = tuple(compare.judge(metrics, tolerance))
        qref = artifact.quantized_reference()
        qref_metrics = None
        if qref is not None and not compare.shape_problems(qref, outputs):
            qref_metrics = compare.measure(qref, outputs, classifier=case.classifier)
        accuracy = None
        if built.labels is not None and case.max_accuracy_drop is not None and not problems:
            labels = built.labels.numpy()
            accuracy = Accuracy(
                eager=_accuracy(reference.outputs[0], labels),
                target=_accuracy(outputs[0], labels),
                max_drop=case.max_accuracy_drop,
            )
        latency = latency_stats(timings, timing)
        budget = budget_for(case.budget_ms, spec, recipe.name)
        budget_breaches = (
            judge_latency(latency, budget)
            + judge_limit(
                ".pte size",
                artifact.size,
                spec.memory.pte_max_bytes,
                "bytes",
                f"memory.pte_max_bytes of {spec.source.name}",
            )
            + judge_counters(counters, case.counter_budgets, spec, recipe.name)
        )
        partition = artifact.details.get("partition")
        partition_problems = (
            judge_partition(
                PartitionReport.from_dict(partition),
                case.expected_fallback_for(spec.name, recipe.name),
            )
            if partition
            else []
        )
        agreement = (
            compare.quantized_agreement(qref, outputs, artifact.output_scales)
            if qref is not None
            else None
        )
        return CheckResult(
            case=case.name,
            target=spec.name,
            recipe=recipe.name,
            numerics=recipe.numerics,
            artifact=artifact,
            arrays_path=arrays,
            tolerance=tolerance,
            metrics=metrics,
            structure_problems=problems,
            output_breaches=breaches,
            quantized_reference_metrics=qref_metrics,
            accuracy=accuracy,
            latency=latency,
            eager_latency=reference.latency,
            budget=budget,
            budget_breaches=tuple(budget_breaches),
            counters=counters,
            deploy_bytes=deploy_bytes,
            log=log_text,
            target_info=target_info,
            partition=partition,
            partition_problems=tuple(partition_problems),
            quantized_agreement=agreement,
            quantized_steps_limit=steps_limit,
        )

    def _save_arrays(
        self,
        built: BuiltCase,
        spec: DeviceSpec,
        recipe: Recipe,
        reference: tuple[Array, ...],
        outputs: tuple[Array, ...],
        artifact: Artifact,
    ) -> Path:
        """Keep inputs, reference and outputs of every check, so a failure can be studied."""
        folder = self.results_dir / "arrays"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (_safe(f"{built.case.name}--{spec.name}--{recipe.name}") + ".npz")
        arrays: dict[str, Array] = {}
        for i, t in enumerate(built.inputs):
            arrays[f"input{i}"] = t.detach().numpy()
        for i, a in enumerate(reference):
            arrays[f"reference{i}"] = a
        for i, a in enumerate(outputs):
            arrays[f"output{i}"] = a
        for i, a in enumerate(artifact.quantized_reference() or ()):
            arrays[f"quantized_reference{i}"] = a
        np.savez_compressed(path, **arrays)
        return path.resolve()

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


def _accuracy(logits: Array, labels: Array) -> float:
    predicted = np.argmax(logits.reshape(len(labels), -1), axis=-1)
    return float(np.mean(predicted == labels))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name)


def _steps_limit(target_limit: float | None, case: Case) -> float | None:
    """The target's limit on steps from the quantized model, unless the case sets its own."""
    if target_limit is None:
        return None
    override = case.tolerance.quantized_steps if case.tolerance else None
    return target_limit if override is None else override
