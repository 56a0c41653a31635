"""A delegate's TOSA graph, read: operators by index, tensors by name, shape and type.

One reader for the TOSA flatbuffers the Arm recipes keep beside a .pte: the viewer draws them
(hil explore), their stage assertions count their operators (hil.executorch_ops), a delegate
whose inputs the reference model refuses is compared with them (hil.ethos_u), and the
explainer walks their operators with each one's layout and origin (hil.explain).
Read with the TOSA flatbuffer bindings of tosa-tools (in hil's venv). The TOSA adapter of Model
Explorer names the node of operator N of a region's block `<region>/opN` (`main/op5`), counting
every operator, constants included; Vela's debug database numbers the operators it read the
same way (its `ext_key`), which is how per-layer estimates find their node.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.errors import CacheError


@dataclass(frozen=True)
class TosaOp:
    index: int
    op: str  # "CONV2D", "RESCALE", ...
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    perms: tuple[int, ...] | None = None  # TRANSPOSE only
    location: str = ""  # the lowering's debug text (empty unless lowered in debug mode)


@dataclass(frozen=True)
class TosaGraph:
    path: Path
    region: str
    ops: tuple[TosaOp, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]  # "INT8", "FP32", ...

    def node_id(self, index: int) -> str:
        """The operator's node id in the viewer's TOSA graph."""
        return f"{self.region}/op{index}"

    def producer(self, tensor: str) -> TosaOp | None:
        for op in self.ops:
            if tensor in op.outputs:
                return op
        return None

    def io_shapes(self) -> tuple[tuple[int, ...], ...]:
        """Shapes of the graph's inputs, then its outputs (a delegate call's argument order)."""
        return tuple(self.shapes.get(name, ()) for name in (*self.inputs, *self.outputs))


def read_tosa(path: Path) -> TosaGraph:
    """The first block of the first region (what ExecuTorch's Arm backend writes)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CacheError(
            f"cannot read the TOSA graph {path}: {e}",
            fix="the artifact is damaged: delete its cache folder and run again to re-export",
        ) from e
    return parse_tosa(data, path)


def parse_tosa(data: bytes, path: Path = Path("<memory>")) -> TosaGraph:
    """`read_tosa` of bytes already read (`path` names where they came from)."""
    try:
        from tosa.DType import DType  # type: ignore[import-untyped]
        from tosa.Op import Op  # type: ignore[import-untyped]
        from tosa.TosaGraph import TosaGraph as Flat  # type: ignore[import-untyped]
    except ImportError as e:
        raise CacheError(
            "the TOSA bindings (tosa-tools) are not installed",
            fix="install executorch[ethos-u]>=1.4 into hil's venv (make setup)",
        ) from e
    try:
        graph = Flat.GetRootAsTosaGraph(data, 0)
        region = graph.Regions(0)
        block = region.Blocks(0)
        names = {value: name for name, value in vars(Op).items() if not name.startswith("_")}
        ops = tuple(_op(i, block.Operators(i), names) for i in range(block.OperatorsLength()))
        types = {value: name for name, value in vars(DType).items() if not name.startswith("_")}
        shapes, dtypes = {}, {}
        for i in range(block.TensorsLength()):
            tensor = block.Tensors(i)
            name = _text(tensor.Name())
            shapes[name] = tuple(int(tensor.Shape(j)) for j in range(tensor.ShapeLength()))
            dtypes[name] = types.get(tensor.Type(), f"UNKNOWN({tensor.Type()})")
        return TosaGraph(
            path=path,
            region=_text(region.Name()) or "region0",
            ops=ops,
            inputs=_strings(block, "Inputs"),
            outputs=_strings(block, "Outputs"),
            shapes=shapes,
            dtypes=dtypes,
        )
    except (AttributeError, IndexError, TypeError, ValueError, struct.error) as e:
        raise CacheError(
            f"cannot read the TOSA graph {path}: {type(e).__name__}: {e}",
            fix="the artifact is damaged: delete its cache folder and run again to re-export",
        ) from e


def _op(index: int, flat: Any, names: dict[int, str]) -> TosaOp:
    name = names.get(flat.Op(), f"UNKNOWN({flat.Op()})")
    perms = None
    if name == "TRANSPOSE" and flat.Attribute() is not None:
        from tosa.TransposeAttribute import TransposeAttribute  # type: ignore[import-untyped]

        table, attribute = flat.Attribute(), TransposeAttribute()
        attribute.Init(table.Bytes, table.Pos)
        perms = tuple(int(attribute.Perms(j)) for j in range(attribute.PermsLength()))
    location = flat.Location()
    return TosaOp(
        index=index,
        op=name,
        inputs=_strings(flat, "Inputs"),
        outputs=_strings(flat, "Outputs"),
        perms=perms,
        location=_text(location.Text()) if location is not None else "",
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _strings(table: Any, field: str) -> tuple[str, ...]:
    count = getattr(table, f"{field}Length")()
    read = getattr(table, field)
    return tuple(_text(read(i)) for i in range(count))
