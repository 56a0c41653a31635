"""Which node of the quantized PyTorch model each TOSA operator of a delegate came from.

ExecuTorch's Arm backend names a TOSA tensor after the fx node of its own pass pipeline that
produced it (`tosa_rescale_default_3`), which says little about the model. In its debug mode
(`ArmCompileSpec.DebugMode.TOSA`) it also writes, into each operator's location field, that
node's provenance: the chain of `from_node` records back through every pass, decomposition and
`ExportedProgram.module()` copy to the node of the program that was lowered, which for the
ethos-u recipe is the quantized PyTorch model (hil.reference.quantized). The .pte is compiled
without debug mode, so the explainer lowers the same quantized program again, in debug mode,
to TOSA only (the TOSA partitioner with the Ethos-U compile spec's TOSA settings: no Vela), and
uses the result only when it has the artifact's operators in the artifact's order (same
operator, same input and output tensor names at every index). Constants, CONST_SHAPE and
graph inputs carry no location: they have no origin.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hil.artifacts.tosa_graph import TosaGraph
from hil.capture import captured_output
from hil.errors import ExplainError
from hil.explain.tosa_run import read_graph
from hil.export.stages import brief

ORIGIN_PASS = "ExportedProgram.module()"  # the copy of the lowered program's own graph

# The artifact's cache key covers the tool versions, so a debug lowering that fails or differs
# is ExecuTorch's debug mode on this model, and exporting again would change nothing.
DEBUG_MODE_ONLY = (
    "the verdict stands; only each TOSA operator's origin in the model is unknown, because "
    "ExecuTorch's Arm backend {what} in its TOSA debug mode for this model (its behaviour, "
    "not the artifact's: exporting again gives the same)"
)


def debug_blocks(program: Any, options: dict[str, Any], workdir: Path) -> list[TosaGraph]:
    """Each delegate's TOSA main block, lowered again in debug mode, in execution order."""
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec
    from executorch.backends.arm.tosa.backend import TOSABackend
    from executorch.backends.arm.tosa.partitioner import TOSAPartitioner
    from executorch.exir import to_edge_transform_and_lower

    from hil.recipes import make_recipe
    from hil.recipes.arm_partition import lowered_modules
    from hil.recipes.ethos_u import EthosURecipe
    from hil.speedups import switch as speedups

    speedups.install()  # as where the artifact was made (none if pristine): same operators, faster
    recipe = make_recipe("ethos-u", options)
    assert isinstance(recipe, EthosURecipe)
    dump = workdir / "tosa-debug"
    spec = recipe.compile_spec().dump_intermediate_artifacts_to(str(dump))
    tosa_spec = TOSABackend.filter_tosa_compile_specs(spec).dump_debug_info(
        ArmCompileSpec.DebugMode.TOSA
    )
    try:
        with captured_output():
            edge = to_edge_transform_and_lower(program, partitioner=[TOSAPartitioner(tosa_spec)])
    except Exception as e:
        raise ExplainError(
            f"lowering the quantized model to TOSA again (debug mode) failed: {brief(e)}",
            fix=DEBUG_MODE_ONLY.format(what="cannot lower it"),
        ) from e
    blocks = []
    for i, module in enumerate(lowered_modules(edge.exported_program())):
        path = workdir / f"debug_{i}.tosa"
        path.write_bytes(bytes(module.processed_bytes))
        blocks.append(read_graph(path))
    return blocks


def check_same_graph(name: str, artifact_block: TosaGraph, debug: TosaGraph) -> None:
    """The debug lowering must have the artifact's operators, index by index. The block's
    inputs may be named differently (a delegate fed by a CPU operator names its input after
    that operator's output, which the TOSA-only lowering does not have): they are matched by
    position."""
    if len(artifact_block.ops) != len(debug.ops) or len(artifact_block.inputs) != len(debug.inputs):
        raise ExplainError(
            f"delegate {name}: lowering again gave {len(debug.ops)} TOSA operators and "
            f"{len(debug.inputs)} inputs, the artifact has {len(artifact_block.ops)} and "
            f"{len(artifact_block.inputs)}; operator origins are unknown",
            fix=DEBUG_MODE_ONLY.format(what="lowers it differently"),
        )
    as_ours = dict(zip(debug.inputs, artifact_block.inputs, strict=True))
    for ours, theirs in zip(artifact_block.ops, debug.ops, strict=True):
        renamed = tuple(as_ours.get(t, t) for t in theirs.inputs)
        if (ours.op, ours.inputs, ours.outputs) != (theirs.op, renamed, theirs.outputs):
            raise ExplainError(
                f"delegate {name}: operator {ours.index} is {ours.op} {ours.inputs} -> "
                f"{ours.outputs} in the artifact but {theirs.op} {renamed} -> {theirs.outputs} "
                "when lowered again",
                fix=DEBUG_MODE_ONLY.format(what="lowers it differently"),
            )


def origins(block: TosaGraph, known: set[str], order: dict[str, int]) -> list[str | None]:
    """Per operator: the quantized program's node it came from, or None (no location)."""
    return [_origin(op.location, known, order) for op in block.ops]


def _origin(location: str, known: set[str], order: dict[str, int]) -> str | None:
    """The latest (in program order) of the provenance chain's roots that is a node of the
    quantized program: a fused pair (conv + relu) is answered by its last node."""
    if not location:
        return None
    try:
        trace = json.loads(location)["torch_info"]["node_trace"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(trace, list):
        return None
    roots = _roots(trace)
    candidates = [r for r in roots if r in known]
    return max(candidates, key=lambda r: order[r]) if candidates else None


def _roots(trace: Sequence[dict[str, Any]]) -> list[str]:
    """Names of the records no other record derives from: the chain's original nodes. The
    flattened trace links a record to its source's graph by `parent_graph_id`."""
    parents = {entry.get("parent_graph_id") for entry in trace}
    return [
        str(entry["name"])
        for entry in trace
        if entry.get("graph_id") not in parents and entry.get("pass_name") == ORIGIN_PASS
    ]
