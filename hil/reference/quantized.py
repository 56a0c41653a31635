"""Quantized models shared between recipes whose quantizer behaves identically on the model.

PT2E quantization (prepare, calibrate, convert) is a large part of an int8 export, calibration
most of all. Recipes that differ only after quantization (Ethos-U55-128 vs -256, another system
config, memory mode or Vela flag), and often even Ethos-U55 vs U85, quantize a model the same
way. Whether they do is measured, not assumed: the store key covers the *prepared* model, i.e.
the graph the quantizer annotated with its observers (code, every observer's configuration and
every tensor the graph reads), plus the calibration samples and tool versions. Equal prepared
models calibrate and convert to equal quantized models, so they share one entry; any difference
the quantizer makes (a U55-only decomposition, another softmax lowering) gives another key.

Beside the program the store keeps what the verdict needs from the quantized model: its outputs
on the case's inputs (the target check's reference: the converted model itself, the same for
every recipe, never adjusted to what one lowering computes), each output's step, and its
rounding sensitivity (hil.reference.rounding), all computed once per entry.

Entries live in `<cache root>/shared/quantized/<key>/` (program.pt2, reference.npz, meta.json),
built in a private folder and renamed into place under a file lock, like the artifact cache.
Every recipe lowers the program *as loaded from the store*, so an export is the same whether
the quantized model was built now or reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import operator
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hil.arrays import Array
from hil.artifacts.fingerprint import tensor_fingerprint
from hil.artifacts.keys import key_of
from hil.artifacts.parts import OutputSensitivity
from hil.artifacts.probe import difference_key, read_probe, served_collision, write_probe
from hil.artifacts.source_digest import module_source_digest
from hil.artifacts.store import ExportProduct
from hil.call import fresh
from hil.case import BuiltCase
from hil.errors import CacheError, ExportError
from hil.export.lowering import (
    export_flat,
    export_program,
    exporter_step,
    output_scales,
    run_reference,
)
from hil.locks import file_lock
from hil.reference import rounding
from hil.speedups import switch as speedups

log = logging.getLogger("hil.reference.quantized")

FORMAT = 2


@dataclass(frozen=True)
class QuantizedModel:
    """A quantized model ready to lower: its exported program, output steps and outputs."""

    program: Any  # torch.export.ExportedProgram, as loaded from the store
    output_scales: tuple[float | None, ...]
    reference: tuple[Array, ...]  # the quantized PyTorch model's outputs on the case's inputs
    key: str
    reused: bool  # True when another recipe (or an earlier run) built it
    quantized_ops: int = 0  # quantizers acting on activations (0: the model stayed float)
    sensitivity: tuple[OutputSensitivity | None, ...] = ()

    def product(self, pte: bytes, details: Mapping[str, Any]) -> ExportProduct:
        """A program lowered from this model, with the model's facts the verdict needs (its
        outputs, output steps, quantizers and rounding sensitivity) beside it."""
        return ExportProduct(
            pte=pte,
            output_scales=self.output_scales,
            quantized_reference=self.reference,
            quantized_ops=self.quantized_ops,
            sensitivity=self.sensitivity,
            details=details,
        )


def prepare(built: BuiltCase, quantizer: Any) -> torch.fx.GraphModule:
    """torch.export, then PT2E prepare: the model with the quantizer's observers in place."""
    # check_guards=False: torch 2.13 otherwise inserts a _guards_fn call that the
    # quantizer annotations and the Arm passes do not expect.
    graph = export_flat(built.module, built.inputs).module(check_guards=False)
    if has_control_flow(graph) and quantizes_branches(quantizer):
        return prepare_with_branches(graph, quantizer)
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    prepared: torch.fx.GraphModule = prepare_pt2e(graph, quantizer)
    return prepared


def quantizes_branches(quantizer: Any) -> bool:
    """Whether ExecuTorch's own flow for this quantizer quantizes control-flow branches: the
    Arm backends' (TOSAQuantizer and its Ethos-U and VGF kinds) do; XNNPACK's and Cortex-M's
    prepare the top-level graph only, and so does hil for them."""
    from executorch.backends.arm.quantizer import TOSAQuantizer

    return isinstance(quantizer, TOSAQuantizer)


def prepare_with_branches(graph: torch.fx.GraphModule, quantizer: Any) -> torch.fx.GraphModule:
    """PT2E prepare of `graph` and of its control-flow branches, nested ones included."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e

    prepared: torch.fx.GraphModule = prepare_pt2e(graph, quantizer)
    for name, branch in control_flow_branches(prepared):
        prepared.set_submodule(name, prepare_with_branches(branch, quantizer), strict=True)
    setattr(prepared, BRANCHES_PREPARED, True)
    return prepared


BRANCHES_PREPARED = "_hil_branches_prepared"  # convert() converts the branches it was given


def convert(prepared: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """PT2E convert of a calibrated model; branches prepare_with_branches prepared, each on
    its own."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

    branches = (
        [(name, convert(branch)) for name, branch in control_flow_branches(prepared)]
        if getattr(prepared, BRANCHES_PREPARED, False)
        else []
    )
    converted: torch.fx.GraphModule = convert_pt2e(prepared)
    for name, branch in branches:
        converted.set_submodule(name, branch, strict=True)
    return converted


CONTROL_FLOW = (torch.ops.higher_order.cond, torch.ops.higher_order.while_loop)


def has_control_flow(graph: torch.fx.GraphModule) -> bool:
    return any(n.target in CONTROL_FLOW for n in graph.graph.nodes if n.op == "call_function")


def control_flow_branches(graph: torch.fx.GraphModule) -> list[tuple[str, torch.fx.GraphModule]]:
    """The submodules PT2E prepare and convert leave alone: torch.cond's two branches and
    while_loop's condition (torchao handles a while_loop's body itself). Without them, an Arm
    partitioner finds their operators unquantized and leaves the loop on the CPU, which
    ExecuTorch cannot serialize (measured on ExecuTorch's test_while, u85-ref). ExecuTorch's
    TOSAQuantizer names them with `get_cond_while_submodules_ao`."""
    if not has_control_flow(graph):
        return []
    from executorch.backends.arm.quantizer.arm_quantizer import get_cond_while_submodules_ao

    found = get_cond_while_submodules_ao(graph, apply_quantization=True)
    return [(name, module) for name, module, _ in found]


def prepared_fingerprint(prepared: torch.fx.GraphModule) -> str:
    """sha256 of what calibration and conversion depend on: the graph's code, each observer's
    configuration (its repr before calibration) and every tensor the graph reads."""
    digest = hashlib.sha256(prepared.code.encode())
    for node in prepared.graph.nodes:
        if node.op not in ("get_attr", "call_module"):
            continue
        value = operator.attrgetter(str(node.target))(prepared)
        if isinstance(value, torch.Tensor):
            tensor_fingerprint(value, digest, label=str(node.target))
        else:
            digest.update(f"{node.target}={value!r}".encode())
    return digest.hexdigest()


# how hil calibrates, runs and measures the model: the sensitivity is stored in the entry too
CODE_MODULES = (
    "hil.reference.quantized",
    "hil.export.lowering",
    "hil.reference.rounding",
    "hil.call",
)


def store_key(built: BuiltCase, identity: Mapping[str, Any], prepared: torch.fx.GraphModule) -> str:
    own = {
        "format": FORMAT,
        "prepared": prepared_fingerprint(prepared),
        "quantizer": dict(identity),
        # how hil calibrates and runs the model (as code): a change there is another model
        # (measured: calibration on inputs the model wrote into gave a reference 2 steps off)
        "code": {m: module_source_digest(m) for m in CODE_MODULES},
        # histogram_search replaces calibration's search: a pristine run builds its own entry
        "speedups": speedups.declared(),
    }
    return key_of(built, own, values=True)[0]


def _save(built: BuiltCase, program: Any, converted: torch.fx.GraphModule, path: Path) -> None:
    """Saves the quantized program. Where torch.export's default (non-strict) capture gives a
    program it cannot serialize, the program is captured strictly, as ExecuTorch's own harness
    always captures it: measured on their nested `torch.cond` rows (ExecuTorch 1.5.1), the
    non-strict capture leaves a functional tensor as a constant inside the inner branch
    ("getattr nodes containing tensors should not appear in the graph"), the strict one saves
    and lowers."""
    case = built.case.name
    try:
        exporter_step(
            "saving the quantized program", case, lambda: torch.export.save(program, path)
        )
        return
    except ExportError as e:
        log.info("%s: the quantized program is captured again, strictly: %s", case, e)
    strict = export_program(built, converted, strict=True)
    exporter_step("saving the quantized program", case, lambda: torch.export.save(strict, path))


MAX_COLLISIONS = 3  # as for artifacts (hil.session.references)


def _eager_outputs(built: BuiltCase) -> tuple[Array, ...] | None:
    """The model's own outputs on the case's inputs (what the entry's probe records); None
    where eager cannot run it (nothing to guard with: the export says what is wrong)."""
    try:
        return run_reference(built.module, built.inputs)
    except Exception:
        return None


def _collision(built: BuiltCase, entry: Path, eager: tuple[Array, ...] | None) -> str | None:
    """The served-program guard (hil.artifacts.probe) on a reused quantized model: the key holds
    the input values, so the probe's inputs are the case's and its own outputs are at hand."""
    probe = read_probe(entry)
    if probe is None or eager is None:
        return None
    return served_collision(probe, lambda inputs: run_reference(built.module, inputs), eager)


class QuantizedStore:
    """Get-or-build of quantized programs under one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _locked(self, key: str) -> contextlib.AbstractContextManager[None]:
        return file_lock(
            self.root / "locks" / f"{key}.lock",
            lambda e: CacheError(f"cannot write the quantized-model store at {self.root}: {e}"),
        )

    def get(
        self,
        built: BuiltCase,
        identity: Mapping[str, Any],
        make_quantizer: Callable[[], Any],
    ) -> QuantizedModel:
        """The quantized model of `built` (identity: quantizer facts that convert may use)."""
        case = built.case.name
        prepared = exporter_step("PT2E prepare", case, lambda: prepare(built, make_quantizer()))
        key = store_key(built, identity, prepared)
        eager = _eager_outputs(built)
        for collisions in range(MAX_COLLISIONS + 1):
            entry = self.root / key
            with self._locked(key):
                reused = (entry / "meta.json").exists()
                if not reused:
                    self._build(built, prepared, entry, eager)
                clash = _collision(built, entry, eager) if reused else None
                if clash is None:
                    return self._load(entry, key, reused, case)
            if collisions == MAX_COLLISIONS:
                raise CacheError(
                    f"{case}: the quantized-model store served another model's quantized "
                    f"model {collisions + 1} times over (last {entry}, {clash})",
                    fix="report it to hil with the model; meanwhile run with --hil-cache-dir "
                    "on an empty folder",
                )
            log.warning(
                "KEY COLLISION: %s was served the quantized model %s, %s; building its own. "
                "Please report it to hil",
                case,
                entry,
                clash,
            )
            key = difference_key(key, eager or ())
        raise AssertionError("unreachable")

    def _build(
        self,
        built: BuiltCase,
        prepared: torch.fx.GraphModule,
        entry: Path,
        eager: tuple[Array, ...] | None,
    ) -> None:
        def calibrate_and_convert() -> torch.fx.GraphModule:
            with torch.no_grad():
                for sample in built.calibration_or_default():
                    prepared(*fresh(sample))
            return convert(prepared)

        converted = exporter_step("PT2E calibration", built.case.name, calibrate_and_convert)
        program = export_program(built, converted)
        reference = run_reference(converted, built.inputs)
        scales = output_scales(converted)
        moved = exporter_step(
            "measuring rounding sensitivity",
            built.case.name,
            lambda: rounding.sensitivity(converted, built.inputs, reference, scales),
        )
        self.root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f".{entry.name[:12]}-", dir=self.root))
        try:
            _save(built, program, converted, workdir / "program.pt2")
            np.savez(workdir / "reference.npz", **{f"out{i}": a for i, a in enumerate(reference)})
            meta = {
                "format": FORMAT,
                "output_scales": list(scales),
                "quantized_ops": rounding.runtime_quantizers(converted),
                "sensitivity": [m.to_dict() if m else None for m in moved],
            }
            if eager is not None:  # what the served-program guard compares with
                write_probe(workdir, built.case.name, built.inputs, eager)
            (workdir / "meta.json").write_text(json.dumps(meta))
            os.replace(workdir, entry)
        except OSError as e:
            raise CacheError(f"cannot store a quantized model under {self.root}: {e}") from e
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _load(self, entry: Path, key: str, reused: bool, case: str) -> QuantizedModel:
        try:
            meta = json.loads((entry / "meta.json").read_text())
            with np.load(entry / "reference.npz") as data:
                reference = tuple(data[f"out{i}"] for i in range(len(data.files)))
            scales = tuple(meta["output_scales"])
            quantized_ops = int(meta["quantized_ops"])
            moved = tuple(
                OutputSensitivity.from_dict(m) if m else None for m in meta["sensitivity"]
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            shutil.rmtree(entry, ignore_errors=True)
            raise CacheError(
                f"quantized model {entry} is unreadable ({e}); it was removed",
                fix="run again: it will be rebuilt",
            ) from e
        program = exporter_step(
            "loading the quantized program", case, lambda: torch.export.load(entry / "program.pt2")
        )
        if reused:
            log.info("%s: reusing quantized model %s", case, key[:12])
        return QuantizedModel(program, scales, reference, key, reused, quantized_ops, moved)
