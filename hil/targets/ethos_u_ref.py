"""Ethos-U55 / Ethos-U85 without silicon: the TOSA reference model plus Vela's estimate.

The target runs what an Ethos-U system would run, from the artifact's side files (see
hil.recipes.ethos_u): each NPU delegate as the TOSA graph Vela compiled, in Arm's TOSA reference
model, and the non-delegated rest on this CPU (hil.targets.tosa_ref, which this kind extends with
the NPU's side). Every run executes both afresh; a warm run only skips the export.

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

from collections.abc import Mapping
from typing import Any, ClassVar

from hil.artifacts.partition import PartitionReport
from hil.artifacts.store import Artifact
from hil.errors import DeployError, DeviceSpecError
from hil.ethos_u.vela import combine, read_summary, utilization
from hil.targets.base import RunResult
from hil.targets.tosa_ref import LoadedProgram, TosaRefTarget

RECIPE = "ethos-u"


class EthosURefTarget(TosaRefTarget):
    """Numerics from the TOSA reference model, performance from Vela (estimated)."""

    recipe_names: ClassVar[tuple[str, ...]] = (RECIPE,)
    kind: ClassVar[str] = "ethos_u_ref"

    def _check_recipe(self, recipe: Any) -> None:
        """Every ethos-u recipe of this device must compile for the device's NPU."""
        from hil.recipes.ethos_u import EthosURecipe

        assert isinstance(recipe, EthosURecipe)
        npu = self.spec.npu
        if npu is None or recipe.accelerator != npu:
            raise DeviceSpecError(
                f"{self.spec.source}: recipe {RECIPE} compiles for {recipe.accelerator}, "
                f"but the device's npu is {npu}",
                fix="make recipes[].options.accelerator_config equal the device's npu",
            )
        recipe.check_vela_config()

    def _check_artifact(self, artifact: Artifact) -> None:
        part = artifact.parts.ethos_u
        if part is None:
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

    def _counters(self, artifact: Artifact, report: PartitionReport) -> dict[str, float]:
        part = artifact.parts.ethos_u
        assert part is not None  # _check_artifact ran first
        vela = combine(
            [read_summary(artifact.folder / d.folder / "output") for d in part.delegates]
        )
        counters = super()._counters(artifact, report)
        counters["macs_per_cycle"] = part.macs_per_cycle
        if report.macs is None or report.accelerated_macs is None:
            self.log.info("%s: no MAC count (data-dependent shapes)", artifact.key[:12])
        else:  # unknown: no counter, so a budget on it is NOT JUDGED (hil.verdict.budgets)
            counters.update(macs=float(report.macs), npu_macs=float(report.accelerated_macs))
        if vela is not None:
            counters.update(vela.counters())
            share = utilization(report.accelerated_macs, part.macs_per_cycle, vela.npu_cycles)
            if share is not None:
                counters["mac_utilization"] = share
        elif report.delegates == 0:
            # nothing runs on the NPU: it needs no SRAM, flash or DRAM of its own (a fact, so
            # the device file's memory limits are judged rather than left unjudged)
            counters.update(npu_cycles=0.0, sram_bytes=0.0, flash_bytes=0.0, dram_bytes=0.0)
        self.log.info("%s: %s", artifact.key[:12], _estimate_text(counters))
        return counters

    def _result(self, outputs: tuple[Any, ...], loaded: LoadedProgram, ran: str) -> RunResult:
        counters = loaded.counters
        estimate = counters.get("est_time_us")
        return RunResult(
            outputs=outputs,
            timings_us=(estimate,) if estimate is not None else (),
            timing="estimated",
            counters=counters,
            log=f"{ran.replace('TOSA delegate', 'NPU delegate')}; {_estimate_text(counters)}",
        )

    def describe(self) -> Mapping[str, str]:
        return {**super().describe(), "npu": str(self.spec.npu), "timing": "Vela estimate"}


def _estimate_text(counters: Mapping[str, float]) -> str:
    if "total_cycles" not in counters:
        return "no NPU delegate: nothing for Vela to estimate"
    return (
        f"Vela estimates {counters['npu_cycles']:.0f} NPU cycles, "
        f"{counters['total_cycles']:.0f} total cycles, {counters['est_time_us']:.1f} us "
        f"at {counters['clock_hz'] / 1e6:.0f} MHz (estimated)"
    )
