"""What a test reaches through one of ExecuTorch's pipelines besides its stage edits: the
tester (its check methods as markers, its compile spec), the quantizer (the configs the test
sets; any other quantizer edit listed as unapplied) and the quantize stage (calibration
samples). Each writes what the test asked into the pipeline's record (hil.executorch_ops.calls).

What the stand-in does not keep (a stage's artifact: `tester.stages[StageType.X]`,
`tester.get_artifact()`; a stage's `kwargs`) is theirs once their pipeline built the program
(hil.executorch_ops.their_program); before that, reading it raises TheirSurface, and the plugin
runs the case as their own test, the reason counted, never a raw TypeError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hil.executorch_ops.calls import Edit, PipelineCall, TheirSurface, described

# their Tester's attributes that are no check: its stages and what they hold
SURFACES = ("stages", "get_artifact", "get_graph", "cur", "stage_output", "original_module")


def surface_needed(what: str) -> TheirSurface:
    return TheirSurface(
        f"the test reads {what}, which hil's stand-in for their pipeline does not keep",
        fix="it runs as their own test (their harness's verdict, counted apart)",
    )


class TesterMethod:
    """`pipeline.tester.check_count` and the like: a marker naming the check, which
    add_stage/add_stage_after record with their arguments."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> None:  # called directly: not a stage
        return None

    def their_method(self, tester: Any) -> Any:
        """The same method of their tester (their pipeline builds the program)."""
        return getattr(tester, self.name)


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

    @property
    def stages(self) -> Any:
        return self._their("stages")

    def get_artifact(self, *args: Any, **kwargs: Any) -> Any:
        return self._their("get_artifact")(*args, **kwargs)

    def _their(self, name: str) -> Any:
        their = self._call.their_pipeline
        if their is None:
            raise surface_needed(f"pipeline.tester.{name}")
        return getattr(their.tester, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self._call.their_pipeline is not None or name in SURFACES:
            return self._their(name)
        return TesterMethod(name)


class Quantizer:
    """`pipeline.quantizer`: set_global / set_io keep the config the test gives; anything
    else is recorded as accepted and not honoured."""

    def __init__(self, call: PipelineCall) -> None:
        self._call = call

    def set_global(self, config: Any) -> Quantizer:
        self._call.edits.append(Edit("quantizer.set_global", (config,)))
        self._call.global_config = config
        return self

    def set_io(self, config: Any) -> Quantizer:
        self._call.edits.append(Edit("quantizer.set_io", (config,)))
        self._call.io_config = config
        return self

    def __getattr__(self, name: str) -> Callable[..., Quantizer]:
        """Another quantizer setting (`set_module_type(torch.nn.Sigmoid, None)`): the recipe
        quantizes otherwise, so it is unapplied (built by their pipeline, or refused)."""
        if name.startswith("__"):
            raise AttributeError(name)

        def unapplied(*args: Any, **kwargs: Any) -> Quantizer:
            self._call.edits.append(Edit(f"quantizer.{name}", args, dict(kwargs)))
            self._call.unapplied.append(f"quantizer.{name}({described(args, kwargs)})")
            return self

        return unapplied

    def __setattr__(self, name: str, value: Any) -> None:
        """`pipeline.quantizer.quantizer = their own quantizer`: not the recipe's quantizer,
        so unapplied (built by their pipeline, or refused)."""
        if name != "_call":
            self._call.edits.append(Edit(f"quantizer.{name}", (value,), setting=True))
            self._call.unapplied.append(f"quantizer.{name} = {type(value).__name__}")
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
        self._call.edits.append(
            Edit("_stages.0.args.0.calibration_samples", (samples,), setting=True)
        )
        self._call.options["calibration_samples"] = samples


@dataclass(frozen=True)
class Stage:
    """A stage of the stand-in's list: for quantize, the calibration samples. Anything else
    of theirs (`id`, `kwargs`, `func`: their list has check stages the stand-in's has not) is
    TheirSurface."""

    name: str
    args: tuple[Any, ...]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise surface_needed(f"pipeline._stages[...].{name}")
