"""Quantized models shared between recipes whose quantizer configuration is identical.

PT2E quantization (prepare, calibrate, convert) is a large part of an int8 export. Recipes that
differ only after quantization (Ethos-U55-128 vs -256, another system config, memory mode or Vela
flag) quantize the same model the same way, so the quantized program is stored once, keyed by
everything that shapes it: the model's fingerprint, its inputs and calibration samples, the
quantizer's identity (class, configuration, the TOSA profile it annotates for) and tool versions.

Entries live in `<cache root>/shared/quantized/<key>/` (program.pt2, reference.npz, meta.json),
built in a private folder and renamed into place under a file lock, like the artifact cache.
Every recipe lowers the program *as loaded from the store*, so an export is the same whether
the quantized model was built now or reused.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hil.arrays import Array
from hil.case import BuiltCase, Inputs
from hil.errors import CacheError
from hil.fingerprint import (
    digest_of,
    input_spec,
    model_fingerprint,
    tensors_fingerprint,
    tool_versions,
)
from hil.recipes.lowering import (
    export_program,
    exporter_step,
    output_scales,
    quantize,
    run_reference,
)

log = logging.getLogger("hil.recipes.quantized")

FORMAT = 1


@dataclass(frozen=True)
class QuantizedModel:
    """A quantized model ready to lower: its exported program, output steps and outputs."""

    program: Any  # torch.export.ExportedProgram, as loaded from the store
    output_scales: tuple[float | None, ...]
    reference: tuple[Array, ...]  # the quantized PyTorch model's outputs on the case's inputs
    key: str
    reused: bool  # True when another recipe (or an earlier run) built it


def prepared_case(
    built: BuiltCase, transform: Callable[[torch.Tensor], torch.Tensor] | None
) -> BuiltCase:
    """The case with its inputs and calibration passed through `transform` (e.g. channels-last)."""
    if transform is None:
        return built
    samples = [tuple(transform(t) for t in s) for s in built.calibration_or_default()]
    inputs: Inputs = tuple(transform(t) for t in built.inputs)
    return replace(built, inputs=inputs, calibration=samples)


def store_key(built: BuiltCase, identity: Mapping[str, Any]) -> str:
    return digest_of(
        {
            "format": FORMAT,
            "model": model_fingerprint(built.module),
            "inputs": input_spec(built.inputs),
            "input_values": tensors_fingerprint(built.inputs),
            "calibration": tensors_fingerprint(
                t for sample in built.calibration_or_default() for t in sample
            ),
            "quantizer": dict(identity),
            "versions": dict(tool_versions()),
        }
    )


class QuantizedStore:
    """Get-or-build of quantized programs under one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        try:
            (self.root / "locks").mkdir(parents=True, exist_ok=True)
            handle = (self.root / "locks" / f"{key}.lock").open("w")
        except OSError as e:
            raise CacheError(f"cannot write the quantized-model store at {self.root}: {e}") from e
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def get(
        self,
        built: BuiltCase,
        identity: Mapping[str, Any],
        make_quantizer: Callable[[], Any],
    ) -> QuantizedModel:
        key = store_key(built, identity)
        entry = self.root / key
        with self._locked(key):
            reused = (entry / "meta.json").exists()
            if not reused:
                self._build(built, make_quantizer, entry)
            return self._load(entry, key, reused, built.case.name)

    def _build(self, built: BuiltCase, make_quantizer: Callable[[], Any], entry: Path) -> None:
        converted = quantize(built, make_quantizer())
        program = export_program(built, converted)
        reference = run_reference(converted, built.inputs)
        self.root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f".{entry.name[:12]}-", dir=self.root))
        try:
            torch.export.save(program, workdir / "program.pt2")
            np.savez(workdir / "reference.npz", **{f"out{i}": a for i, a in enumerate(reference)})
            meta = {"format": FORMAT, "output_scales": list(output_scales(converted))}
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
        except (OSError, ValueError, KeyError) as e:
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
        return QuantizedModel(
            program=program,
            output_scales=tuple(meta["output_scales"]),
            reference=reference,
            key=key,
            reused=reused,
        )
