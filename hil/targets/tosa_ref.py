"""A program's TOSA delegates run in Arm's TOSA reference model, the rest on this CPU.

The recipes that lower through ExecuTorch's Arm backend (ethos-u, tosa-fp) keep, beside the
.pte, each delegate's TOSA graph and the rest of the program as a torch.export file in which
every delegate call is `hil::tosa_delegate` (hil.ethos_u.tosa_delegate). This target loads both
and runs them: each delegate's graph in the reference model, which executes TOSA exactly as the
specification defines it, and the CPU operators on PyTorch's kernels. Every run executes both
afresh; a warm run only skips the export.

The tosa_ref kind is that alone: the TOSA floating-point profile ExecuTorch's `TosaPipelineFP`
lowers for (tosa-fp recipe), with no device behind it and so no timing. The Ethos-U stand-ins
(hil.targets.ethos_u_ref) add the NPU's side: Vela's estimate of cycles and memory.

Counters: delegates, delegated_fraction, fallback_ops, pte_bytes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from hil.arrays import Array, to_array
from hil.artifacts.partition import PartitionReport
from hil.artifacts.parts import TosaGraphPart
from hil.artifacts.store import Artifact
from hil.call import fresh
from hil.case import Inputs
from hil.devices import TimingPolicy
from hil.errors import DeployError, DeviceSpecError, HilError, RunRefused, TargetUnavailable
from hil.ethos_u.tosa_delegate import OP, TosaRunner
from hil.export.lowering import flatten_outputs
from hil.recipes.delegate_files import TOSA_FILE
from hil.recipes.host_program import load_host_program
from hil.targets.base import Capabilities, Deployment, RunResult, Target

# Programs held loaded at once (least recently used let go): a case deploys its program and
# runs it at once, and a session over ExecuTorch's 156 operator files deploys thousands.
HELD_PROGRAMS = 8


@dataclass
class LoadedProgram:
    """A deployed program: its host part, its delegates' TOSA graphs, its fixed counters."""

    module: Any
    graphs: dict[str, bytes]
    counters: dict[str, float] = field(default_factory=dict)

    @functools.cached_property
    def always_called(self) -> frozenset[str]:
        """The delegates every run must call: those of the top-level graph (one inside a
        torch.cond branch runs only when its branch is taken); all of them when the module
        has no graph to read. Read once a deployment, not once a run."""
        graph = getattr(self.module, "graph", None)
        if graph is None:
            return frozenset(self.graphs)
        return frozenset(
            str(n.args[0]) for n in graph.nodes if n.op == "call_function" and n.target is OP
        )

    def require_called(self, calls: list[str], kind: str) -> None:
        """DeployError unless a run called every delegate it must (`kind`: TOSA, VGF)."""
        missing = sorted(self.always_called - set(calls))
        if missing:
            raise DeployError(
                f"the program never called {kind} delegate(s) {', '.join(missing)}",
                fix="the host program does not match the .pte; delete the cache entry",
            )


def run_host_program(module: Any, runner: TosaRunner, inputs: Inputs) -> Any:
    """The host program on the inputs, its delegates answered by `runner`; a CPU operator
    refusing its arguments is the program's refusal (RunRefused), never a raw error."""
    try:
        with torch.no_grad(), runner:
            return module(*fresh(inputs))
    except (RuntimeError, ValueError, IndexError) as e:  # a CPU operator's own check
        raise RunRefused(
            f"an operator the program runs on the CPU refused its arguments: "
            f"{type(e).__name__}: {str(e).strip()[:500]}",
            fix="the program reads outside its inputs or takes a type or shape the "
            "operator does not (PyTorch's kernel stands for the device's here): a device "
            "would refuse or misread it too; give inputs the program is defined on",
        ) from e


class TosaRefTarget(Target):
    """Numerics from the TOSA reference model; no timing (no device is behind it)."""

    # The CPU part runs on PyTorch's kernels here, not the device runtime's: the verdict judges
    # from the partition report whether the device would have a kernel for each CPU operator.
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        runs_device_kernels=False, is_lowered_reference=True
    )
    recipe_names: ClassVar[tuple[str, ...]] = ("tosa-fp",)
    kind: ClassVar[str] = "tosa_ref"

    _loaded: dict[str, LoadedProgram]

    def _provision(self) -> None:
        try:
            import tosa_reference_model  # noqa: F401
        except ImportError as e:
            raise TargetUnavailable(
                f"the TOSA reference model cannot be imported: {e}",
                fix="install executorch[ethos-u]>=1.4 (it brings tosa-tools)",
            ) from e
        self._check_recipes()
        self._loaded = {}

    def _check_recipes(self) -> None:
        """Every recipe of the device is one this kind runs, with options it accepts."""
        from hil.recipes import make_recipe

        for recipe_spec in self.spec.recipes:
            if recipe_spec.name not in self.recipe_names:
                names = ", ".join(repr(n) for n in self.recipe_names)
                raise DeviceSpecError(
                    f"{self.spec.source}: target kind {self.kind} runs only the {names} "
                    f"recipe, not {recipe_spec.name!r}",
                    fix=f"list only {names} recipes in {self.spec.source.name}",
                )
            try:
                self._check_recipe(make_recipe(recipe_spec.name, recipe_spec.options))
            except DeviceSpecError:
                raise
            except HilError as e:
                raise DeviceSpecError(f"{self.spec.source}: {e.message}", fix=e.fix) from e

    def _forget(self, sha256: str) -> None:
        """The least recently used program, let go (deployed again, it is loaded again)."""
        self._loaded.pop(sha256, None)

    def _check_recipe(self, recipe: Any) -> None:
        """A kind's own check of one recipe (the Ethos-U stand-ins check the NPU)."""

    def _deploy(self, artifact: Artifact) -> Deployment:
        if artifact.sha256 in self._loaded:
            self._loaded[artifact.sha256] = self._loaded.pop(artifact.sha256)  # most recent
            return Deployment(artifact.sha256)
        while len(self._loaded) >= HELD_PROGRAMS:
            self._forget(next(iter(self._loaded)))
        partition = artifact.parts.partition
        if partition is None or artifact.host_program is None or artifact.parts.tosa_spec is None:
            raise DeployError(
                f"{artifact.pte_path} was not lowered through ExecuTorch's Arm TOSA backend "
                f"(recipe {', '.join(self.recipe_names)})",
                fix="export with the target's own recipe",
            )
        self._check_artifact(artifact)
        loaded = LoadedProgram(
            load_host_program(artifact.folder),
            tosa_graphs(artifact),
            self._counters(artifact, partition),
        )
        self._loaded[artifact.sha256] = loaded
        self.log.info("deployed %s: %d TOSA delegate(s)", artifact.key[:12], len(loaded.graphs))
        return Deployment(artifact.sha256)  # in this process: nothing crosses a link

    def _check_artifact(self, artifact: Artifact) -> None:
        """A kind's own check that the artifact was made for it."""

    def _counters(self, artifact: Artifact, report: PartitionReport) -> dict[str, float]:
        return {
            "delegates": float(report.delegates),
            "delegated_fraction": report.delegated_fraction,
            "fallback_ops": float(report.fallback_count),
            "pte_bytes": float(artifact.size),
        }

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        loaded = self._loaded[deployment.sha256]
        runner = TosaRunner(loaded.graphs)
        result = run_host_program(loaded.module, runner, inputs)
        loaded.require_called(runner.calls, "TOSA")
        ran = (
            f"ran {len(runner.calls)} TOSA delegate(s) in the TOSA reference model "
            f"({', '.join(runner.calls) or 'none'}) and the rest on the host CPU"
        )
        return self._result(tuple(to_array(t) for t in flatten_outputs(result)), loaded, ran)

    def _result(self, outputs: tuple[Any, ...], loaded: LoadedProgram, ran: str) -> RunResult:
        return RunResult(outputs=outputs, counters=loaded.counters, log=f"{ran} (no timing)")

    def _lowered_reference(self, deployment: Deployment, inputs: Inputs) -> tuple[Array, ...]:
        loaded = self._loaded[deployment.sha256]
        return run_lowered(loaded.module, loaded.graphs, inputs)

    def _teardown(self) -> None:
        self._loaded.clear()

    def describe(self) -> Mapping[str, str]:
        return {**super().describe(), "numerics": "TOSA reference model"}


def run_lowered(module: Any, graphs: Mapping[str, bytes], inputs: Inputs) -> tuple[Array, ...]:
    """The lowered program's reference: its host part on this CPU, each TOSA delegate in Arm's
    TOSA reference model (what a device's outputs are judged against, hil.verdict.device)."""
    result = run_host_program(module, TosaRunner(graphs), inputs)
    return tuple(to_array(t) for t in flatten_outputs(result))


def lowered_of(artifact: Artifact, inputs: Inputs) -> tuple[Array, ...]:
    """The lowered reference made from the artifact's side files (a target that holds the
    program otherwise: an FVP's or a board's runner), loaded once for the checks of a model."""
    module, graphs = _side_files(artifact.folder, artifact.sha256, artifact.parts.tosa_graphs)
    return run_lowered(module, graphs, inputs)


@functools.lru_cache(maxsize=HELD_PROGRAMS)
def _side_files(
    folder: Path, sha256: str, graphs: tuple[TosaGraphPart, ...]
) -> tuple[Any, Mapping[str, bytes]]:
    """The host program and TOSA graphs of the artifact `sha256` names (part of the key: a
    re-export in the same folder is loaded afresh)."""
    return load_host_program(folder), _graphs(folder, graphs)


def tosa_graphs(artifact: Artifact) -> dict[str, bytes]:
    """Each TOSA delegate's graph, by name, verified against the export's record."""
    return _graphs(artifact.folder, artifact.parts.tosa_graphs)


def _graphs(folder: Path, graphs: tuple[TosaGraphPart, ...]) -> dict[str, bytes]:
    return {
        graph.name: tosa_graph(folder / graph.folder / TOSA_FILE, graph.tosa_sha256)
        for graph in graphs
    }


def tosa_graph(path: Path, sha256: str) -> bytes:
    """A delegate's TOSA flatbuffer, verified: the reference model may crash on a damaged one."""
    try:
        graph = path.read_bytes()
    except OSError as e:
        raise DeployError(
            f"the delegate's TOSA graph {path} cannot be read: {e}",
            fix="delete the artifact's cache entry to re-export",
        ) from e
    if hashlib.sha256(graph).hexdigest() != sha256:
        raise DeployError(
            f"{path} does not match the sha256 recorded at export (damaged or replaced)",
            fix="delete the artifact's cache entry to re-export",
        )
    return graph
