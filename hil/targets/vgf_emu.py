"""VGF on the Arm ML SDK for Vulkan's emulation layer, over a software Vulkan device.

The program's VGF delegates run as the ML SDK runs them: each delegate's VGF file, taken from
the .pte itself (its payload, what a device is given), in the SDK's scenario runner on the ML
emulation layer (VK_ARM_tensors, VK_ARM_data_graph) over whatever Vulkan device the loader picks
(Mesa's lavapipe here), with Khronos' validation layer on (hil.vgf). The rest of the program runs
on this CPU, as on tosa-fp-ref. Each delegate also runs, on the same inputs, as its TOSA graph
in Arm's TOSA reference model: when the two differ, the run says so per delegate, so a wrong
output is placed in the converter's VGF (or the emulation) rather than in ExecuTorch's lowering.

The Vulkan work happens in a worker process (hil.vgf.worker) started at provision and kept for
the session: each delegate's scenario is built once per deployment (about a second) and each
run costs milliseconds. A crash, a hang or a validation error there is a typed failure naming
the delegate; the session goes on.

No timing: the emulation layer's speed says nothing of a GPU's. Counters: delegates,
delegated_fraction, fallback_ops, pte_bytes, vgf_tosa_max_abs (the largest difference between a
delegate's VGF and TOSA graph outputs, in their own units: integer steps or float values).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceAllowance, TimingPolicy
from hil.errors import DeployError, RunRefused, TargetCrash, TargetUnavailable
from hil.ethos_u.tosa_delegate import (
    NDArray,
    TensorSpec,
    TosaRunner,
    from_tosa_layout,
    run_reference_model,
    to_tosa_layout,
)
from hil.export.lowering import flatten_outputs
from hil.targets.base import Capabilities, Deployment, RunResult
from hil.targets.tosa_ref import LoadedProgram, TosaRefTarget, run_host_program
from hil.vgf import environment
from hil.vgf.client import LOAD_TIMEOUT_S, VgfWorker
from hil.vgf.scenario import ScenarioFiles, write_scenario

# Measured over the model and operator suites (86 checks, 2026-12-07): every int8 VGF output
# equal to its TOSA graph's; float outputs at most MEASURED_ULPS ULPs of their peak apart
# (tiny_opt's logits 5, tanh 3, softmax and sigmoid 2: lavapipe's float arithmetic and
# transcendentals are not the reference model's). Twice that is allowed.
MEASURED_ULPS = 5.0
VGF_ALLOWANCE = DeviceAllowance(
    steps=0.0,
    float_ulps=2 * MEASURED_ULPS,
    basis=f"measured on the ML SDK's emulation layer over lavapipe: int8 outputs equal to the "
    f"TOSA reference model's, float ones at most {MEASURED_ULPS:g} ULPs of their peak apart; "
    "twice that allowed",
)
VGF_BACKEND = "VgfBackend"
SUMMARY = "vgf-vs-tosa:"  # the run log's line that hil.explain quotes for a wrong output


@dataclass
class Agreement:
    """How far a delegate's VGF outputs were from its TOSA graph's, over the runs so far."""

    max_abs: float = 0.0
    elements: int = 0
    differing: int = 0
    integer: bool = True

    def add(self, vgf: NDArray, tosa: NDArray) -> None:
        a, b = _numeric(vgf), _numeric(tosa)
        self.integer = self.integer and a.dtype.kind in "iub"
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        finite = np.isfinite(diff)
        same_special = ~finite & ((a == b) | (np.isnan(a) & np.isnan(b)))
        diff = np.where(same_special, 0.0, np.where(finite, diff, np.inf))
        self.max_abs = max(self.max_abs, float(diff.max()) if diff.size else 0.0)
        self.elements += int(diff.size)
        self.differing += int(np.count_nonzero(diff))

    def describe(self, name: str) -> str:
        if not self.differing:
            return f"{name} identical"
        unit = " steps" if self.integer else ""
        return (
            f"{name} differs from its TOSA graph (max {self.max_abs:g}{unit}, "
            f"{100 * self.differing / max(self.elements, 1):.1f} % of elements)"
        )


@dataclass
class VgfProgram:
    """A deployed program: the host part, each delegate's scenario and TOSA graph."""

    loaded: LoadedProgram
    scenarios: dict[str, tuple[str, ScenarioFiles]] = field(default_factory=dict)  # name -> key


class VgfRunner(TosaRunner):
    """Answers each delegate call with its VGF on the emulation layer, and runs its TOSA graph
    on the same inputs beside it."""

    def __init__(self, program: VgfProgram, worker: VgfWorker) -> None:
        super().__init__(program.loaded.graphs)
        self.program = program
        self.worker = worker
        self.agreement: dict[str, Agreement] = {}

    def call(
        self, delegate: str, outputs: list[TensorSpec], inputs: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]:
        if delegate not in self.program.scenarios:
            raise DeployError(
                f"the program calls VGF delegate {delegate!r}, which this deployment lacks",
                fix="delete the artifact's cache entry",
            )
        key, scenario = self.program.scenarios[delegate]
        arrays = [to_tosa_layout(t) for t in inputs]
        _check_inputs(delegate, scenario, arrays)
        given = [
            a.astype(s.dtype, copy=False) for a, s in zip(arrays, scenario.inputs, strict=True)
        ]
        results = self.worker.request(f"running VGF delegate {delegate}", "run", key, given)
        if len(results) != len(outputs):
            raise TargetCrash(
                f"VGF delegate {delegate!r} returned {len(results)} outputs, "
                f"expected {len(outputs)}"
            )
        tosa, status, _ = run_reference_model(self.graphs[delegate], arrays)
        self.calls.append(delegate)
        seen = self.agreement.setdefault(delegate, Agreement())
        if status == "TOSA_VALID":
            for vgf_out, tosa_out in zip(results, tosa, strict=False):
                seen.add(vgf_out, tosa_out)
        return [from_tosa_layout(a, spec) for a, spec in zip(results, outputs, strict=True)]

    def summary(self) -> str:
        return SUMMARY + " " + "; ".join(a.describe(n) for n, a in sorted(self.agreement.items()))


def _numeric(array: NDArray) -> NDArray:
    """An output as numbers: the types numpy lacks (bfloat16, float8) come back as raw
    bytes (void), compared as their bits, which for these formats count ulps apart."""
    found = np.asarray(array)
    return found.view(f"u{found.dtype.itemsize}") if found.dtype.kind == "V" else found


def _check_inputs(delegate: str, scenario: ScenarioFiles, arrays: Sequence[NDArray]) -> None:
    wanted = [(s.shape, s.dtype) for s in scenario.inputs]
    given = [(tuple(a.shape), str(a.dtype)) for a in arrays]
    if [w[0] for w in wanted] != [g[0] for g in given]:
        raise RunRefused(
            f"VGF delegate {delegate!r} takes inputs {wanted}, the program passes {given}",
            fix="a defect of the lowering for this model: report it with the artifact",
        )


class VgfEmuTarget(TosaRefTarget):
    """VGF delegates on the ML emulation layer for Vulkan; the rest on the CPU; no timing."""

    recipe_names: ClassVar[tuple[str, ...]] = ("vgf", "vgf-fp")
    kind: ClassVar[str] = "vgf_emu"
    # the VGF runs, not its TOSA graph: judged against that graph's reference
    CAPABILITIES: ClassVar[Capabilities] = replace(
        TosaRefTarget.CAPABILITIES, is_lowered_reference=False, device_allowance=VGF_ALLOWANCE
    )

    _programs: dict[str, VgfProgram]
    _folder: Path | None = None
    _worker: VgfWorker | None = None

    def _provision(self) -> None:
        super()._provision()
        environment.scenario_runner_module()
        environment.vgf_dump()
        environment.check_loader_and_device()
        layers = environment.find_layers()
        self._folder = Path(tempfile.mkdtemp(prefix=f"hil-{self.spec.name}-"))
        stack = environment.prepare_stack(layers, self._folder / "stack")
        self._worker = VgfWorker(stack, self._folder / "worker.log")
        self._worker.start()
        self._programs = {}
        self._probe()

    def _probe(self) -> None:
        """Create the instance and device once with every layer: no device, a layer that does
        not load or an extension missing is the machine's state, said before any case."""
        assert self._worker is not None and self._folder is not None
        try:
            self._worker.request(
                "probing the Vulkan device and layers",
                "probe",
                str(self._folder),
                timeout_s=LOAD_TIMEOUT_S,
            )
        except (RunRefused, TargetCrash) as e:
            raise TargetUnavailable(
                f"the Vulkan device and layers are not usable here: {e.message}",
                fix=f"{environment.DEBIAN_FIX}; and {environment.ML_SDK_FIX}; hil doctor "
                f"--target {self.spec.name} shows what was found",
            ) from e

    def _running_worker(self) -> VgfWorker:
        """The worker, started again when the last one was lost (killed after a hang, or
        crashed): the programs it held are built again as they are used."""
        assert self._worker is not None
        if not self._worker.alive:
            self.log.warning("the Vulkan worker was lost; starting a new one")
            self._worker.stop()
            self._worker.start()
            self._programs.clear()
            self._loaded.clear()
        return self._worker

    def _check_artifact(self, artifact: Artifact) -> None:
        """A VGF lowering's artifact (none of its operators may have been delegated: a lone
        reshape stays on the CPU, and the program then runs there alone)."""
        if artifact.recipe not in self.recipe_names:
            raise DeployError(
                f"{artifact.pte_path} was exported by recipe {artifact.recipe!r}, "
                "not by a VGF recipe",
                fix="export with the vgf or vgf-fp recipe",
            )

    def _deploy(self, artifact: Artifact) -> Deployment:
        worker = self._running_worker()
        if artifact.sha256 in self._programs:
            return super()._deploy(artifact)
        deployment = super()._deploy(artifact)
        payloads = _vgf_payloads(artifact.pte_path.read_bytes())
        recorded = artifact.parts.vgf_graphs
        if [hashlib.sha256(p).hexdigest() for p in payloads] != [g.vgf_sha256 for g in recorded]:
            raise DeployError(
                f"{artifact.pte_path}'s VGF payloads are not the {len(recorded)} the export "
                "recorded (damaged or replaced)",
                fix="delete the artifact's cache entry to re-export",
            )
        assert self._folder is not None
        program = VgfProgram(self._loaded[artifact.sha256])
        for part, vgf in zip(recorded, payloads, strict=True):
            scenario = write_scenario(
                vgf, self._folder / artifact.sha256[:16] / part.name, part.name
            )
            key = f"{artifact.sha256[:16]}/{part.name}"
            worker.request(
                f"building VGF delegate {part.name}'s scenario",
                "load",
                key,
                str(scenario.path),
                str(scenario.folder),
                [s.uid for s in scenario.inputs],
                [s.uid for s in scenario.outputs],
                timeout_s=LOAD_TIMEOUT_S,
            )
            program.scenarios[part.name] = (key, scenario)
        self._programs[artifact.sha256] = program
        self.log.info("deployed %s: %d VGF delegate(s)", artifact.key[:12], len(payloads))
        return deployment

    def _forget(self, sha256: str) -> None:
        """Its scenarios dropped in the worker too: each holds Vulkan pipelines and buffers
        (held without bound, ExecuTorch's 156 operator files grew the worker past 16 GB until
        the kernel killed it, measured)."""
        super()._forget(sha256)
        program = self._programs.pop(sha256, None)
        if program is None or self._worker is None or not self._worker.alive:
            return
        for key, _ in program.scenarios.values():
            self._worker.request(f"releasing VGF scenario {key}", "drop", key)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        program = self._programs[deployment.sha256]
        runner = VgfRunner(program, self._running_worker())
        result = run_host_program(program.loaded.module, runner, inputs)
        program.loaded.require_called(runner.calls, "VGF")
        worst = max((a.max_abs for a in runner.agreement.values()), default=0.0)
        counters = {**program.loaded.counters, "vgf_tosa_max_abs": worst}
        ran = (
            f"ran {len(runner.calls)} VGF delegate(s) on the ML emulation layer for Vulkan "
            f"and the rest on the host CPU (no timing)\n{runner.summary()}"
        )
        return self._result(
            tuple(to_array(t) for t in flatten_outputs(result)),
            LoadedProgram(program.loaded.module, program.loaded.graphs, counters),
            ran,
        )

    def _result(self, outputs: tuple[Any, ...], loaded: LoadedProgram, ran: str) -> RunResult:
        return RunResult(outputs=outputs, counters=loaded.counters, log=ran)

    def _teardown(self) -> None:
        if self._worker is not None:
            self._worker.stop()
        self._programs = {}
        super()._teardown()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def describe(self) -> Mapping[str, str]:
        found = {**super().describe(), "numerics": "ML SDK emulation layer for Vulkan"}
        device = self._device()
        if device:
            found["vulkan_device"] = device
        return found

    def _device(self) -> str:
        """The Vulkan device the scenario runner reported in its log ("" before any load)."""
        if self._worker is None:
            return ""
        for line in self._worker.log_tail(400).splitlines():
            if "Device:" in line:
                return line.split("Device:", 1)[1].strip()
        return ""


def _vgf_payloads(pte: bytes) -> list[bytes]:
    """The .pte's VGF delegate payloads, in execution order."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte).program
    return [
        bytes(program.backend_delegate_data[d.processed.index].data)
        for d in program.execution_plan[0].delegates
        if d.id == VGF_BACKEND
    ]
