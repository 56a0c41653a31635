"""Ethos-U55 / Ethos-U85 without silicon: the TOSA reference model plus Vela's estimate.

The target runs what an Ethos-U system would run, from the artifact's side files (see
hil.recipes.ethos_u): each NPU delegate as the TOSA graph Vela compiled, in Arm's TOSA reference
model (hil.ethos_u.tosa_delegate), and the non-delegated rest on this CPU. Every run executes both
afresh; a warm run only skips the export.

What it does not model: the CPU part runs on PyTorch's kernels, not on ExecuTorch's portable
kernels as on a device (the recipe lists CPU operators that have no ExecuTorch kernel at all), and
the NPU's own arithmetic is taken to be TOSA's, which is what Vela compiles to.

Latency and memory are Vela's estimate for the configured NPU, system config and memory mode, never
a measurement: timings carry `timing="estimated"`. The reference model's wall time says nothing
about the NPU and is not reported.

Counters (all from the artifact; cycles, time and memory estimated by Vela): npu_cycles,
total_cycles, est_time_us, clock_hz, sram_bytes, dram_bytes, flash_bytes, vela_macs, macs and
npu_macs (hil's count), macs_per_cycle, mac_utilization, delegates, delegated_fraction,
fallback_ops, pte_bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from hil.arrays import to_array
from hil.artifacts.partition import PartitionReport
from hil.artifacts.store import Artifact
from hil.call import fresh
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import DeployError, DeviceSpecError, HilError, TargetUnavailable
from hil.ethos_u.tosa_delegate import TosaRunner
from hil.ethos_u.vela import VelaSummary, combine, read_summary, utilization
from hil.recipes.delegate_files import TOSA_FILE
from hil.recipes.host_program import load_host_program
from hil.recipes.lowering import flatten_outputs
from hil.targets.base import Deployment, RunResult, Target

RECIPE = "ethos-u"


@dataclass
class _Loaded:
    module: Any
    graphs: dict[str, bytes]
    counters: dict[str, float] = field(default_factory=dict)


class EthosURefTarget(Target):
    """Numerics from the TOSA reference model, performance from Vela (estimated)."""

    # The CPU part runs on PyTorch's kernels here, not the device runtime's: the verdict judges
    # from the partition report whether the device would have a kernel for each CPU operator.
    runs_device_kernels: ClassVar[bool] = False

    _loaded: dict[str, _Loaded]

    def _provision(self) -> None:
        try:
            import tosa_reference_model  # noqa: F401
        except ImportError as e:
            raise TargetUnavailable(
                f"the TOSA reference model cannot be imported: {e}",
                fix="install executorch[ethos-u]==1.5.1 (it brings tosa-tools)",
            ) from e
        self._check_recipes()
        self._loaded = {}

    def _check_recipes(self) -> None:
        """Every ethos-u recipe of this device must compile for the device's NPU."""
        from hil.recipes import make_recipe
        from hil.recipes.ethos_u import EthosURecipe

        npu = self.spec.npu
        for recipe_spec in self.spec.recipes:
            if recipe_spec.name != RECIPE:
                raise DeviceSpecError(
                    f"{self.spec.source}: target kind ethos_u_ref runs only the {RECIPE!r} "
                    f"recipe, not {recipe_spec.name!r}",
                    fix=f"list only {RECIPE!r} recipes in {self.spec.source.name}",
                )
            recipe = make_recipe(recipe_spec.name, recipe_spec.options)
            assert isinstance(recipe, EthosURecipe)
            if npu is None or recipe.accelerator != npu:
                raise DeviceSpecError(
                    f"{self.spec.source}: recipe {RECIPE} compiles for {recipe.accelerator}, "
                    f"but the device's npu is {npu}",
                    fix="make recipes[].options.accelerator_config equal the device's npu",
                )
            try:
                recipe.check_vela_config()
            except HilError as e:
                raise DeviceSpecError(f"{self.spec.source}: {e.message}", fix=e.fix) from e

    def _deploy(self, artifact: Artifact) -> Deployment:
        if artifact.sha256 in self._loaded:
            return Deployment(artifact.sha256)
        part, partition = artifact.parts.ethos_u, artifact.parts.partition
        if part is None or partition is None or artifact.host_program is None:
            raise DeployError(
                f"{artifact.pte_path} was not made by the ethos-u recipe",
                fix="export with the target's own recipe",
            )
        if part.accelerator != self.spec.npu:
            raise DeployError(
                f"{artifact.pte_path} was compiled for {part.accelerator}, not for this "
                f"target's {self.spec.npu}",
                fix="export with the target's own recipe",
            )
        graphs: dict[str, bytes] = {}
        summaries: list[VelaSummary] = []
        for delegate in part.delegates:
            folder = artifact.folder / delegate.folder
            graphs[delegate.name] = _tosa_graph(folder / TOSA_FILE, delegate.tosa_sha256)
            summaries.append(read_summary(folder / "output"))
        module = load_host_program(artifact.folder)
        counters = self._counters(partition, part.macs_per_cycle, artifact.size,
                                  combine(summaries))  # fmt: skip
        loaded = _Loaded(module, graphs, counters)
        self._loaded[artifact.sha256] = loaded
        self.log.info(
            "deployed %s: %d NPU delegate(s), %s",
            artifact.key[:12],
            len(graphs),
            _estimate_text(loaded.counters),
        )
        return Deployment(artifact.sha256)  # in this process: nothing crosses a link

    def _counters(
        self, report: PartitionReport, per_cycle: float, pte_bytes: int, vela: VelaSummary | None
    ) -> dict[str, float]:
        counters: dict[str, float] = {
            "delegates": float(report.delegates),
            "delegated_fraction": report.delegated_fraction,
            "fallback_ops": float(report.fallback_count),
            "pte_bytes": float(pte_bytes),
            "macs": float(report.macs),
            "npu_macs": float(report.accelerated_macs),
            "macs_per_cycle": per_cycle,
        }
        if vela is not None:
            counters.update(vela.counters())
            share = utilization(report.accelerated_macs, per_cycle, vela.npu_cycles)
            if share is not None:
                counters["mac_utilization"] = share
        elif report.delegates == 0:
            # nothing runs on the NPU: it needs no SRAM, flash or DRAM of its own (a fact, so
            # the device file's memory limits are judged rather than left unjudged)
            counters.update(npu_cycles=0.0, sram_bytes=0.0, flash_bytes=0.0, dram_bytes=0.0)
        return counters

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        loaded = self._loaded[deployment.sha256]
        runner = TosaRunner(loaded.graphs)
        with torch.no_grad(), runner:
            result = loaded.module(*fresh(inputs))
        missing = sorted(set(loaded.graphs) - set(runner.calls))
        if missing:
            raise DeployError(
                f"the program never called NPU delegate(s) {', '.join(missing)}",
                fix="the host program does not match the .pte; delete the cache entry",
            )
        counters = loaded.counters
        estimate = counters.get("est_time_us")
        return RunResult(
            outputs=tuple(to_array(t) for t in flatten_outputs(result)),
            timings_us=(estimate,) if estimate is not None else (),
            timing="estimated",
            counters=counters,
            log=(
                f"ran {len(runner.calls)} NPU delegate(s) in the TOSA reference model "
                f"({', '.join(runner.calls) or 'none'}) and the rest on the host CPU; "
                f"{_estimate_text(counters)}"
            ),
        )

    def _teardown(self) -> None:
        self._loaded.clear()

    def describe(self) -> Mapping[str, str]:
        return {
            **super().describe(),
            "npu": str(self.spec.npu),
            "numerics": "TOSA reference model",
            "timing": "Vela estimate",
        }


def _tosa_graph(path: Path, sha256: str) -> bytes:
    """A delegate's TOSA flatbuffer, verified: the reference model may crash on a damaged one."""
    try:
        graph = path.read_bytes()
    except OSError as e:
        raise DeployError(
            f"the NPU delegate's TOSA graph {path} cannot be read: {e}",
            fix="delete the artifact's cache entry to re-export",
        ) from e
    if hashlib.sha256(graph).hexdigest() != sha256:
        raise DeployError(
            f"{path} does not match the sha256 recorded at export (damaged or replaced)",
            fix="delete the artifact's cache entry to re-export",
        )
    return graph


def _estimate_text(counters: Mapping[str, float]) -> str:
    if "total_cycles" not in counters:
        return "no NPU delegate: nothing for Vela to estimate"
    return (
        f"Vela estimates {counters['npu_cycles']:.0f} NPU cycles, "
        f"{counters['total_cycles']:.0f} total cycles, {counters['est_time_us']:.1f} us "
        f"at {counters['clock_hz'] / 1e6:.0f} MHz (estimated)"
    )
