"""How far a quantized model's outputs move when its rounding ties break the other way.

A correct int8 backend computes the same integer graph as the quantized PyTorch model, but not
with the same rounding: at an exact tie one rounds half to even and another half up, and where
PyTorch's float32 reference lands a hair from a tie (its accumulation order depends on the
CPU's SIMD path), the integer kernel may land on the other side. Each such one-step flip feeds
the next layer, and in a deep network a handful of them move the logits by several steps.
A fixed step limit then either fails correct targets on deep models or passes wrong ones on
shallow models.

So the limit is measured per model: the quantized model is run again `RUNS` times with every
activation quantizer's input nudged by seeded uniform noise, so ties and near-ties break at
random, as another correct backend might break them. How far those runs move from the
unperturbed reference, per output, is the model's rounding sensitivity; the target check allows
the backend's own allowance plus it (hil.verdict.tolerances). The nudge is `NUDGE` of a step
inside the graph, where integer kernels requantize with other multipliers and rounding modes
(measured: single layers differ from PyTorch in up to 1.2 % of elements, exact ties such as an
average of two in up to 13 %; a 2 % nudge flips about 4 % of elements and every exact tie),
and `INPUT_NUDGE` at the model's inputs, which every backend quantizes from the same float values
with the same division (they can differ only within float32 rounding of the scale). Constant
tensors (weights quantized at export) are never nudged: they are the same integers everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from hil.arrays import Array, to_array
from hil.artifacts.parts import OutputSensitivity
from hil.call import fresh

RUNS = 8
NUDGE = 0.02  # of a quantization step, inside the graph
INPUT_NUDGE = 1e-5  # of a step, where a model input is quantized: float32 rounding of x / scale
SEED = 20261201

INPUT, CONSTANT, ACTIVATION = "input", "constant", "activation"

_QUANTIZE = (
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_channel.default",
)


def _is_quantizer(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and str(node.target) in _QUANTIZE


def runtime_quantizers(module: torch.fx.GraphModule) -> int:
    """How many quantizers act on activations (not on constants folded at export): zero means
    the quantizer left the whole model in float. Branches and loop bodies count too (there, a
    weight the branch receives as an operand is counted with them: only zero is read)."""
    return sum(
        1
        for graph in _graphs(module)
        for node in graph.nodes
        if _is_quantizer(node)
        and not (isinstance(node.args[0], torch.fx.Node) and node.args[0].op == "get_attr")
    )


def _graphs(module: torch.fx.GraphModule) -> list[torch.fx.Graph]:
    """The module's graph and those of its control-flow branches and loop bodies."""
    return [m.graph for m in module.modules() if isinstance(m, torch.fx.GraphModule)]


class _TieBreaker(torch.fx.Interpreter):
    """Runs a converted PT2E graph with each activation quantizer's input nudged, inside
    `torch.cond` branches and `while_loop` bodies too: those are submodules the graph calls
    whole, and a quantizer there rounds on the device like any other."""

    def __init__(
        self,
        module: torch.fx.GraphModule,
        generator: torch.Generator,
        origins: Sequence[str] | None = None,
    ) -> None:
        super().__init__(module)
        self.generator = generator
        self.nudged = 0
        # what each placeholder carries: at the top level, the model's inputs; in a branch or
        # loop body, what its caller passed (a model input, a constant such as a branch's
        # weights, or an activation)
        placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
        kinds = origins if origins is not None else [INPUT] * len(placeholders)
        self.origins = dict(zip(placeholders, kinds, strict=True))

    def run_node(self, node: torch.fx.Node) -> Any:
        if node.op == "call_function" and node.target in _CONTROL_FLOW:
            return self._control_flow(node)
        if not _is_quantizer(node):
            return super().run_node(node)
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        source = node.args[0]
        value = args[0]
        origin = self.origin(source)
        if (
            origin == CONSTANT
            or not isinstance(value, torch.Tensor)
            or not value.is_floating_point()
        ):
            return getattr(self, node.op)(node.target, args, kwargs)
        step = _step(node, args, value)
        size = INPUT_NUDGE if origin == INPUT else NUDGE
        noise = torch.rand(value.shape, generator=self.generator, dtype=torch.float64)
        nudged = value.double() + (noise * 2.0 - 1.0) * size * step
        self.nudged += 1
        return getattr(self, node.op)(node.target, (nudged.to(value.dtype), *args[1:]), kwargs)

    def origin(self, source: Any) -> str:
        """Whether a value the graph reads is a model input, a constant or an activation."""
        if not isinstance(source, torch.fx.Node):
            return ACTIVATION
        if source.op == "get_attr":
            return CONSTANT
        return str(self.origins.get(source, ACTIVATION))

    def _control_flow(self, node: torch.fx.Node) -> Any:
        """Runs a cond's taken branch, or a while_loop's condition and body, through tie
        breakers that share this one's noise."""
        args, _ = self.fetch_args_kwargs_from_env(node)
        if node.target is torch.ops.higher_order.cond:
            pred, true_branch, false_branch, operands = args
            branch = true_branch if bool(pred) else false_branch
            return self._nested(branch, operands, node.args[3])
        condition, body, carried, additional = args
        carried_sources: tuple[Any, ...] = tuple(node.args[2])  # type: ignore[arg-type]
        additional_sources: tuple[Any, ...] = tuple(node.args[3])  # type: ignore[arg-type]
        values = tuple(carried)
        while _truth(
            self._nested(condition, (*values, *additional), (*carried_sources, *additional_sources))
        ):
            values = tuple(
                self._nested(body, (*values, *additional), (*carried_sources, *additional_sources))
            )
            carried_sources = (None,) * len(values)  # after one pass, activations
        return values

    def _nested(self, module: torch.fx.GraphModule, operands: Sequence[Any], sources: Any) -> Any:
        inner = _TieBreaker(module, self.generator, [self.origin(s) for s in sources])
        result = inner.run(*operands)
        self.nudged += inner.nudged
        return result


_CONTROL_FLOW = (torch.ops.higher_order.cond, torch.ops.higher_order.while_loop)


def _truth(condition: Any) -> bool:
    """A loop condition graph's answer, whether it returns the boolean tensor or a 1-tuple."""
    if isinstance(condition, (tuple, list)):
        (condition,) = condition
    return bool(condition)


def _step(node: torch.fx.Node, args: Sequence[Any], value: torch.Tensor) -> torch.Tensor:
    """The quantizer's step, shaped to broadcast against its input."""
    scale = args[1]
    if str(node.target).endswith("quantize_per_channel.default"):
        axis = int(args[3])
        shape = [1] * value.dim()
        shape[axis] = -1
        return torch.as_tensor(scale, dtype=torch.float64).reshape(shape)
    return torch.as_tensor(scale, dtype=torch.float64)


def sensitivity(
    module: torch.fx.GraphModule,
    inputs: Sequence[torch.Tensor],
    reference: Sequence[Array],
    output_steps: Sequence[float | None],
) -> tuple[OutputSensitivity | None, ...]:
    """Each output's movement over RUNS tie-broken runs (None for outputs without a step)."""
    from hil.export.lowering import flatten_outputs

    generator = torch.Generator().manual_seed(SEED)
    moved: list[list[Array]] = [[] for _ in reference]
    for _ in range(RUNS):
        breaker = _TieBreaker(module, generator)
        with torch.no_grad():
            outputs = flatten_outputs(breaker.run(*fresh(inputs)))
        for i, output in enumerate(outputs[: len(reference)]):
            moved[i].append(to_array(output))
        if breaker.nudged == 0:
            break  # nothing quantized at run time: the runs would all be the reference
    result: list[OutputSensitivity | None] = []
    for i, ref in enumerate(reference):
        step = output_steps[i] if i < len(output_steps) else None
        if not step or not moved[i]:
            result.append(None)
            continue
        base = ref.astype(np.float64)
        diffs = [np.abs(m.astype(np.float64) - base) / step for m in moved[i]]
        result.append(
            OutputSensitivity(
                max_steps=round(max(float(np.max(d)) if d.size else 0.0 for d in diffs), 4),
                off_fraction=max(float(np.mean(d >= 0.5)) if d.size else 0.0 for d in diffs),
                runs=len(diffs),
            )
        )
    return tuple(result)
