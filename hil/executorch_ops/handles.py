"""What a test reaches through one of ExecuTorch's pipelines besides its stage edits: the
tester (its check methods as markers, its compile spec), the quantizer (the configs the test
sets; anything else accepted and listed) and the quantize stage (calibration samples). Each
writes what the test asked into the pipeline's record (hil.executorch_ops.calls).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hil.executorch_ops.calls import PipelineCall


class TesterMethod:
    """`pipeline.tester.check_count` and the like: a marker naming the check, which
    add_stage/add_stage_after record with their arguments."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> None:  # called directly: not a stage
        return None


class Tester:
    """`pipeline.tester`: its check methods as markers, and the compile spec a TOSA pipeline
    lowers for (test_while builds its own quantizer from it)."""

    def __init__(self, call: PipelineCall) -> None:
        self._call = call

    @property
    def compile_spec(self) -> Any:
        from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

        profile = "FP" if self._call.pipeline == "TosaPipelineFP" else "INT"
        version = str(self._call.option("tosa_version") or "1.0")
        extensions = "".join(f"+{e}" for e in self._call.option("tosa_extensions") or ())
        return TosaCompileSpec(f"TOSA-{version}+{profile}{extensions}")

    def __getattr__(self, name: str) -> TesterMethod:
        return TesterMethod(name)


class Quantizer:
    """`pipeline.quantizer`: set_global / set_io keep the config the test gives; anything
    else is recorded as accepted and not honoured."""

    def __init__(self, call: PipelineCall) -> None:
        self._call = call

    def set_global(self, config: Any) -> Quantizer:
        self._call.global_config = config
        return self

    def set_io(self, config: Any) -> Quantizer:
        self._call.io_config = config
        return self

    def __getattr__(self, name: str) -> Callable[..., Quantizer]:
        def accepted(*args: Any, **kwargs: Any) -> Quantizer:
            self._call.accepted.append(f"quantizer.{name}")
            return self

        return accepted

    def __setattr__(self, name: str, value: Any) -> None:
        """`pipeline.quantizer.quantizer = their own quantizer`: the recipe's quantizer stays
        (configured from the test's global config), and the record says so."""
        if name != "_call":
            self._call.accepted.append(f"quantizer.{name} = {type(value).__name__}")
        object.__setattr__(self, name, value)


# Their pipeline's stages in order, as a test finds them (`pipeline.find_pos("quantize")`).
STAGES = (
    "quantize",
    "export",
    "to_edge_transform_and_lower",
    "to_executorch",
    "serialize",
    "run_method_and_compare_outputs",
)


class QuantizeStage:
    """Their Quantize stage as a test reaches into it (`pipeline._stages[pos].args[0]`): the
    calibration samples a test sets there are the ones hil calibrates on."""

    def __init__(self, call: PipelineCall) -> None:
        self._call = call

    @property
    def calibration_samples(self) -> Any:
        return self._call.options.get("calibration_samples")

    @calibration_samples.setter
    def calibration_samples(self, samples: Any) -> None:
        self._call.options["calibration_samples"] = samples


@dataclass(frozen=True)
class Stage:
    name: str
    args: tuple[Any, ...]
