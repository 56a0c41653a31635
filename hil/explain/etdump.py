"""ExecuTorch's devtools steps of hil.explain.cpu: the ETRecord of a re-export, one run with
ETDump and a debug buffer on the in-process runtime, and the Inspector's pairing of each
runtime output with the reference's value for it (`Inspector.calculate_numeric_gap`).

What each needs: the ETRecord (from `to_edge_transform_and_lower(generate_etrecord=True)`,
here through hil.export.lowering.recording_etrecord) with representative inputs, which the
Inspector runs the reference program on; the ETDump and debug buffer
(`Runtime.load_program(enable_etdump=True, debug_buffer_size=N)`, then
`write_etdump_result_to_file`) from a run on the same inputs.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hil.artifacts.pte_program import Program, read_program
from hil.case import BuiltCase
from hil.errors import ExplainError, ProgramUnreadable
from hil.export.lowering import recording_etrecord
from hil.recipes.base import Recipe
from hil.runner.driver import DeviceTrace

log = logging.getLogger("hil.explain.etdump")

REFERENCE_GRAPHS = ("exported_program", "edge_dialect_exported_program")


@dataclass(frozen=True)
class Pair:
    """One runtime output and the reference's value for it, as the Inspector paired them."""

    handles: tuple[int, ...]
    reference_ops: tuple[str, ...]
    reference: torch.Tensor
    runtime: torch.Tensor


# -- the program and its ETRecord -----------------------------------------------------------


def read(pte: Path) -> Program:
    """The artifact's instructions; a missing or damaged file is an ExplainError."""
    if not pte.is_file():
        raise ExplainError(
            f"no program to explain: {pte} does not exist",
            fix="export the case first (session.artifact, or run its check), or pass the "
            "artifact of the check that failed",
        )
    try:
        return read_program(pte)
    except ProgramUnreadable as e:
        raise ExplainError(
            f"cannot explain {pte}: {e.message}",
            fix="the cache entry is damaged: delete its folder and run the check again, which "
            "re-exports it",
        ) from e


def _signature(program: Program) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    return tuple((i.kind, i.kernel, i.args) for i in program.instructions)


def record(built: BuiltCase, recipe: Recipe, workdir: Path, program: Program) -> Any:
    """Re-export with an ETRecord, check it is the artifact's program, add the case's inputs."""
    from executorch.devtools.etrecord import parse_etrecord

    from hil.speedups import switch as speedups

    path = workdir / "model.etrecord"
    export_dir = workdir / "reexport"
    export_dir.mkdir(exist_ok=True)
    speedups.install()
    with recording_etrecord(path):
        product = recipe.export(built, export_dir)
    if not path.is_file():
        raise ExplainError(
            f"recipe {recipe.name!r} wrote no ETRecord: it does not lower through "
            "hil.export.lowering.lower_to_pte",
            fix="lower the recipe with lower_to_pte so hil.explain can record the program",
        )
    again = export_dir / "model.pte"
    again.write_bytes(product.pte)
    if _signature(read_program(again)) != _signature(program):
        raise ExplainError(
            f"re-exporting {built.case.name!r} with {recipe.name} gives another program than "
            f"{program.path} (other instructions): its ETRecord would not describe the artifact",
            fix="the recipe's code or the tools changed since the artifact was made: delete the "
            "cache entry and run the check again, then explain the new artifact",
        )
    etrecord = parse_etrecord(str(path))
    etrecord.update_representative_inputs(list(built.inputs))
    etrecord.save(str(path))  # complete for anyone who opens it with the Inspector later
    return etrecord


# -- the run with every intermediate kept --------------------------------------------------


def debug_buffer_size(program: Program) -> int:
    """Room for every tensor value the plan holds, at 8 bytes an element plus alignment."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(program.path.read_bytes()).program.execution_plan[0]
    total = 0
    for value in plan.values:
        sizes = getattr(value.val, "sizes", None)
        if sizes is not None:
            total += 8 * math.prod(int(s) for s in sizes) + 64
    return max(1 << 20, 2 * total)


def run_with_etdump(
    pte: Path, program: Program, built: BuiltCase, workdir: Path
) -> tuple[Path, Path]:
    """Run the .pte once here with ETDump and a debug buffer; return both files."""
    from executorch.runtime import Runtime

    etdump, debug = workdir / "run.etdp", workdir / "run.debug"
    try:
        loaded = Runtime.get().load_program(
            pte, enable_etdump=True, debug_buffer_size=debug_buffer_size(program)
        )
        loaded.load_method("forward").execute(list(built.inputs))
        loaded.write_etdump_result_to_file(str(etdump), str(debug))
    except RuntimeError as e:
        raise ExplainError(
            f"the ExecuTorch runtime could not run {pte} with ETDump: {e}",
            fix="check the program runs on the host target (hil check CASE --target host); a "
            "program for a backend this runtime lacks cannot be explained here",
        ) from e
    return etdump, debug


def device_files(trace: DeviceTrace, workdir: Path) -> tuple[Path, Path]:
    """The device's ETDump and debug buffer as the files the Inspector reads."""
    etdump, debug = workdir / "device.etdp", workdir / "device.debug"
    etdump.write_bytes(trace.etdump)
    debug.write_bytes(trace.debug)
    return etdump, debug


# -- the Inspector's pairing ----------------------------------------------------------------


def _max_abs_comparator() -> Any:
    """A comparator for calculate_numeric_gap: the largest element-wise |difference|."""
    from executorch.devtools.inspector.numerical_comparator.numerical_comparator_base import (
        NumericalComparatorBase,
    )

    class MaxAbs(NumericalComparatorBase):  # type: ignore[misc]
        def element_compare(self, a: Any, b: Any) -> float:
            return float(_tensor(a).sub(_tensor(b)).abs().max()) if _tensor(a).numel() else 0.0

    return MaxAbs()


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, Sequence) and not isinstance(value, torch.Tensor) and len(value) == 1:
        value = value[0]
    return torch.as_tensor(value).detach().to(torch.float64)


def pairs(
    etrecord: Any, etdump: Path, debug: Path, built: BuiltCase
) -> tuple[list[Pair], torch.fx.GraphModule]:
    """The Inspector's (reference, runtime) pairs, and the reference graph they come from."""
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=str(etdump), etrecord=etrecord, debug_buffer_path=str(debug)
        )
        table, name = _numeric_gap(inspector)
    if name == "exported_program":
        program = etrecord.exported_program
    else:
        program = etrecord.edge_dialect_program
    found = []
    for row in table.itertuples():
        reference, runtime = (
            _tensor(row.aot_intermediate_output),
            _tensor(row.runtime_intermediate_output),
        )
        if reference.shape != runtime.shape:
            log.info("%s: skipped %s, shapes differ", built.case.name, row.aot_ops)
            continue
        handles = tuple(int(h) for h in row.runtime_debug_handle)
        found.append(Pair(handles, tuple(row.aot_ops), reference, runtime))
    return found, program.module()


def _numeric_gap(inspector: Any) -> tuple[Any, str]:
    """calculate_numeric_gap on the ATen program, or on the edge program where debug handles
    cannot be carried back to ATen (Inspector raises ValueError)."""
    last: Exception | None = None
    for name in REFERENCE_GRAPHS:
        try:
            table = inspector.calculate_numeric_gap(_max_abs_comparator(), reference_graph=name)
            return table, name
        except ValueError as e:
            last = e
    raise ExplainError(
        f"the Inspector could not pair the runtime's intermediates with the reference: {last}",
        fix="report it with the case: ExecuTorch's debug handles did not survive this lowering",
    ) from last


# -- instructions ------------------------------------------------------------------------------


def instructions_of(etrecord: Any) -> Mapping[int, frozenset[int]]:
    """Each .pte instruction's debug handles, from the ETRecord's debug-handle map."""
    table = etrecord._debug_handle_map["forward"]
    found = {}
    for instruction, handles in table.items():
        listed = handles if isinstance(handles, (list, tuple)) else [handles]
        found[int(instruction)] = frozenset(int(h) for h in listed)
    return found


def instruction_of(pair: Pair, by_instruction: Mapping[int, frozenset[int]]) -> int:
    """The last instruction sharing a handle with the pair: the Inspector keeps, of the
    instructions one handle spans (permute_copy + addmm), the output of the last."""
    wanted = set(pair.handles)
    matches = [i for i, handles in by_instruction.items() if handles & wanted]
    if not matches:
        raise ExplainError(f"no instruction of the program has debug handles {pair.handles}")
    return max(matches)
