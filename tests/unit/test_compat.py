"""Where ExecuTorch 1.4 and 1.5 differ, each read as a capability, not a version string."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hil.compat.cortex_m import edge_compile_config
from hil.compat.runtime import CMAKE_PACKAGE, require_runtime_package
from hil.compat.vela import command_stream
from hil.errors import TargetUnavailable


def test_vela_results_of_either_version_give_the_command_stream() -> None:
    assert command_stream(b"\x01\x02") == b"\x01\x02"  # 1.4: bytes
    assert command_stream(SimpleNamespace(processed_bytes=b"\x03")) == b"\x03"  # 1.5


def test_the_cortex_m_edge_config_keeps_the_operators_its_passes_lower() -> None:
    import torch

    config = edge_compile_config()
    assert torch.ops.aten.linear.default in config.preserve_ops
    assert config._check_ir_validity is False


def test_a_wheel_without_a_runtime_package_is_unavailable_naming_the_file(
    tmp_path: Path,
) -> None:
    with pytest.raises(TargetUnavailable, match=r"executorch-config\.cmake is missing"):
        require_runtime_package(tmp_path)
    (tmp_path / CMAKE_PACKAGE).parent.mkdir(parents=True)
    (tmp_path / CMAKE_PACKAGE).write_text("")
    assert require_runtime_package(tmp_path) == tmp_path / CMAKE_PACKAGE
