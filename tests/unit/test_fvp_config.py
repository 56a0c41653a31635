"""FVP device files: the NPU the FVP models must be the one the recipes compile for, checked
before anything runs; keys and parameters hil manages cannot be overridden."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import parse_device
from hil.errors import DeviceSpecError
from hil.fvp.config import fvp_config


def spec(
    tmp_path: Path, npu: str = "ethos-u85-256", accelerator: str | None = None, **connection: Any
) -> Any:
    data = {
        "name": "fvp-x",
        "kind": "fvp",
        "npu": npu,
        "recipes": [{"name": "ethos-u", "options": {"accelerator_config": accelerator or npu}}],
        "connection": {"platform": "corstone-320", **connection},
    }
    return parse_device(data, tmp_path / "fvp-x.yaml")


def test_macs_come_from_the_npu(tmp_path: Path) -> None:
    config = fvp_config(spec(tmp_path))
    assert config.num_macs == 256
    assert config.platform.binary == "FVP_Corstone_SSE-320"
    assert config.mode == "accurate" and not config.fast


def test_num_macs_that_disagrees_with_the_npu_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"num_macs is 512.*ethos-u85-256 has 256 MACs"):
        fvp_config(spec(tmp_path, num_macs=512))


def test_num_macs_parameter_that_disagrees_is_refused(tmp_path: Path) -> None:
    params = {"mps4_board.subsystem.ethosu.num_macs": 128}
    with pytest.raises(DeviceSpecError, match=r"num_macs=128.*has 256 MACs"):
        fvp_config(spec(tmp_path, params=params))
    same = {"mps4_board.subsystem.ethosu.num_macs": 256}
    assert fvp_config(spec(tmp_path, params=same)).num_macs == 256


def test_recipe_compiled_for_another_npu_is_refused(tmp_path: Path) -> None:
    # devices.py refuses it already, before the FVP configuration is even read
    with pytest.raises(DeviceSpecError, match="accelerator_config"):
        spec(tmp_path, accelerator="ethos-u85-512")


def test_npu_of_another_family_than_the_platform_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match="corstone-320 FVP models an ETHOS-U85"):
        fvp_config(spec(tmp_path, npu="ethos-u55-128"))
    with pytest.raises(DeviceSpecError, match="offers ethos-u55 with 32, 64, 128, 256 MACs"):
        fvp_config(spec(tmp_path, npu="ethos-u55-512", platform="corstone-300"))


def test_managed_parameters_and_unknown_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"may not set mps4_board\.telnetterminal0\.mode"):
        fvp_config(spec(tmp_path, params={"mps4_board.telnetterminal0.mode": "telnet"}))
    with pytest.raises(
        DeviceSpecError, match=r"'connection\.timelimit' must be one of the known keys \(platform, "
    ):
        fvp_config(spec(tmp_path, timelimit=5))
    with pytest.raises(DeviceSpecError, match=r"'connection\.mode' must be one of accurate, fast"):
        fvp_config(spec(tmp_path, mode="turbo"))


def test_repository_device_files_agree_with_their_recipes(repo_devices: Any) -> None:
    for name, macs in (("fvp-u55", 128), ("fvp-u85", 256)):
        device = repo_devices.get(name)
        config = fvp_config(device)
        assert config.num_macs == macs
        assert device.recipe("ethos-u").options["accelerator_config"] == device.npu
