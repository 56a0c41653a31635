"""Stand-ins for ExecuTorch's Arm test pipelines: the same constructors and edits, run by hil.

An operator test imports `TosaPipelineINT` (and the others) from
`executorch.backends.arm.test.tester.test_pipeline`; while hil runs the test, the test module's
name is bound to the stand-in of the same name. It takes the same arguments (module, inputs,
the aten and edge ops it expects, and every keyword), answers `pipeline.quantizer` and
`pipeline.tester`, records stage edits, and its `run()` hands the record (hil.executorch_ops
.calls) to hil. A method hil has no meaning for (`dump_artifact`, `visualize`, ...) is accepted
and listed in the record, never dropped silently. An edit that changes the program and that
hil's recipes do not make (a partitioner check, a quantizer's module config, another lowering
route) is listed as unapplied: the runner then builds the program with their own pipeline
class, every edit made again on it in order (hil.executorch_ops.their_program), or refuses
the case naming the edit. Every edit is kept for that (`call.edits`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from hil.executorch_ops.calls import (
    BUILD_STAGES,
    Edit,
    PipelineCall,
    StageAssertion,
    TheirClass,
    described,
)
from hil.executorch_ops.handles import (
    STAGES,
    Quantizer,
    QuantizeStage,
    Stage,
    Tester,
    TesterMethod,
)
from hil.executorch_ops.mapping import vgf_spec

DELEGATE_CALL = "torch.ops.higher_order.executorch_call_delegate"
Runner = Callable[[PipelineCall], None]


def _names(ops: Any) -> list[str]:
    if ops is None:
        return []
    if isinstance(ops, str):
        return [ops]
    return [str(op) for op in ops]


class StandIn:
    """The part every pipeline shares: stage edits and run()."""

    name: ClassVar[str] = ""
    runner: ClassVar[Runner | None] = None  # bound per test (bind())
    their_class: ClassVar[Any] = None  # their pipeline class of the same name (bind())
    op_names: ClassVar[tuple[str, str]] = ("aten_op", "exir_op")

    def __class_getitem__(cls, _item: Any) -> type[StandIn]:
        return cls  # TosaPipelineINT[input_t](...)

    def __init__(self, module: Any, test_data: Any, *args: Any, **kwargs: Any) -> None:
        inputs = test_data if isinstance(test_data, tuple) else (test_data,)
        named = dict(zip(self.positional(), args, strict=False))
        self.call = PipelineCall(self.name, module, inputs, {**named, **kwargs})
        self.call.assertions.extend(self.initial_assertions())
        if self.their_class is not None:
            self.call.their = TheirClass(self.their_class, (module, test_data, *args), kwargs)
        if kwargs.get("use_to_edge_transform_and_lower") is False:
            self.call.unapplied.append(
                "use_to_edge_transform_and_lower=False (to_edge, then partition)"
            )
        self.tester = Tester(self.call)
        self._quantizer = Quantizer(self.call)

    @classmethod
    def positional(cls) -> tuple[str, ...]:
        return cls.op_names

    def initial_assertions(self) -> Iterable[StageAssertion]:
        """What their pipeline checks without being asked: the aten ops after export, the edge
        ops gone after lowering, exactly one delegate."""
        aten, exir = (self.call.option(n) for n in self.op_names)
        yield StageAssertion("check", "aten", _names(aten))
        yield StageAssertion("check_not", "exir", _names(exir))
        yield StageAssertion("check_count", "exir", {DELEGATE_CALL: 1})

    @property
    def quantizer(self) -> Quantizer:
        return self._quantizer

    def find_pos(self, stage_id: str) -> int:
        if stage_id not in STAGES:
            raise ValueError(f"{self.name} has no stage {stage_id!r} hil knows of")
        return STAGES.index(stage_id)

    @property
    def _stages(self) -> Any:
        """The quantize stage's calibration samples; the rest of their stage list is theirs
        once their pipeline built the program, else TheirSurface (the case runs as theirs)."""
        if self.call.their_pipeline is not None:
            return self.call.their_pipeline._stages
        return [
            Stage(name, (QuantizeStage(self.call),) if name == "quantize" else ())
            for name in STAGES
        ]

    # -- their stage edits ---------------------------------------------------------------

    def add_stage(self, func: Any, *args: Any, **kwargs: Any) -> StandIn:
        self.call.edits.append(Edit("add_stage", (func, *args), dict(kwargs)))
        kwargs.pop("pos", None)
        kwargs.pop("suffix", None)
        self._record(func, "end", args, kwargs)
        return self

    def add_stage_after(self, stage_id: str, func: Any, *args: Any, **kwargs: Any) -> StandIn:
        self.call.edits.append(Edit("add_stage_after", (stage_id, func, *args), dict(kwargs)))
        kwargs.pop("suffix", None)
        self._record(func, stage_id, args, kwargs)
        return self

    def _record(self, func: Any, after: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if isinstance(func, TesterMethod):
            expected = args[0] if args else kwargs
            self.call.assertions.append(StageAssertion(func.name, after, expected))
        else:
            self.call.accepted.append(f"add_stage({getattr(func, '__name__', func)!s})")

    def pop_stage(self, identifier: int | str) -> StandIn:
        self.call.edits.append(Edit("pop_stage", (identifier,)))
        stage = str(identifier)
        self.call.popped.add(stage)
        check, _, after = stage.partition(".")
        self.call.assertions[:] = [
            a for a in self.call.assertions if (a.check, a.after) != (check, after)
        ]
        return self

    def change_args(self, stage_id: str, *args: Any, **kwargs: Any) -> StandIn:
        self.call.edits.append(Edit("change_args", (stage_id, *args), dict(kwargs)))
        if stage_id in BUILD_STAGES:
            self.call.unapplied.append(f"{stage_id}({described(args, kwargs)})")
        check, _, after = stage_id.partition(".")
        if args and any((a.check, a.after) == (check, after) for a in self.call.assertions):
            self.call.assertions[:] = [
                a if (a.check, a.after) != (check, after) else StageAssertion(check, after, args[0])
                for a in self.call.assertions
            ]
        self.call.changed[stage_id] = dict(kwargs)
        return self

    def count_tosa_ops(self, counts: dict[str, int]) -> StandIn:
        self.call.edits.append(Edit("count_tosa_ops", (counts,)))
        self.call.assertions.append(
            StageAssertion("count_tosa_ops", "to_edge_transform_and_lower", dict(counts))
        )
        return self

    def get_artifact(self, *args: Any, **kwargs: Any) -> Any:
        """Their harness's stage artifacts (graphs between passes), which hil does not keep: the
        rest of the test is not checked, and the skip says so (a check already made stays
        recorded)."""
        import pytest

        pytest.skip(
            f"{self.name}.get_artifact(): the test inspects ExecuTorch's own stage "
            "artifacts, which hil does not keep; hil judged the program where the test "
            "ran it (see the record)"
        )

    def run(self) -> None:
        self.call.ran = True
        runner = type(self).runner
        if runner is None:
            raise RuntimeError(f"{self.name}.run() outside a test hil runs")
        runner(self.call)

    def __getattr__(self, name: str) -> Callable[..., StandIn]:
        if name.startswith("__"):
            raise AttributeError(name)

        def accepted(*args: Any, **kwargs: Any) -> StandIn:
            self.call.edits.append(Edit(name, args, dict(kwargs)))
            self.call.accepted.append(name)
            return self

        return accepted


class TosaPipelineINT(StandIn):
    name = "TosaPipelineINT"


class TosaPipelineFP(StandIn):
    name = "TosaPipelineFP"


class EthosU55PipelineINT(StandIn):
    name = "EthosU55PipelineINT"
    op_names = ("aten_ops", "exir_ops")


class EthosU65PipelineINT(EthosU55PipelineINT):
    name = "EthosU65PipelineINT"


class EthosU85PipelineINT(EthosU55PipelineINT):
    name = "EthosU85PipelineINT"


class VgfPipeline(StandIn):
    """Their VGF pipeline: `n_expected_delegates` (default 1) delegates, and for a quantized
    program with float inputs, no quantize/dequantize left outside the delegates when the
    specification has both INT and FP (theirs asserts it so, quant_nodes stages)."""

    name = "VgfPipeline"

    def initial_assertions(self) -> Iterable[StageAssertion]:
        aten, exir = (self.call.option(n) for n in self.op_names)
        yield StageAssertion("check", "aten", _names(aten))
        yield StageAssertion("check_not", "exir", _names(exir))
        yield StageAssertion(
            "check_count", "exir", {DELEGATE_CALL: int(self.call.option("n_expected_delegates", 1))}
        )
        spec = vgf_spec(self.call)
        quantized = bool(self.call.option("quantize", True))
        if quantized and "INT" in spec and "FP" in spec and _float_inputs(self.call.inputs):
            yield StageAssertion("check_not", "to_edge_transform_and_lower", list(QDQ_EDGE))


QDQ_EDGE = tuple(
    f"executorch_exir_dialects_edge__ops_quantized_decomposed_{op}_default"
    for op in (
        "quantize_per_tensor",
        "dequantize_per_tensor",
        "quantize_per_channel",
        "dequantize_per_channel",
    )
)


def _float_inputs(inputs: Any) -> bool:
    import torch

    if isinstance(inputs, torch.Tensor):
        return inputs.is_floating_point()
    if isinstance(inputs, (tuple, list)):
        return any(_float_inputs(i) for i in inputs)
    return False


class OpNotSupportedPipeline(StandIn):
    """Operators that must stay on the CPU: `non_delegated_ops` (op -> count) and
    `n_expected_delegates` (default 0) are the whole assertion."""

    name = "OpNotSupportedPipeline"
    op_names = ("non_delegated_ops", "n_expected_delegates")

    def initial_assertions(self) -> Iterable[StageAssertion]:
        counts = dict(self.call.option("non_delegated_ops") or {})
        counts[DELEGATE_CALL] = int(self.call.option("n_expected_delegates", 0))
        yield StageAssertion("check_count", "exir", counts)


class PassPipeline(StandIn):
    name = "PassPipeline"
    op_names = ("quantize", "ops_before_pass")

    def initial_assertions(self) -> Iterable[StageAssertion]:
        return ()


class TransformAnnotationPassPipeline(PassPipeline):
    name = "TransformAnnotationPassPipeline"


class QuantizationPipeline(PassPipeline):
    name = "QuantizationPipeline"
    op_names = ("quantizer", "qspecs")


class CortexMTester(StandIn):
    """ExecuTorch's Cortex-M harness: `CortexMTester(module, inputs, target_config=None)` then
    `test_dialect(ops_before, ops_after, ...)` (the cortex_m passes' graph, checked and run in
    Python) or `test_implementation()` (the program on an FVP). Both are one hil check on the
    cortex-m recipe; test_dialect's op counts after the passes are its assertion."""

    name = "CortexMTester"
    op_names = ("target_config", "timeout")

    def __init__(self, module: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> None:
        inputs = example_inputs() if callable(example_inputs) else example_inputs
        super().__init__(module, tuple(inputs), *args, **kwargs)

    def initial_assertions(self) -> Iterable[StageAssertion]:
        return ()

    def _tolerances(self, qtol: float, atol: float, calibration_samples: Any) -> None:
        self.call.changed["run_method_and_compare_outputs"] = {"qtol": qtol, "atol": atol}
        if calibration_samples is not None:
            self.call.options["calibration_samples"] = calibration_samples

    def test_dialect(
        self,
        ops_before_transforms: Any,
        ops_after_transforms: Any,
        qtol: float = 0,
        atol: float = 1e-3,
        calibration_samples: Any = None,
        ops_absent_after_transforms: Any = None,
    ) -> None:
        self.call.assertions.append(
            StageAssertion("check_count", "to_edge", dict(ops_before_transforms))
        )
        self.call.assertions.append(
            StageAssertion("check_count", "run_passes", dict(ops_after_transforms))
        )
        if ops_absent_after_transforms:
            self.call.assertions.append(
                StageAssertion("check_not", "run_passes", list(ops_absent_after_transforms))
            )
        self._tolerances(qtol, atol, calibration_samples)
        self.run()

    def test_implementation(
        self, qtol: float = 0, atol: float = 1e-3, calibration_samples: Any = None
    ) -> None:
        self._tolerances(qtol, atol, calibration_samples)
        self.run()


STAND_INS: dict[str, type[StandIn]] = {
    cls.name: cls
    for cls in (
        TosaPipelineINT,
        TosaPipelineFP,
        EthosU55PipelineINT,
        EthosU65PipelineINT,
        EthosU85PipelineINT,
        VgfPipeline,
        OpNotSupportedPipeline,
        PassPipeline,
        TransformAnnotationPassPipeline,
        QuantizationPipeline,
        CortexMTester,
    )
}


def bind(name: str, runner: Runner, their_class: Any = None) -> type[StandIn]:
    """The stand-in for their class `name`, answering run() with `runner`; `their_class` is
    their class of that name, to build the program with where hil's recipe cannot."""
    base = STAND_INS[name]
    return type(name, (base,), {"runner": staticmethod(runner), "their_class": their_class})
