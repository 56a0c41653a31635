"""What the Arm recipes that lower to TOSA delegates (ethos-u, vgf) do once the lowering is
done, in one place: each delegate's TOSA graph (and Vela summary) kept beside the artifact, the
dump path taken out of the delegates, the partition report, the host program and the .pte."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.artifacts.partition import PartitionReport
from hil.recipes.arm_partition import (
    lowered_modules,
    partition_report,
    serialize_lowered,
    strip_dump_path,
)
from hil.recipes.host_program import host_program, save_host_program

DELEGATES = "delegates"  # the artifact's folder of delegate folders (delegate_0, ...)
# how a recipe keeps one delegate: (case, module, dump, its folder, compile spec, dumps used)
Keep = Callable[[str, Any, Path, Path, Any, set[Path]], Any]


@dataclass(frozen=True)
class Delegated:
    pte: bytes
    report: PartitionReport
    names: tuple[str, ...]  # delegate_0, delegate_1, ...: each one's folder under DELEGATES
    lowered: tuple[Any, ...]  # the lowered backend modules, in the program's order
    kept: tuple[Any, ...]  # what `keep` returned for each (Ethos-U: its Vela summary)


def keep_delegated(
    case: str,
    edge: Any,
    partitioner: Any,
    spec: Any,
    dump: Path,
    workdir: Path,
    keep: Keep,
    backend: str = "Ethos-U",
) -> Delegated:
    """The lowered `edge` program written out under `workdir`, each delegate by `keep`; `dump`
    (the backend's dump of intermediates) is removed after: each delegate's folder holds its
    own copy."""
    program = edge.exported_program()
    lowered = lowered_modules(program)
    names = tuple(f"delegate_{i}" for i in range(len(lowered)))
    used: set[Path] = set()
    kept = tuple(
        keep(case, module, dump, workdir / DELEGATES / name, spec, used)
        for name, module in zip(names, lowered, strict=True)
    )
    strip_dump_path(case, lowered, spec)
    report = partition_report(program, partitioner, 0, backend=backend)
    save_host_program(host_program(program, lambda i, _: names[i]), workdir)
    pte, report = serialize_lowered(case, edge, report)
    shutil.rmtree(dump, ignore_errors=True)
    return Delegated(pte, report, names, tuple(lowered), kept)
