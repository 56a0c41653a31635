"""An Ethos-U lowering error names the stage that raised it: the innermost known frame, not
ExecuTorch's Ethos-U backend that runs every stage (which made an Arm pass's error read
"Vela rejected the model")."""

from __future__ import annotations

import pytest
import torch

from hil.export.stages import brief, failing_stage

meandim = pytest.importorskip("executorch.backends.arm._passes.decompose_meandim_pass")
BACKEND = "/venv/site-packages/executorch/backends/arm/ethosu/backend.py"
VELA = "/venv/site-packages/ethosu/vela/vela.py"


def _raised_through(filename: str, call: str, namespace: dict[str, object]) -> BaseException:
    """The error `call` raises when made from a frame of `filename` (the stage's caller)."""
    code = compile(f"def through():\n    {call}\n", filename, "exec")
    exec(code, namespace)
    try:
        namespace["through"]()  # type: ignore[operator]
    except Exception as e:
        return e
    raise AssertionError(f"{call} did not raise")


def test_an_arm_pass_error_is_the_arm_passes_not_vela() -> None:
    """A real Arm pass raising (the mean.dim decomposition asked for another operator), called
    from a frame of the Ethos-U backend's package."""
    error = _raised_through(
        BACKEND,
        "get_decomposition(torch.ops.aten.add.Tensor)",
        {"get_decomposition": meandim.get_meandim_decomposition, "torch": torch},
    )
    assert failing_stage(error) == "the Arm passes (decompose_meandim_pass)"


def test_an_error_inside_vela_is_vela() -> None:
    error = _raised_through(VELA, "raise ValueError('could not run on NPU')", {})
    assert failing_stage(error) == "Vela"


def test_an_error_outside_every_known_stage_says_the_lowering() -> None:
    assert failing_stage(ValueError("x")) == "the Arm lowering"


def test_a_pass_managers_wrapper_says_the_error_inside_it() -> None:
    """torch's PassManager re-raises a pass's error as "An error occurred when running the 'X'
    pass": the error inside (a source build of ExecuTorch without CMSIS-NN's bindings) is the
    one that says what to do, so the message carries its first line."""
    from torch.fx.passes.infra.pass_manager import PassManager

    def needs_bindings(module: torch.fx.GraphModule) -> None:
        raise ModuleNotFoundError("Cortex-M backend dependencies are not installed\nmore")

    with pytest.raises(Exception) as raised:
        PassManager([needs_bindings])(torch.fx.symbolic_trace(torch.nn.ReLU()))
    said = brief(raised.value)
    assert said.startswith("Exception: An error occurred when running the 'needs_bindings' pass")
    assert said.endswith(
        "\n  caused by ModuleNotFoundError: Cortex-M backend dependencies are not installed"
    )
    assert brief(ValueError("alone")) == "ValueError: alone"
