"""What one of ExecuTorch's operator tests asked of its pipeline, as data.

A test builds a pipeline (`TosaPipelineINT(module, inputs, aten_op, exir_op, ...)`), edits it
(`pipeline.quantizer.set_global(config)`, `add_stage_after(..., tester.check_count, {...})`,
`pop_stage(...)`, `change_args(...)`, `count_tosa_ops({...})`) and calls `run()`. hil's
stand-ins (hil.executorch_ops.pipelines) record all of it here, and nothing else: which
target, recipe and variant answer it is decided from this record alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The stage ids of ExecuTorch's pipelines whose assertions hil evaluates (or reports).
# (Cortex-M: "run_passes", after the cortex_m passes; its "to_edge" count is before them.)
AFTER_LOWERING = ("to_edge_transform_and_lower", "partition", "exir", "run_passes")


@dataclass(frozen=True)
class StageAssertion:
    """One of their stage checks: `check` is the tester method (check, check_not,
    check_count, count_tosa_ops, check_dtype_count, ...), `after` the stage it follows
    (their stage id, or its suffix: "exir" after lowering, "aten" after export, ...),
    `expected` its argument (a list of op names, or op name -> count)."""

    check: str
    after: str
    expected: Any


@dataclass
class PipelineCall:
    """One pipeline as the test built and edited it, up to run()."""

    pipeline: str  # their class name: "TosaPipelineINT", "EthosU85PipelineINT", ...
    module: Any  # the torch.nn.Module
    inputs: tuple[Any, ...]
    options: dict[str, Any]  # their constructor's keyword arguments, as given
    assertions: list[StageAssertion] = field(default_factory=list)
    global_config: Any = None  # a QuantizationConfig set with quantizer.set_global(...)
    io_config: Any = None  # one set with quantizer.set_io(...)
    popped: set[str] = field(default_factory=set)  # stage ids removed with pop_stage
    changed: dict[str, dict[str, Any]] = field(default_factory=dict)  # change_args kwargs
    accepted: list[str] = field(default_factory=list)  # calls hil takes and does not act on
    ran: bool = False

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def compare_kwargs(self) -> dict[str, Any]:
        """Their comparison's tolerances: the constructor's, as change_args left them."""
        found: dict[str, Any] = {
            k: self.options[k] for k in ("atol", "rtol", "qtol") if k in self.options
        }
        found.update(self.changed.get("run_method_and_compare_outputs", {}))
        return found
