"""Vela's per-layer estimate for one delegate, attributed to the TOSA operators it came from.

What ethos-u-vela 5.1.0 writes (measured): with `--verbose-performance` it prints a per-layer
table and writes `<name>_per-layer.csv` (Original Operator, NNG Operator, Op Cycles, NPU, SRAM
AC, ..., MAC Count, Name), one row per operator it scheduled. Its "Name" is the scheduled op's
output tensor after fusing (a CONV2D fused with its RESCALE is named after the rescale's output,
Vela's own split tensors are "#99"), so the csv cannot say which TOSA operator a row belongs to.
With `--enable-debug-db` Vela also writes `<name>_debug.xml`, whose "perf" table carries the
same rows with a `source_id`, and whose "source" table maps that id to the operator's index in
the TOSA graph it read (`ext_key`; checked against the graph's operator types). hil reads those
two tables. The "NPU" column adds up to the summary's `cycles_npu` (the npu_cycles hil reports);
"Op Cycles" can be more than NPU on the U55 (memory-bound operators). Operators that Vela fused
into another (the rescale after a convolution) have no row of their own: their cost is in the
operator they were fused into.

The recipe does not keep these files (it exports with the flags the .pte needs), so hil explore
runs Vela again on the delegate's kept TOSA graph with the recipe's recorded flags plus the two
above, through ExecuTorch's `vela_compile`, and keeps the result beside the viewer's files. The
command stream this produces must equal the delegate's bytes in the .pte, which is also what
proves which TOSA graph belongs to which delegate call (hil.explore.delegates).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

from hil.artifacts.tosa_graph import TosaGraph
from hil.capture import captured_output
from hil.compat.vela import command_stream
from hil.errors import ExploreError

VERBOSE_FLAGS = ("--verbose-performance", "--enable-debug-db")
DEBUG_DB = "output/out_debug.xml"
STAMP = "estimate.json"
STAMP_FORMAT = 1


@dataclass(frozen=True)
class LayerEstimate:
    """Vela's estimate for one TOSA operator (the sum over the NPU operators it became)."""

    op_index: int
    npu_cycles: int
    op_cycles: int
    macs: int
    vela_ops: tuple[str, ...]  # what Vela scheduled for it ("Conv2D", "MemoryCopy", ...)


def _no_layers() -> Mapping[int, LayerEstimate]:
    return MappingProxyType({})


@dataclass(frozen=True)
class DelegateEstimate:
    stream_sha256: str  # sha256 of the command stream Vela produced (ExecuTorch's packaging)
    layers: Mapping[int, LayerEstimate] = field(default_factory=_no_layers)
    npu_cycles: int = 0  # all rows
    unattributed_npu_cycles: int = 0  # rows whose source is no operator of the TOSA graph

    def to_json(self) -> dict[str, object]:
        return {
            "format": STAMP_FORMAT,
            "stream_sha256": self.stream_sha256,
            "npu_cycles": self.npu_cycles,
            "unattributed_npu_cycles": self.unattributed_npu_cycles,
            "layers": [asdict(layer) for layer in self.layers.values()],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> DelegateEstimate:
        layers = {}
        for item in data["layers"]:  # type: ignore[attr-defined]
            layer = LayerEstimate(
                int(item["op_index"]),
                int(item["npu_cycles"]),
                int(item["op_cycles"]),
                int(item["macs"]),
                tuple(item["vela_ops"]),
            )
            layers[layer.op_index] = layer
        return cls(
            str(data["stream_sha256"]),
            MappingProxyType(layers),
            int(data["npu_cycles"]),  # type: ignore[call-overload]
            int(data["unattributed_npu_cycles"]),  # type: ignore[call-overload]
        )


def estimate(graph: TosaGraph, flags: Sequence[str], folder: Path) -> DelegateEstimate:
    """Vela's per-layer estimate of `graph`, compiled into `folder` (reused while unchanged)."""
    tosa = graph.path.read_bytes()
    key = hashlib.sha256(tosa + "\0".join(flags).encode()).hexdigest()
    stamp = folder / STAMP
    try:
        kept = json.loads(stamp.read_text())
        if kept.get("format") == STAMP_FORMAT and kept.get("key") == key:
            return DelegateEstimate.from_json(kept)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    stream = _compile(tosa, [*flags, *VERBOSE_FLAGS], folder)
    result = parse_debug_db(
        (folder / DEBUG_DB).read_text(encoding="utf-8"), graph, hashlib.sha256(stream).hexdigest()
    )
    stamp.write_text(json.dumps({**result.to_json(), "key": key}))
    return result


def _compile(tosa: bytes, flags: list[str], folder: Path) -> bytes:
    from executorch.backends.arm.arm_vela import vela_compile

    folder.mkdir(parents=True, exist_ok=True)
    try:
        with captured_output() as printed:
            result = vela_compile(tosa, flags, intermediate_path=str(folder))
    except Exception as e:
        raise ExploreError(
            f"Vela failed on {folder.name}'s TOSA graph with {' '.join(flags)}: "
            f"{type(e).__name__}: {e}",
            fix="check that the installed ethos-u-vela is the one that exported the artifact",
        ) from e
    (folder / "vela.log").write_text("".join(printed))
    return command_stream(result)


def _table(xml: str, name: str) -> list[dict[str, str]]:
    match = re.search(rf'<table name="{name}">\s*<!\[CDATA\[\n(.*?)\]\]>', xml, re.S)
    if match is None:
        raise ExploreError(
            f"Vela's debug database has no {name!r} table",
            fix="hil reads the debug database of ethos-u-vela 5.1; check the installed version",
        )
    return list(csv.DictReader(io.StringIO(match.group(1))))


def parse_debug_db(xml: str, graph: TosaGraph, stream_sha256: str = "") -> DelegateEstimate:
    """Per TOSA operator: the perf rows whose source's ext_key is that operator's index."""
    source = {row["id"]: row for row in _table(xml, "source")}
    layers: dict[int, LayerEstimate] = {}
    total = unattributed = 0
    for row in _table(xml, "perf"):
        npu = int(float(row["npu_cycles"] or 0))
        total += npu
        origin = source.get(row["source_id"])
        index = int(origin["ext_key"]) if origin and origin["ext_key"] not in ("", "-1") else -1
        if not 0 <= index < len(graph.ops):
            unattributed += npu
            continue
        _check_type(graph, index, origin["operator"] if origin else "", row)
        old = layers.get(index)
        layers[index] = LayerEstimate(
            index,
            npu + (old.npu_cycles if old else 0),
            int(float(row["op_cycles"] or 0)) + (old.op_cycles if old else 0),
            int(float(row["mac_count"] or 0)) + (old.macs if old else 0),
            (*(old.vela_ops if old else ()), row["operator"]),
        )
    return DelegateEstimate(stream_sha256, MappingProxyType(layers), total, unattributed)


def _check_type(graph: TosaGraph, index: int, source_op: str, row: Mapping[str, str]) -> None:
    """Vela's name for the source operator must be the TOSA operator's (Conv2D ~ CONV2D)."""
    vela, tosa = _plain(source_op), _plain(graph.ops[index].op)
    if not (vela.startswith(tosa) or tosa.startswith(vela)):  # AvgPool ~ AVG_POOL2D
        raise ExploreError(
            f"Vela's debug database puts {row['operator']} (from a {source_op}) on TOSA operator "
            f"{index}, which is a {graph.ops[index].op} in {graph.path}",
            fix="the debug database's numbering changed; hil reads ethos-u-vela 5.1's",
        )


def _plain(name: str) -> str:
    return name.replace("_", "").strip('"').lower().removesuffix("2d")
