"""What one of ExecuTorch's operator tests asked of its pipeline, as data.

A test builds a pipeline (`TosaPipelineINT(module, inputs, aten_op, exir_op, ...)`), edits it
(`pipeline.quantizer.set_global(config)`, `add_stage_after(..., tester.check_count, {...})`,
`pop_stage(...)`, `change_args(...)`, `count_tosa_ops({...})`) and calls `run()`. hil's
stand-ins (hil.executorch_ops.pipelines) record all of it here, and nothing else: which
target, recipe and variant answer it is decided from this record alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hil.errors import HilError

# Their stages that make the program: an edit to one changes what is judged.
BUILD_STAGES = (
    "quantize",
    "export",
    "to_edge_transform_and_lower",
    "to_edge",
    "partition",
    "run_passes",
    "to_executorch",
    "serialize",
)
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


class TheirSurface(HilError):
    """The test reads a part of their harness (a stage's artifact, the stage list) that hil's
    stand-in does not keep; the plugin runs such a test as their own."""


def described(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """An edit's arguments as a reader names them: `additional_checks=[DontPartition]`."""

    def brief(value: Any) -> str:
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(brief(v) for v in value) + "]"
        if value is None or isinstance(value, (bool, int, float, str)):
            return repr(value)
        return getattr(value, "__name__", None) or type(value).__name__

    return ", ".join([brief(a) for a in args] + [f"{k}={brief(v)}" for k, v in kwargs.items()])


@dataclass(frozen=True)
class TheirClass:
    """Their pipeline class and the arguments the test built it with, to build it again."""

    cls: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def make(self) -> Any:
        return self.cls(*self.args, **self.kwargs)


@dataclass(frozen=True)
class Edit:
    """One call the test made on its pipeline, to make again on theirs: `path` the attribute
    reached ("change_args", "quantizer.set_module_type", "_stages.0.args.0.calibration_samples"),
    `setting` True for an assignment."""

    path: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    setting: bool = False

    def apply(self, pipeline: Any) -> None:
        *owners, name = self.path.split(".")
        target = pipeline
        for owner in owners:  # an attribute, or an index into a list (`_stages.0`)
            target = target[int(owner)] if owner.isdigit() else getattr(target, owner)
        args = tuple(_theirs(a, pipeline) for a in self.args)
        kwargs = {k: _theirs(v, pipeline) for k, v in self.kwargs.items()}
        if self.setting:
            setattr(target, name, args[0])
        else:
            getattr(target, name)(*args, **kwargs)


def _theirs(value: Any, pipeline: Any) -> Any:
    """A marker of hil's tester (`pipeline.tester.check_count`) as their tester's method."""
    tester_method: Callable[[Any], Any] | None = getattr(value, "their_method", None)
    return tester_method(pipeline.tester) if tester_method is not None else value


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
    # edits that change the program, which hil's recipes do not make (the runner builds it
    # with their pipeline where it can, and refuses the case naming them where it cannot)
    unapplied: list[str] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)  # every edit, in order, to make again
    their: TheirClass | None = None
    their_pipeline: Any = None  # their pipeline, once it built the program
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
