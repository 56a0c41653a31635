"""Seeded faults in a delegate's TOSA graph, written with the TOSA serializer of tosa-tools.

Each fault changes one constant that exactly one operator reads, so the test knows which
operator the explainer must name. `plant` writes the faulty graph into an artifact folder and
records its sha256 in artifact.json, as an export would have: the reference target then runs it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tosa_serializer as ts  # type: ignore[import-untyped]

from hil.capture import captured_output

Change = Callable[[Any], int]  # changes a serializer block; returns the operator it broke


def _nth(block: Any, op: str, nth: int) -> tuple[int, Any]:
    found = [(i, o) for i, o in enumerate(block.operators) if o.op.name == op]
    return found[nth]


def scale_rescale_multiplier(nth: int = 0, factor: float = 0.75) -> Change:
    """The nth RESCALE's multipliers times `factor`: a wrong requantization."""

    def change(block: Any) -> int:
        index, op = _nth(block, "RESCALE", nth)
        tensor = block.tensors[op.inputs[1]]
        values = np.frombuffer(bytes(tensor.data), dtype=np.int32)
        tensor.data = list((values * factor).astype(np.int32).tobytes())
        return index

    return change


def scale_conv_rescale(nth_conv: int, factor: float = 0.75) -> Change:
    """The multipliers of the RESCALE that requantizes the nth convolution (CONV2D or
    DEPTHWISE_CONV2D, counted from 0) times `factor`."""

    def change(block: Any) -> int:
        convs = [o for o in block.operators if o.op.name in ("CONV2D", "DEPTHWISE_CONV2D")]
        accumulator = convs[nth_conv].outputs[0]
        index, op = next(
            (i, o)
            for i, o in enumerate(block.operators)
            if o.op.name == "RESCALE" and o.inputs[0] == accumulator
        )
        tensor = block.tensors[op.inputs[1]]
        values = np.frombuffer(bytes(tensor.data), dtype=np.int32)
        tensor.data = list((values * factor).astype(np.int32).tobytes())
        return index

    return change


def negate_weights(nth: int = 0, channel: int = 0) -> Change:
    """One output channel of the nth CONV2D's weights negated: a wrong weight constant."""

    def change(block: Any) -> int:
        index, op = _nth(block, "CONV2D", nth)
        tensor = block.tensors[op.inputs[1]]
        weights = (
            np.frombuffer(bytes(tensor.data), dtype=np.int8)
            .reshape([int(d) for d in tensor.shape])
            .copy()
        )
        weights[channel] = -weights[channel]
        tensor.data = list(weights.tobytes())
        return index

    return change


def rewrite(path: Path, change: Change) -> int:
    """Apply `change` to the TOSA graph at `path` in place; the operator index it broke."""
    serializer = ts.TosaSerializer("")
    with captured_output():
        assert serializer.loadTosaFlatbuffer(str(path))
    index = change(serializer.regions[0].basicBlocks[0])
    path.write_bytes(bytes(serializer.serialize()))
    return index


def plant(folder: Path, delegate: str, change: Change) -> int:
    """Write the faulty graph into the artifact folder and record its sha256 there."""
    meta_path = folder / "artifact.json"
    meta = json.loads(meta_path.read_text())
    entry = next(d for d in meta["details"]["delegates"] if d["name"] == delegate)
    graph = folder / entry["folder"] / "out.tosa"
    index = rewrite(graph, change)
    entry["tosa_sha256"] = hashlib.sha256(graph.read_bytes()).hexdigest()
    meta_path.write_text(json.dumps(meta, indent=2))
    return index
