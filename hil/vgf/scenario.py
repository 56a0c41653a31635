"""A VGF delegate's scenario, from the VGF library's own template.

`vgf_dump --scenario-template` writes the scenario that runs a VGF file: its graph resource,
one tensor resource per input and output (shape and Vulkan format) and the dispatch binding
them. Its placeholders take `.npy` paths; hil fills them with files in the scenario's folder
(the inputs start as zeros: each run uploads the real values) and asks for `dispatch_vgf`,
the template's `dispatch_graph` being deprecated.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hil.errors import DeployError
from hil.vgf.environment import vgf_dump

# Vulkan tensor formats of VGF inputs and outputs, as numpy types; the float types numpy lacks
# travel as their bits (hil.arrays.RAW_BITS: the delegate's arrays are those bits already)
FORMATS: dict[str, str] = {
    "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM": "uint16",
    "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM": "uint8",
    "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM": "uint8",
    "VK_FORMAT_R64_UINT": "uint64",
    "VK_FORMAT_R64_SFLOAT": "float64",
    "VK_FORMAT_R8_SINT": "int8",
    "VK_FORMAT_R8_UINT": "uint8",
    "VK_FORMAT_R8_BOOL_ARM": "bool",
    "VK_FORMAT_R16_SINT": "int16",
    "VK_FORMAT_R16_UINT": "uint16",
    "VK_FORMAT_R32_SINT": "int32",
    "VK_FORMAT_R32_UINT": "uint32",
    "VK_FORMAT_R64_SINT": "int64",
    "VK_FORMAT_R16_SFLOAT": "float16",
    "VK_FORMAT_R32_SFLOAT": "float32",
}
SCENARIO = "scenario.json"
TEMPLATE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TensorSlot:
    """One input or output of the scenario: its resource uid, shape and numpy type."""

    uid: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class ScenarioFiles:
    """A scenario written to `folder`: its JSON and the slots a run fills and reads."""

    folder: Path
    inputs: tuple[TensorSlot, ...]
    outputs: tuple[TensorSlot, ...]

    @property
    def path(self) -> Path:
        return self.folder / SCENARIO


def write_scenario(vgf: bytes, folder: Path, name: str) -> ScenarioFiles:
    """The scenario of one VGF file, written with the file into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    graph = folder / f"{name}.vgf"
    graph.write_bytes(vgf)
    template_path = folder / "template.json"
    try:
        done = subprocess.run(
            [str(vgf_dump()), "-i", str(graph), "--scenario-template", "-o", str(template_path)],
            capture_output=True,
            text=True,
            timeout=TEMPLATE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise DeployError(
            f"vgf_dump did not write {name}'s scenario in {TEMPLATE_TIMEOUT_S:g} s",
            fix="run it by hand on the kept .vgf to see why",
        ) from e
    if done.returncode != 0 or not template_path.is_file():
        raise DeployError(
            f"vgf_dump could not read delegate {name}'s VGF (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-500:]}",
            fix="the VGF library cannot read what the model-converter wrote: their versions must "
            "agree (hil's [vgf] extra pins them together); a file damaged in the cache: delete "
            "the artifact's cache entry",
        )
    template = json.loads(template_path.read_text())
    inputs, outputs = _fill(template, folder, name)
    (folder / SCENARIO).write_text(json.dumps(template, indent=1))
    return ScenarioFiles(folder, inputs, outputs)


def _fill(
    template: dict[str, Any], folder: Path, name: str
) -> tuple[tuple[TensorSlot, ...], tuple[TensorSlot, ...]]:
    inputs: list[TensorSlot] = []
    outputs: list[TensorSlot] = []
    for resource in template.get("resources", []):
        shader = resource.get("shader") or {}
        if str(shader.get("src", "")).startswith("TEMPLATE_PATH"):
            raise DeployError(
                f"delegate {name}'s VGF runs a {shader.get('type', '')} shader it does not hold "
                f"({shader['src']}): the operator was lowered to a custom shader that the VGF "
                "names but does not contain, so no scenario can run it",
                fix="judge this operator on another target (tosa-fp-ref runs its TOSA graph); "
                "vgf-emu runs VGF files whose every shader is inside them",
            )
        tensor = resource.get("tensor")
        if tensor is None:
            continue
        fmt = str(tensor.get("format"))
        if fmt not in FORMATS:
            raise DeployError(
                f"delegate {name}'s VGF has a tensor of format {fmt}, which hil cannot feed",
                fix="known formats: " + ", ".join(FORMATS),
            )
        slot = TensorSlot(str(tensor["uid"]), tuple(int(d) for d in tensor["dims"]), FORMATS[fmt])
        if "src" in tensor:
            data = folder / f"{slot.uid}.npy"
            np.save(data, np.zeros(slot.shape, dtype=slot.dtype))
            tensor["src"] = data.name
            inputs.append(slot)
        elif "dst" in tensor:
            tensor["dst"] = f"{slot.uid}.npy"
            outputs.append(slot)
    for command in template.get("commands", []):
        if "dispatch_graph" in command:
            command["dispatch_vgf"] = command.pop("dispatch_graph")
    return _ordered(inputs, "input"), _ordered(outputs, "output")


def _ordered(slots: list[TensorSlot], kind: str) -> tuple[TensorSlot, ...]:
    """Inputs and outputs in the delegate's argument order (the template's uids are
    `input_<n>_ref` and `output_<n>_ref`)."""

    def number(slot: TensorSlot) -> int:
        parts = slot.uid.split("_")
        return int(parts[1]) if len(parts) > 2 and parts[0] == kind and parts[1].isdigit() else 0

    return tuple(sorted(slots, key=number))
