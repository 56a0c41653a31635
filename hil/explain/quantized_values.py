"""The quantized PyTorch model an Ethos-U artifact was lowered from, and its value at every node.

The ethos-u recipe lowers the quantized program exactly as the quantized-model store keeps it
(hil.reference.quantized). The explainer needs that very program twice: to learn which of its
nodes each TOSA operator came from (hil.explain.tosa_origins), and as the reference for each
TOSA tensor. It is looked up in the store first; when the store no longer has it (an export
without a shared store keeps it only while exporting) it is quantized again, and used only when
the store key equals the artifact's record, so the reference is the one the artifact was made
from (calibration depends on the CPU's SIMD path: another machine may quantize differently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hil.artifacts.store import Artifact
from hil.case import BuiltCase
from hil.errors import ExplainError

QUANTIZE = "quantize_per_tensor"
DEQUANTIZE = "dequantize_per"
# Operators PT2E quantizes together with the one before them (one quantize after the pair):
# the TOSA lowering folds them into that operator's rescale.
FUSED_ACTIVATIONS = ("relu", "relu_", "hardtanh", "hardtanh_", "clamp", "clamp_min")
# Operators whose int32 output TOSA computes with scale (input scale x weight scale).
ACCUMULATING = ("conv2d", "convolution", "linear")


@dataclass(frozen=True)
class QuantParams:
    scale: float
    zero_point: int
    qmin: int
    qmax: int
    dtype: torch.dtype


@dataclass(frozen=True)
class QuantizedValues:
    """The quantized program's graph and the value of each node on the case's inputs."""

    graph: torch.fx.Graph
    values: Mapping[str, Any]  # node name -> its value (tensors, as torch computed them)
    order: Mapping[str, int]  # node name -> position in the graph

    def node(self, name: str) -> torch.fx.Node | None:
        return next((n for n in self.graph.nodes if n.name == name), None)

    def output_qparams(self, name: str) -> QuantParams | None:
        found = self.quantized_output(name)
        return found[0] if found else None

    def quantized_output(self, name: str) -> tuple[QuantParams, str] | None:
        """The quantize that turns this node's output into integers, through a fused
        activation, and the node it quantizes (the activation's, whose value TOSA's rescale
        produces); None: the node's output is not quantized on its own."""
        node = self.node(name)
        if node is None:
            return None
        if QUANTIZE in str(node.target):
            params = _qparams(node)
            source = node.args[0]
            return (params, source.name) if params and isinstance(source, torch.fx.Node) else None
        for user in node.users:
            if QUANTIZE in str(user.target):
                params = _qparams(user)
                return (params, name) if params else None
        for user in node.users:
            if _op_name(user) in FUSED_ACTIVATIONS:
                found = self.quantized_output(user.name)
                if found is not None:
                    return found
        return None

    def accumulator_scale(self, name: str) -> torch.Tensor | None:
        """For a convolution or linear layer on dequantized operands: the scale of TOSA's
        int32 accumulator (input scale x weight scale, per output channel), shaped to broadcast
        over the node's output; None for other nodes."""
        node = self.node(name)
        if node is None or _op_name(node) not in ACCUMULATING or len(node.args) < 2:
            return None
        data, weight = node.args[0], node.args[1]
        if not all(
            isinstance(a, torch.fx.Node) and DEQUANTIZE in str(a.target) for a in (data, weight)
        ):
            return None
        assert isinstance(data, torch.fx.Node) and isinstance(weight, torch.fx.Node)
        input_scale = self._scalar_arg(data, 1)
        weight_scale = self._tensor_arg(weight, 1)
        value = self.values.get(name)
        if input_scale is None or weight_scale is None or not isinstance(value, torch.Tensor):
            return None
        channel_axis = -1 if _op_name(node) == "linear" else 1
        shape = [1] * value.dim()
        shape[channel_axis] = -1
        return (weight_scale.to(torch.float64) * input_scale).reshape(shape)

    def _scalar_arg(self, node: torch.fx.Node, index: int) -> float | None:
        arg = node.args[index]
        if isinstance(arg, (int, float)):
            return float(arg)
        value = self.values.get(arg.name) if isinstance(arg, torch.fx.Node) else None
        return float(value) if isinstance(value, torch.Tensor) and value.numel() == 1 else None

    def _tensor_arg(self, node: torch.fx.Node, index: int) -> torch.Tensor | None:
        arg = node.args[index]
        if isinstance(arg, (int, float)):
            return torch.tensor([float(arg)])
        value = self.values.get(arg.name) if isinstance(arg, torch.fx.Node) else None
        return value.flatten() if isinstance(value, torch.Tensor) else None


def _op_name(node: torch.fx.Node) -> str:
    """`conv2d` for aten.conv2d.default: the operator's own name."""
    target = node.target
    name = getattr(target, "__name__", str(target))
    return str(name).split(".")[0]


def _qparams(node: torch.fx.Node) -> QuantParams | None:
    args = node.args
    if len(args) < 6:
        return None
    scale, zero_point, qmin, qmax, dtype = args[1:6]
    if not (
        isinstance(scale, (int, float))
        and isinstance(zero_point, int)
        and isinstance(qmin, int)
        and isinstance(qmax, int)
        and isinstance(dtype, torch.dtype)
    ):
        return None
    return QuantParams(float(scale), zero_point, qmin, qmax, dtype)


def quantize(value: torch.Tensor, params: QuantParams) -> torch.Tensor:
    """The integers the quantized model's own quantize op makes of `value`."""
    quantized: torch.Tensor = torch.ops.quantized_decomposed.quantize_per_tensor.default(
        value.to(torch.float32),
        params.scale,
        params.zero_point,
        params.qmin,
        params.qmax,
        params.dtype,
    )
    return quantized


class _Recording(torch.fx.Interpreter):
    """Runs a graph and keeps every node's value (constants included)."""

    def __init__(self, module: torch.fx.GraphModule) -> None:
        super().__init__(module)
        self.kept: dict[str, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        value = super().run_node(n)
        # a copy: an in-place activation (relu_, hardtanh_) would change the kept value
        self.kept[n.name] = value.clone() if isinstance(value, torch.Tensor) else value
        return value


def node_values(program: Any, built: BuiltCase) -> QuantizedValues:
    """Every node's value of the quantized program on the case's inputs."""
    module = program.module(check_guards=False)
    recording = _Recording(module)
    flat = [t for t in built.inputs if isinstance(t, torch.Tensor)]
    with torch.no_grad():
        recording.run(*flat)
    order = {n.name: i for i, n in enumerate(module.graph.nodes)}
    return QuantizedValues(module.graph, recording.kept, order)


def quantized_program(
    built: BuiltCase, artifact: Artifact, store: Path | None, workdir: Path
) -> Any:
    """The quantized program the artifact was lowered from (see module docstring)."""
    key = str(artifact.details.get("quantized_model") or "")
    if not key:
        raise ExplainError(
            f"{artifact.folder} does not record its quantized model",
            fix="re-export the case with the ethos-u recipe",
        )
    if store is not None:
        entry = next(
            (p for p in sorted(store.glob(f"{key}*")) if (p / "meta.json").is_file()), None
        )
        if entry is not None:
            return torch.export.load(entry / "program.pt2")
    return _quantize_again(built, artifact, key, workdir)


def _quantize_again(built: BuiltCase, artifact: Artifact, key: str, workdir: Path) -> Any:
    from hil.recipes import make_recipe
    from hil.recipes.ethos_u import EthosURecipe
    from hil.reference.quantized import QuantizedStore

    options = dict(artifact.meta.get("material", {}).get("options", {}))
    recipe = make_recipe("ethos-u", options)
    assert isinstance(recipe, EthosURecipe)
    spec = recipe.compile_spec()
    model = QuantizedStore(workdir / "quantized").get(
        built, recipe.quantizer_identity(), lambda: recipe.quantizer(spec)
    )
    if not model.key.startswith(key):
        raise ExplainError(
            f"quantizing {built.case.name!r} again gives another quantized model "
            f"({model.key[:16]}) than the artifact was made from ({key}): the reference for "
            "its intermediate tensors is not available here",
            fix="explain on the machine that exported it, or keep the shared quantized-model "
            "store (the session's cache) and pass it as `store`",
        )
    return model.program
