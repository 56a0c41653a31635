"""What a check is judged against, and what it deploys: built cases, eager references and
artifacts, each made once and kept while the case is in use.

Suites run case by case (every target and recipe of a case in a row), so a few recent cases
are kept and older ones released: a sweep of big models does not pile up in memory.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from hil.arrays import to_array
from hil.artifacts.fingerprint import model_fingerprint, tensors_fingerprint
from hil.artifacts.keys import export_source, key_of
from hil.artifacts.probe import difference_key, read_probe, served_collision, write_probe
from hil.artifacts.store import Artifact, ArtifactCache
from hil.call import fresh
from hil.case import BuiltCase, Case
from hil.devices import TimingPolicy
from hil.errors import (
    ArtifactMissing,
    CacheError,
    ExportError,
    ResourceExhausted,
    resource_exhaustion,
)
from hil.export.lowering import reference_tensors, run_reference
from hil.progress import Progress, heartbeat
from hil.recipes import Recipe
from hil.speedups import switch as speedups
from hil.threads import one_thread
from hil.timing import timed_runs
from hil.verdict.budgets import LatencyStats, latency_stats
from hil.verdict.judge import Reference

log = logging.getLogger("hil.session.references")

# Eager timed for a budget relative to eager (judged): up to 200 runs.
EAGER_POLICY = TimingPolicy(warmup=2, min_runs=5, min_time_s=0.05, max_runs=200, max_time_s=2.0)
# Eager timed only to be shown beside the target's time: up to 50 runs. Measured on this
# machine (add, conv, linear; 15 windows each): the median of 50 runs within 1 % of 200's, the
# minimum within 6 %; an ExecuTorch operator test's window went from 12 ms to about 3.
EAGER_SHOWN_POLICY = TimingPolicy(
    warmup=2, min_runs=5, min_time_s=0.05, max_runs=50, max_time_s=2.0
)
BUILT_CASES_KEPT = 4
SLOW_EXPORT_S = 5.0  # exports at least this long say how long they took
# Each collision re-keys by the model's own outputs; a model that still collides after this
# many is a cache that cannot hold it apart (a CacheError, never a judged wrong program).
MAX_COLLISIONS = 3


class References:
    def __init__(self, cache: ArtifactCache, progress: Progress) -> None:
        self.cache = cache
        self._progress = progress
        self._built: dict[str, tuple[Case, BuiltCase]] = {}
        self._eager: dict[str, Reference] = {}
        self._fingerprints: dict[str, str] = {}
        self._warned: set[str] = set()  # collisions already reported, by key

    def built(self, case: Case) -> BuiltCase:
        """The case's module and inputs, built once while the case is in use."""
        memo = self._built.pop(case.name, None)
        if memo is None or memo[0] is not case:
            memo = (case, case.build())
            self._forget(case.name)
        self._built[case.name] = memo  # most recent last
        while len(self._built) > BUILT_CASES_KEPT:
            oldest = next(iter(self._built))
            del self._built[oldest]
            self._forget(oldest)
        return memo[1]

    def _forget(self, name: str) -> None:
        self._eager.pop(name, None)
        self._fingerprints.pop(name, None)

    def eager(self, built: BuiltCase) -> Reference:
        """Eager PyTorch outputs (the reference) and eager latency (for comparison tables)."""
        name = built.case.name
        if name not in self._eager:
            import torch

            args = fresh(built.inputs)
            try:
                tensors = reference_tensors(built.module, args, copy=False)
            except Exception as e:  # eager's own limits (torch has no float8 convolution)
                if resource_exhaustion(e):
                    raise ResourceExhausted(
                        f"case {name!r}: eager PyTorch ran out of {resource_exhaustion(e)}",
                        fix="free memory and run again; not a fact about the model",
                    ) from e
                first = (str(e).strip().splitlines() or [""])[0][:200]
                self._eager[name] = Reference(
                    (),
                    None,
                    unavailable=(
                        f"eager PyTorch cannot run the model on these inputs ({type(e).__name__}: "
                        f"{first}), so there is nothing to compare the target with"
                    ),
                )
                return self._eager[name]
            written = tuple(
                to_array(a) for a in args if isinstance(a, torch.Tensor) and a._version > 0
            )
            bf16 = frozenset(i for i, t in enumerate(tensors) if t.dtype == torch.bfloat16)
            self._eager[name] = Reference(
                tuple(to_array(t) for t in tensors),
                time_eager(built, EAGER_SHOWN_POLICY),
                written=written,
                bf16_outputs=bf16,
            )
        return self._eager[name]

    def artifact(self, built: BuiltCase, recipe: Recipe, *, export: bool = True) -> Artifact:
        """The case's .pte for `recipe`, from the cache or exported now; with `export`
        False, from the cache only (ArtifactMissing when it is not there)."""
        name = built.case.name
        if name not in self._fingerprints:
            self._fingerprints[name] = model_fingerprint(built.module)
        recipe_material = recipe.key_material()
        own = {"model": self._fingerprints[name], **recipe_material}
        # calibration and the stored quantized reference depend on the values
        key, material = key_of(built, own, values=recipe.quantized)
        if not export:
            found, problem = self.cache.lookup(key)
            if found is None:
                why = f" ({problem})" if problem else ""
                raise ArtifactMissing(
                    f"no {recipe.name} artifact {key[:16]} in {self.cache.root}{why}"
                )
            return found

        def build(workdir: Path) -> Any:
            installed = speedups.install()
            # one thread: the artifact is the same whichever process builds it (hil.threads)
            with heartbeat(self._progress, f"exporting {name} with {recipe.name}"), one_thread():
                product = recipe.export(built, workdir)
            reference = self.eager(built)
            if not reference.unavailable:  # what the served-program guard compares with
                write_probe(workdir, name, built.inputs, reference.outputs)
            # which speed-ups were in place where it was made: every record carries it
            return replace(product, details={**product.details, "speedups": installed})

        source = export_source(name, recipe_material)
        try:
            artifact = self.cache.get_or_build(
                key, material, build, recipe=recipe.name, numerics=recipe.numerics
            )
            for collisions in range(MAX_COLLISIONS + 1):
                clash = self.collision(built, artifact)
                if clash is None:
                    break
                self._report_collision(built, recipe, artifact, clash, collisions)
                key = difference_key(key, self.eager(built).outputs)
                material = {**material, "collided_with": artifact.key}
                artifact = self.cache.get_or_build(
                    key, material, build, recipe=recipe.name, numerics=recipe.numerics
                )
                artifact = replace(artifact, rebuilt_because=f"key collision, {clash}")
        except ExportError:
            self.cache.note_source(source, key)  # the failure is remembered under `key`
            raise
        self.cache.note_source(source, key)
        if artifact.exported_now and artifact.export_seconds >= SLOW_EXPORT_S:
            self._progress(f"exported {name} with {recipe.name} in {artifact.export_seconds:.1f} s")
        if artifact.rebuilt_because:
            log.warning("rebuilt %s [%s]: %s", name, recipe.name, artifact.rebuilt_because)
        return artifact

    def collision(self, built: BuiltCase, artifact: Artifact) -> str | None:
        """How `built`'s model differs from the one that made the served `artifact` (None when
        it is the same, or when there is nothing to compare: a program made now, an entry from
        before probes, a model eager cannot run or that gives other outputs at every run)."""
        if artifact.exported_now:
            return None
        probe = read_probe(artifact.folder)
        reference = self.eager(built)
        if probe is None or reference.unavailable:
            return None
        same_inputs = probe.inputs_fingerprint == tensors_fingerprint(built.inputs)
        return served_collision(
            probe,
            lambda inputs: run_reference(built.module, inputs),
            known=reference.outputs if same_inputs else None,
        )

    def _report_collision(
        self, built: BuiltCase, recipe: Recipe, artifact: Artifact, clash: str, collisions: int
    ) -> None:
        """Loudly, once per key: the fingerprint missed what tells two models apart."""
        if collisions == MAX_COLLISIONS:
            raise CacheError(
                f"{built.case.name} [{recipe.name}]: the artifact cache served another model's "
                f"program {collisions + 1} times over (last {artifact.folder}, {clash})",
                fix="report it to hil with the model; meanwhile run with --hil-cache-dir on an "
                "empty folder",
            )
        if artifact.key in self._warned:
            return
        self._warned.add(artifact.key)
        message = (
            f"KEY COLLISION: {built.case.name} [{recipe.name}] was served {artifact.folder}, "
            f"{clash}; exporting {built.case.name} again under its own key. Please report it "
            f"to hil: the model fingerprint missed what tells these two models apart"
        )
        log.warning(message)
        self._progress(message)


def time_eager(built: BuiltCase, policy: TimingPolicy = EAGER_POLICY) -> LatencyStats | None:
    """Eager PyTorch's latency on one thread: torch's OpenMP workers spin and stall whenever
    another process holds a core, which made eager times swing 100x on shared CI machines."""
    import torch

    args = fresh(built.inputs)  # the runs may write into them; the case's inputs stay as given
    with one_thread(), torch.no_grad():
        _, timings = timed_runs(lambda: built.module(*args), policy)
    return latency_stats(timings)


def best_of(*stats: LatencyStats | None) -> LatencyStats | None:
    """The window whose best time is the best: the one least disturbed by load."""
    timed = [s for s in stats if s is not None]
    return min(timed, key=lambda s: s.min_us, default=None)
