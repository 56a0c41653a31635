"""A VGF scenario template with a shader the VGF does not hold is refused by name (measured:
ExecuTorch's grid_sampler lowers to a custom shader, and the template leaves its SPIR-V file a
placeholder; the scenario runner then said only "Cannot open SPIR-V shader file")."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.errors import DeployError
from hil.vgf.scenario import _fill


def template(shader_src: str) -> dict[str, object]:
    return {
        "resources": [
            {"graph": {"src": "out.vgf", "uid": "vgf_graph_ref"}},
            {"shader": {"entry": "main", "src": shader_src, "type": "SPIR-V", "uid": "s"}},
            {
                "tensor": {
                    "uid": "input_0_ref",
                    "dims": [1, 4],
                    "format": "VK_FORMAT_R32_SFLOAT",
                    "src": "TEMPLATE_PATH_TENSOR_INPUT_0",
                }
            },
            {
                "tensor": {
                    "uid": "output_0_ref",
                    "dims": [1, 4],
                    "format": "VK_FORMAT_R32_SFLOAT",
                    "dst": "TEMPLATE_PATH_TENSOR_OUTPUT_0",
                }
            },
        ],
        "commands": [{"dispatch_graph": {"graph_ref": "vgf_graph_ref"}}],
    }


def test_a_shader_the_vgf_does_not_hold_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(DeployError) as refused:
        _fill(template("TEMPLATE_PATH_SHADER_SPIRV_1"), tmp_path, "delegate_0")
    said = refused.value.message
    assert "TEMPLATE_PATH_SHADER_SPIRV_1" in said and "custom shader" in said


def test_a_shader_file_the_template_names_is_kept(tmp_path: Path) -> None:
    inputs, outputs = _fill(template("shader.spv"), tmp_path, "delegate_0")
    assert [s.uid for s in inputs] == ["input_0_ref"] and [s.uid for s in outputs] == [
        "output_0_ref"
    ]
