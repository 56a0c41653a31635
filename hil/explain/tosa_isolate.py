"""Each TOSA operator of a delegate run on the reference's own inputs (hil.explain.tosa).

Against the reference chain, a deep graph's tensors drift: each operator works on its
predecessors' rounded values, so rounding differences add up (healthy MobileNetV2 reaches 28
steps at its last convolution). To judge each operator on its own, the delegate's graph gets a
second copy of every operator appended (the serializer cannot change an operator's inputs, but
it can add operators), whose inputs are, for every tensor that has a counterpart in the
quantized model, that counterpart's integers (a new graph input, `<tensor>@ref`), and else the
copy's own upstream tensor (`<tensor>@iso`), or the original constant or graph input. So every
copied operator, or the few operators that implement one model node (CONV2D + RESCALE), starts
from the reference's values, and its output's error is its own. One reference-model run per
delegate computes all of them (the original operators run along in it, unread: a graph's
outputs cannot be removed either). A tensor without a counterpart (inside a group, or whose
layout the shapes leave open) is fed the copy's own upstream value, so a few operators may
share a judgement; the tensors the delegate receives are the ones it got on the target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hil.arrays import Array
from hil.errors import ExplainError
from hil.ethos_u.tosa_delegate import run_reference_model
from hil.explain.tosa_run import NO_VALUE_OPS, DelegateRun, load_graph

ISOLATED = "@iso"  # suffix of the copy's tensors
FED = "@ref"  # suffix of the inputs that carry the reference's values
DTYPES = {"INT8": np.int8, "INT16": np.int16, "UINT8": np.uint8, "INT32": np.int32}


def isolated_graph(path: Path, run: DelegateRun, fed: Sequence[str]) -> tuple[bytes, list[str]]:
    """The graph at `path` with the isolated copy appended, the tensors in `fed` read from new
    graph inputs (in `fed`'s order, after the original inputs); and the names (of the original
    tensors) whose copies it lists as outputs, in order, after the original outputs."""
    serializer = load_graph(path)
    block = serializer.regions[0].basicBlocks[0]
    tensors = block.tensors
    fed_set = set(fed)
    for name in fed:
        tensor = tensors[name]
        block.addTensor(name + FED, list(tensor.shape), tensor.dtype)
        block.addInput(name + FED)
    produced = {t for op in run.block.ops if op.op not in NO_VALUE_OPS for t in op.outputs}

    def source(name: str) -> str:
        if name in fed_set:
            return name + FED
        return name + ISOLATED if name in produced else name

    listed: list[str] = []
    for ours, op in zip(run.block.ops, list(block.operators), strict=True):
        if ours.op in NO_VALUE_OPS:
            continue
        for name in ours.outputs:
            tensor = tensors[name]
            block.addTensor(name + ISOLATED, list(tensor.shape), tensor.dtype)
        block.addOperator(
            op.op,
            [source(t) for t in ours.inputs],
            [t + ISOLATED for t in ours.outputs],
            _attribute(op),
        )
        for name in ours.outputs:
            block.addOutput(name + ISOLATED)
            listed.append(name)
    return bytes(serializer.serialize()), listed


def _attribute(op: Any) -> Any:
    """A builder attribute with the loaded operator's own (addOperator takes only those): the
    builder's `<Op>Attribute` method, called with the loaded attribute's properties, which
    carry the builder's parameter names."""
    import tosa_serializer as ts  # type: ignore[import-untyped]

    attribute = ts.TosaSerializerAttribute()
    wanted = op.op.name.replace("_", "").lower() + "attribute"
    builder = next((getattr(attribute, n) for n in dir(attribute) if n.lower() == wanted), None)
    if builder is None:
        raise ExplainError(
            f"the TOSA serializer has no attribute builder for {op.op.name}: the graph cannot "
            "be rewritten to run each operator on the reference's inputs",
            fix="report it with the artifact",
        )
    loaded = op.attributes
    kwargs = {n: getattr(loaded, n) for n in dir(loaded) if not n.startswith("_")}
    builder(**kwargs)
    return attribute


def run_isolated(
    path: Path, run: DelegateRun, reference: Mapping[str, np.ndarray[Any, Any]]
) -> dict[str, Array]:
    """Each tensor of the delegate, computed by its operator from the reference's values
    (`reference`: tensor name -> its counterpart's integers, in the tensor's layout)."""
    fed = [t for t in reference if t in run.block.dtypes and t not in run.block.inputs]
    graph, listed = isolated_graph(path, run, fed)
    inputs = [np.asarray(run.values[t]) for t in run.block.inputs]
    inputs += [reference[t].astype(DTYPES[run.block.dtypes[t]]) for t in fed]
    results, status, messages = run_reference_model(graph, inputs)
    if status != "TOSA_VALID":
        raise ExplainError(
            f"delegate {run.name}: the TOSA reference model returned {status} for the graph "
            f"with each operator fed the reference's inputs: {messages.strip()[:400]}",
            fix="report it with the artifact: the explainer's graph rewrite is at fault",
        )
    isolated = results[len(run.block.outputs) :]
    return dict(zip(listed, isolated, strict=True))
