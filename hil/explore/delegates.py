"""Which kept TOSA graph belongs to which Ethos-U delegate call, and the order the adapter wants.

A hil ethos-u artifact keeps one folder per delegate (`delegates/delegate_N/out.tosa`, numbered
in the order ExecuTorch's lowering listed the lowered modules). The .pte calls its delegates
in program order. hil does not assume the two orders agree: Vela compiles every kept graph
again (hil.explore.vela_layers, which also yields the per-layer estimate) and a graph belongs to
the call whose processed bytes are exactly the command stream it compiles to. The tensor shapes
of the call's arguments must then be the graph's input and output shapes as well. Should the
streams not match (an artifact without recorded Vela flags), graphs are paired by their shapes
where those are unique, else in the recorded order, and `paired_by` says which.

The PTE adapter (pte-adapter-model-explorer 0.2.0) takes the graphs as `delegate_file_paths`
and gives the k-th Ethos-U call in program order the path at index `len - 1 - k`: it wants them
in REVERSE program order (after a stable sort by an `output_tag<N>_` file-name pattern, which
`out.tosa` does not match). Given in program order, the graphs of two delegates are silently
swapped. `adapter_paths` is the one place that knows this; tests check the result by shapes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.artifacts.pte_program import DelegateCall, Program
from hil.artifacts.tosa_graph import TosaGraph, read_tosa
from hil.errors import ExploreError
from hil.explore.vela_layers import DelegateEstimate, estimate

ETHOS_U_BACKEND = "EthosUBackend"
VGF_BACKEND = "VgfBackend"
TOSA_FILE = "out.tosa"

log = logging.getLogger("hil.explore.delegates")


@dataclass(frozen=True)
class KeptDelegate:
    """A delegate call of the .pte with the TOSA graph hil kept for it."""

    call: DelegateCall
    name: str  # the artifact's delegate folder name, "delegate_1"
    graph: TosaGraph
    estimate: DelegateEstimate | None  # None when Vela's flags are not recorded
    paired_by: str = "command stream"  # or "shapes", "order" (see _pair)


def kept_delegates(
    program: Program, folder: Path, details: Mapping[str, Any], work: Path
) -> tuple[KeptDelegate, ...]:
    """Pair every Ethos-U call of `program` with its kept graph, in program order."""
    calls = program.calls_to(ETHOS_U_BACKEND)
    recorded = list(details.get("delegates") or ())
    if not calls:
        return ()
    if len(recorded) != len(calls):
        raise ExploreError(
            f"{program.path} calls {len(calls)} Ethos-U delegate(s) but its artifact.json "
            f"records {len(recorded)}",
            fix="the artifact is inconsistent: delete its cache folder and export again",
        )
    flags = [str(f) for f in details.get("vela_flags") or ()]
    kept = []
    for item in recorded:
        name = str(item["name"])
        graph = read_tosa(folder / str(item["folder"]) / TOSA_FILE)
        found = estimate(graph, flags, work / name) if flags else None
        _check_summary(name, found, item)
        kept.append((name, graph, found))
    return tuple(_pair(program, calls, kept))


def _check_summary(name: str, found: DelegateEstimate | None, item: Mapping[str, Any]) -> None:
    want = (item.get("vela") or {}).get("npu_cycles")
    if found is not None and want is not None and found.npu_cycles != int(want):
        log.warning(
            "%s: Vela's per-layer NPU cycles add up to %d, its summary said %d",
            name,
            found.npu_cycles,
            want,
        )


def _pair(
    program: Program,
    calls: Sequence[DelegateCall],
    kept: Sequence[tuple[str, TosaGraph, DelegateEstimate | None]],
) -> list[KeptDelegate]:
    """By exact command stream; failing that (no recorded Vela flags, or a Vela whose debug
    flags change the stream), by shapes where they are unique, else in the recorded order."""
    Kept = tuple[str, TosaGraph, DelegateEstimate | None]
    by_stream: dict[str, Kept] = {e.stream_sha256: (n, g, e) for n, g, e in kept if e}
    digests = [hashlib.sha256(call.blob).hexdigest() for call in calls]
    if all(d in by_stream for d in digests) and len(set(digests)) == len(calls):
        pairs: list[tuple[str, TosaGraph, DelegateEstimate | None, str]] = [
            (*by_stream[d], "command stream") for d in digests
        ]
    else:
        if by_stream:
            log.warning(
                "the kept TOSA graphs do not compile to the .pte's command streams "
                "with Vela's debug flags: pairing by shapes"
            )
        signatures = [sorted(g.io_shapes()) for _, g, _ in kept]
        pairs = []
        for position, call in enumerate(calls):
            same = [i for i, sig in enumerate(signatures) if sig == sorted(call.shapes)]
            index, how = (same[0], "shapes") if len(same) == 1 else (position, "order")
            pairs.append((*kept[index], how))
    paired = []
    for call, (name, graph, found, how) in zip(calls, pairs, strict=True):
        if sorted(graph.io_shapes()) != sorted(call.shapes):
            raise ExploreError(
                f"{program.path}: {name}'s TOSA graph has input/output shapes "
                f"{list(graph.io_shapes())}, but call {call.instruction.node_id} passes "
                f"{list(call.shapes)}",
                fix="the artifact's delegate folders do not match its .pte: export it again",
            )
        paired.append(KeptDelegate(call, name, graph, found, how))
    if len({d.name for d in paired}) != len(paired):
        raise ExploreError(
            f"{program.path}: two Ethos-U calls pair with one kept TOSA graph",
            fix="the artifact's delegate folders do not match its .pte: export it again",
        )
    return paired


def kept_vgf_delegates(
    program: Program, folder: Path, details: Mapping[str, Any]
) -> tuple[KeptDelegate, ...]:
    """Pair every VGF call of `program` with its kept delegate folder by the payload's sha256
    (the recipe records the VGF it kept, byte for byte the call's). The viewer's PTE adapter
    expands a VGF delegate from the payload itself; the kept TOSA graph is what it was
    converted from."""
    recorded = {
        str(d["vgf_sha256"]): d for d in details.get("delegates") or () if "vgf_sha256" in d
    }
    kept = []
    for call in program.calls_to(VGF_BACKEND):
        item = recorded.get(hashlib.sha256(call.blob).hexdigest())
        if item is None:
            raise ExploreError(
                f"{program.path}: VGF call {call.instruction.node_id}'s payload is none of the "
                "VGF files its artifact.json records",
                fix="the artifact is inconsistent: delete its cache folder and export again",
            )
        graph = read_tosa(folder / str(item["folder"]) / TOSA_FILE)
        kept.append(KeptDelegate(call, str(item["name"]), graph, None, "payload"))
    return tuple(kept)


def adapter_paths(delegates: Sequence[KeptDelegate]) -> list[Path]:
    """The TOSA files as the PTE adapter's `delegate_file_paths` wants them: the Ethos-U
    delegates', reversed (a VGF delegate it expands from its own payload)."""
    return [d.graph.path for d in reversed(delegates) if d.call.backend == ETHOS_U_BACKEND]
