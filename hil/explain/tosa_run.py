"""Run an artifact's NPU delegates in the TOSA reference model with every tensor kept.

The reference model returns only a block's outputs, so each delegate's graph is rewritten (with
the TOSA serializer of tosa-tools) to list every operator's output among the block's outputs,
after the original ones. The host program then runs as the target runs it (the CPU part on
PyTorch, each delegate call in the reference model), so each delegate sees exactly the inputs
it gets on the target, and every tensor it computes is kept by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hil.arrays import Array
from hil.artifacts.store import Artifact
from hil.artifacts.tosa_graph import TosaGraph, read_tosa
from hil.call import fresh
from hil.capture import captured_output
from hil.case import BuiltCase
from hil.errors import CacheError, ExplainError, HilError
from hil.ethos_u.tosa_delegate import TensorSpec, TosaRunner, run_reference_model
from hil.recipes.delegate_files import TOSA_FILE
from hil.recipes.host_program import load_host_program

NO_VALUE_OPS = ("CONST", "CONST_SHAPE")  # outputs known without running (or not tensors)
FIX_REEXPORT = "delete the artifact's cache entry to re-export it"


@dataclass
class DelegateRun:
    """What one delegate computed on the target's inputs: every tensor by name."""

    name: str
    block: TosaGraph
    values: dict[str, Array] = field(default_factory=dict)
    input_orders: tuple[tuple[int, ...], ...] = ()  # dim order of each input as passed


def load_graph(path: Path) -> Any:
    """The serializer's editable graph of a TOSA file (the serializer reads files only)."""
    import tosa_serializer as ts  # type: ignore[import-untyped]

    serializer = ts.TosaSerializer("")
    with captured_output():  # it prints a version notice for every graph
        loaded = serializer.loadTosaFlatbuffer(str(path))
    if not loaded or not serializer.regions or not serializer.regions[0].basicBlocks:
        raise ExplainError(
            f"{path} is not a TOSA flatbuffer the serializer can read", fix=FIX_REEXPORT
        )
    return serializer


def read_graph(path: Path) -> TosaGraph:
    """A delegate's TOSA graph (hil.artifacts.tosa_graph), refused as the explainer's error."""
    try:
        return read_tosa(path)
    except CacheError as e:
        raise ExplainError(
            f"{path} is not a TOSA flatbuffer hil can read: {e.message}", fix=FIX_REEXPORT
        ) from e


def expose_all(path: Path) -> bytes:
    """The graph of `path` with every operator's output also a block output (original first)."""
    serializer = load_graph(path)
    block = serializer.regions[0].basicBlocks[0]
    listed = set(block.outputs)
    for op in block.operators:
        if op.op.name in NO_VALUE_OPS:
            continue
        for tensor in op.outputs:
            if tensor not in listed:
                block.addOutput(tensor)
                listed.add(tensor)
    return bytes(serializer.serialize())


def delegate_graph(artifact: Artifact, name: str, folder: str, sha256: str) -> Path:
    """A delegate's out.tosa, checked against the sha256 recorded at export."""
    path = artifact.folder / folder / TOSA_FILE
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExplainError(
            f"delegate {name}'s TOSA graph {path} cannot be read: {e.strerror}", fix=FIX_REEXPORT
        ) from e
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ExplainError(
            f"{path} does not match the sha256 recorded at export (damaged or replaced)",
            fix=FIX_REEXPORT,
        )
    return path


class _KeepingRunner(TosaRunner):
    """A TosaRunner that runs the exposed graphs and keeps every tensor they compute."""

    def __init__(self, runs: Mapping[str, DelegateRun], graphs: Mapping[str, bytes]) -> None:
        super().__init__(graphs, self._run_exposed)
        self.runs = runs
        self._current = ""

    def call(
        self, delegate: str, outputs: list[TensorSpec], inputs: Sequence[torch.Tensor]
    ) -> list[torch.Tensor]:
        self._current = delegate
        if delegate in self.runs:
            self.runs[delegate].input_orders = tuple(tuple(t.dim_order()) for t in inputs)
        return super().call(delegate, outputs, inputs)

    def _run_exposed(self, graph: bytes, inputs: list[Array]) -> tuple[list[Array], str, str]:
        results, status, messages = run_reference_model(graph, inputs)
        run = self.runs[self._current]
        names = [*run.block.outputs, *_exposed_names(run.block)]
        run.values.update(zip(names, results, strict=False))
        run.values.update(zip(run.block.inputs, inputs, strict=True))
        return results[: len(run.block.outputs)], status, messages


def _exposed_names(block: TosaGraph) -> list[str]:
    """The outputs `expose_all` appends, in its order."""
    listed = set(block.outputs)
    names = []
    for op in block.ops:
        if op.op in NO_VALUE_OPS:
            continue
        for tensor in op.outputs:
            if tensor not in listed:
                names.append(tensor)
                listed.add(tensor)
    return names


def run_keeping_tensors(
    built: BuiltCase, artifact: Artifact, graphs: Mapping[str, Path]
) -> dict[str, DelegateRun]:
    """Run the artifact's host program on the case's inputs; every delegate tensor kept."""
    runs = {name: DelegateRun(name, read_graph(path)) for name, path in graphs.items()}
    exposed = {name: expose_all(path) for name, path in graphs.items()}
    try:
        module = load_host_program(artifact.folder)
    except HilError as e:
        raise ExplainError(e.message, fix=e.fix) from e
    runner = _KeepingRunner(runs, exposed)
    with torch.no_grad(), runner:
        module(*fresh(built.inputs))
    for name, run in runs.items():
        if not run.values:
            raise ExplainError(
                f"the host program never called NPU delegate {name}", fix=FIX_REEXPORT
            )
    return runs
