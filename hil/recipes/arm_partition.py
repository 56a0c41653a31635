"""The partition report of an Arm lowering, read off the lowered edge program, and what the Arm
recipes share in lowering (the edge config, the dump path's removal, serializing).

Delegated operators are those inside each delegate's original subgraph; CPU operators are the
call_function nodes left in the top-level graph. Quantize/dequantize nodes are counted apart as
"boundary": with an integer-only TOSA profile they stay on the CPU by design around every delegate.

Reasons: the Arm partitioner only logs why it rejected a node. hil asks the same operator-support
checks again, through the partitioner's own factory, on the nodes left on the CPU and keeps the
first reason each check reports. A node the checks accept was left out for a partition-level
reason (a partition of no-ops, or a cycle after Q/DQ de-tagging); it says so.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from hil.artifacts.partition import Fallback, PartitionReport
from hil.capture import captured_output
from hil.errors import ExportError, ResourceExhausted, resource_exhaustion
from hil.ethos_u.macs import graph_macs, op_name
from hil.export.lowering import exporter_step
from hil.export.stages import brief, failing_stage
from hil.recipes.host_program import delegate_calls, is_delegate_call, lowered_module_of

QDQ = (
    "quantized_decomposed.quantize_per_tensor",
    "quantized_decomposed.dequantize_per_tensor",
    "quantized_decomposed.quantize_per_channel",
    "quantized_decomposed.dequantize_per_channel",
)
NOT_OPERATORS = ("getitem",)
PARTITION_LEVEL = "supported by the operator checks, but left out of every NPU partition"


def _is_boundary(name: str) -> bool:
    return name.startswith(QDQ)


def compute_nodes(nodes: Any) -> Iterator[torch.fx.Node]:
    for node in nodes:
        if (
            node.op == "call_function"
            and not is_delegate_call(node)
            and op_name(node.target) not in NOT_OPERATORS
        ):
            yield node


def lowered_modules(edge_program: Any) -> list[Any]:
    """The LoweredBackendModule of each delegate call, in host_program.delegate_calls' order
    (control-flow submodules' delegates after the top-level graph's)."""
    return [
        lowered_module_of(module, node)
        for module, node in delegate_calls(edge_program.graph_module)
    ]


def rejection_reasons(
    edge_program: Any, partitioner: Any, nodes: list[torch.fx.Node]
) -> dict[str, str]:
    """Why the partitioner's checks reject each of `nodes` (by node name), where they say."""
    try:
        from executorch.backends.arm.tosa.specification import TosaLoweringContext
        from executorch.exir.backend.utils import WhyNoPartitionReporter
        from torch._export.utils import _get_shape_env_from_gm
    except ImportError:
        return {}

    reasons: dict[str, str] = {}

    class Collect(WhyNoPartitionReporter):  # type: ignore[misc]
        def report_reject(self, node: torch.fx.Node, reason: str) -> None:
            reasons.setdefault(node.name, reason)

    reporter = Collect()
    try:
        with TosaLoweringContext(
            partitioner.tosa_spec, _get_shape_env_from_gm(edge_program.graph_module)
        ):
            support = partitioner._create_operator_support(edge_program, reporter)
            submodules = dict(edge_program.graph_module.named_modules())
            accepted = {n.name for n in nodes if support.is_node_supported(submodules, n)}
    except Exception:  # the partitioner's internals: a report without reasons is still a report
        return reasons
    for name in accepted:
        reasons.setdefault(name, PARTITION_LEVEL)
    return reasons


KERNEL_NAMESPACES = ("aten::", "quantized_decomposed::", "dim_order_ops::")


def missing_cpu_kernels(pte: bytes) -> tuple[str, ...]:
    """Operators the .pte runs on the CPU that ExecuTorch's portable and quantized kernel
    libraries (as registered in this Python runtime) do not provide."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    try:
        import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed)
        from executorch.extension.pybindings import portable_lib
    except ImportError:
        return ()
    registered = set(portable_lib._get_operator_names())
    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    used = {f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators}
    return tuple(
        sorted(op for op in used if op.startswith(KERNEL_NAMESPACES) and op not in registered)
    )


def _total(*counts: int | None) -> int | None:
    """A sum of MAC counts, unknown when any part is (hil.ethos_u.macs)."""
    return None if None in counts else sum(c for c in counts if c is not None)


def partition_report(
    edge_program: Any, partitioner: Any, pte_bytes: int, backend: str = "Ethos-U"
) -> PartitionReport:
    accelerated: Counter[str] = Counter()
    accelerated_macs: int | None = 0
    for lowered in lowered_modules(edge_program):
        inner = list(compute_nodes(lowered.original_module.graph.nodes))
        accelerated.update(op_name(n.target) for n in inner if not _is_boundary(op_name(n.target)))
        accelerated_macs = _total(accelerated_macs, graph_macs(inner))
    cpu = list(compute_nodes(edge_program.graph.nodes))
    boundary = Counter(op_name(n.target) for n in cpu if _is_boundary(op_name(n.target)))
    fallback_nodes = [n for n in cpu if not _is_boundary(op_name(n.target))]
    reasons = rejection_reasons(edge_program, partitioner, fallback_nodes) if fallback_nodes else {}
    grouped: dict[str, list[torch.fx.Node]] = {}
    for node in fallback_nodes:
        grouped.setdefault(op_name(node.target), []).append(node)
    fallbacks = tuple(
        Fallback(op, len(group), next((reasons[n.name] for n in group if n.name in reasons), None))
        for op, group in grouped.items()
    )
    return PartitionReport(
        backend=backend,
        delegates=len(lowered_modules(edge_program)),
        accelerated=dict(sorted(accelerated.items())),
        fallbacks=fallbacks,
        boundary=dict(sorted(boundary.items())),
        pte_bytes=pte_bytes,
        macs=_total(accelerated_macs, graph_macs(fallback_nodes)),
        accelerated_macs=accelerated_macs,
    )


def serialize_lowered(
    case: str, edge: Any, report: PartitionReport
) -> tuple[bytes, PartitionReport]:
    """The lowered program's .pte (delegate data inline, as ExecuTorch's Arm flow writes it)
    and the partition report completed from it: its size and the CPU operators that no
    ExecuTorch kernel library has."""
    from executorch.exir import ExecutorchBackendConfig

    config = ExecutorchBackendConfig(extract_delegate_segments=False)
    pte = exporter_step(
        "serializing the program", case, lambda: bytes(edge.to_executorch(config).buffer)
    )
    return pte, dataclasses.replace(
        report, pte_bytes=len(pte), missing_kernels=missing_cpu_kernels(pte)
    )


DUMP_KEY = "debug_artifact_path"  # the compile spec recording where intermediates were dumped


def arm_edge_config() -> Any:
    """The edge config ExecuTorch's Arm flow lowers with (its test harness's default): no IR
    validity check. With the check, the Arm passes reject a reduction to a scalar (torch.mean
    over every dimension: a CONST_SHAPE of (), InternalError) that Vela then compiles fine
    (measured on ExecuTorch's test_mean_dim cases, u55-ref and u85-ref, 2026-12)."""
    from executorch.exir import EdgeCompileConfig

    return EdgeCompileConfig(_check_ir_validity=False)


def strip_dump_path(case: str, lowered: Sequence[Any], spec: Any) -> None:
    """Remove the dump folder from the delegates' compile specs, leaving a plain export's."""
    plain = [(s.key, bytes(s.value)) for s in spec._to_list()]
    for module in lowered:
        specs = module.compile_specs
        specs[:] = [s for s in specs if s.key != DUMP_KEY]
        if [(s.key, bytes(s.value)) for s in specs] != plain:
            raise ExportError(
                f"case {case!r}: a delegate's compile specs differ from a plain export's "
                "beyond the dump folder; the .pte would not be the standard one",
                fix="the ExecuTorch Arm backend changed its compile specs; hil needs updating",
            )


def lower_logged(
    case: str,
    program: Any,
    partitioner: Any,
    workdir: Path,
    target: str,
    log: str,
    kept: str,
    passes: Sequence[Any] = (),
) -> Any:
    """ExecuTorch's lowering with an Arm partitioner (after the recipe's transform `passes`),
    what it printed (Vela, the converter) kept as `log` beside the artifact; a refusal is an
    ExportError naming the stage that refused (ResourceExhausted when this machine ran out).
    `target` ("ethos-u55-128", "VGF (...)") and `kept` (what the artifact keeps to look at)
    complete the messages."""
    from executorch.exir import to_edge_transform_and_lower

    printed: list[str] = []
    try:
        with captured_output() as printed:
            edge = to_edge_transform_and_lower(
                program,
                transform_passes=list(passes) or None,
                partitioner=[partitioner],
                compile_config=arm_edge_config(),
            )
    except Exception as e:
        (workdir / log).write_text("".join(printed))
        exhausted = resource_exhaustion(e)
        if exhausted:
            raise ResourceExhausted(
                f"case {case!r}: lowering for {target} ran out of {exhausted}: {brief(e)}",
                fix="free memory or disk and run again; not remembered as the model's failure",
            ) from e
        raise ExportError(
            f"case {case!r}: {failing_stage(e)} rejected the model for {target}: {brief(e)}",
            fix=f"restrict the case to other targets, or mark it xfail for this one with the "
            f"reason; {kept}",
        ) from e
    (workdir / log).write_text("".join(printed))
    return edge
