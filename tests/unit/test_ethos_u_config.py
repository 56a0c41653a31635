"""Ethos-U options are validated, and a device whose NPU disagrees with its recipe is refused
before any work (at parse time, and again when a reference target is provisioned)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hil.devices import DeviceRegistry, parse_device
from hil.errors import DeviceSpecError, UsageError
from hil.recipes import make_recipe
from hil.targets import make_target


def ethos(**options: Any) -> Any:
    return make_recipe("ethos-u", options)


def test_defaults_and_known_options() -> None:
    recipe = ethos(accelerator_config="ethos-u85-512", per_channel=False, a16w8=True)
    assert recipe.accelerator == "ethos-u85-512"
    assert recipe.options["extra_flags"] == ()


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"accelerator_config": "ethos-u55-512"}, "not an Ethos-U55/U85"),
        ({"per_channel": "yes"}, "per_channel must be true or false"),
        ({"a16w8": 1}, "a16w8 must be true or false"),
        ({"system_config": 3}, "system_config must be a string"),
        ({"extra_flags": "--verbose-cycle-estimate"}, "list of strings"),
        ({"extra_flags": ["--accelerator-config=ethos-u85-256"]}, "may not set"),
        ({"extra_flags": ["--memory-mode=Sram_Only"]}, "may not set"),
        ({"tosa": True}, "has no option"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        ethos(**options)


def test_system_config_and_memory_mode_must_exist_in_vela_ini() -> None:
    ethos(system_config="Ethos_U55_Deep_Embedded", memory_mode="Shared_Sram").check_vela_config()
    with pytest.raises(UsageError, match="Ethos_U55_High_End_Embedded"):
        ethos(system_config="Ethos_U55_Fast").check_vela_config()
    with pytest.raises(UsageError, match="memory mode"):
        ethos(memory_mode="All_Flash").check_vela_config()


def device(npu: str | None, accelerator: str, **options: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "npu",
        "kind": "ethos_u_ref",
        "recipes": [{"name": "ethos-u", "options": {"accelerator_config": accelerator, **options}}],
        "latency": {"timing": "estimated"},
    }
    if npu is not None:
        data["npu"] = npu
    return data


def test_device_npu_must_match_the_compile_spec() -> None:
    spec = parse_device(device("ethos-u55-128", "ethos-u55-128"), Path("npu.yaml"))
    assert spec.npu == "ethos-u55-128"
    with pytest.raises(DeviceSpecError, match=r"accelerator_config.*ethos-u55-128.*ethos-u85-256"):
        parse_device(device("ethos-u55-128", "ethos-u85-256"), Path("npu.yaml"))
    with pytest.raises(DeviceSpecError, match="npu"):
        parse_device(device(None, "ethos-u85-256"), Path("npu.yaml"))


def test_registry_refuses_a_mismatched_device_file(tmp_path: Path) -> None:
    (tmp_path / "npu.yaml").write_text(yaml.safe_dump(device("ethos-u85-256", "ethos-u55-64")))
    with pytest.raises(DeviceSpecError, match=r"npu\.yaml"):
        DeviceRegistry.from_dirs([tmp_path])


def test_reference_target_refuses_an_unknown_system_config_on_provision() -> None:
    spec = parse_device(
        device("ethos-u55-128", "ethos-u55-128", system_config="Ethos_U55_Nowhere"),
        Path("npu.yaml"),
    )
    target = make_target(spec)
    with pytest.raises(DeviceSpecError, match="Ethos_U55_Nowhere"):
        target.provision()


def test_repository_devices_are_consistent(repo_devices: DeviceRegistry) -> None:
    for name in ("u55-ref", "u85-ref"):
        spec = repo_devices.get(name)
        assert spec.kind == "ethos_u_ref" and spec.latency.timing == "estimated"
        assert spec.recipes[0].options["accelerator_config"] == spec.npu
        make_target(spec).provision()  # checks the recipes against vela.ini


def test_ethos_u_numerics_follow_the_a16w8_and_weights_options() -> None:
    from hil.recipes import make_recipe
    from hil.verdict import tolerances

    assert make_recipe("ethos-u", {"a16w8": True}).numerics == "a16w8"
    assert make_recipe("ethos-u").numerics == "int8"
    four_bit = make_recipe("ethos-u", {"weights": "int4"})
    assert four_bit.numerics == "a8w4" and four_bit.step_allowance is not None
    held = tolerances.quantization("a8w4", None)
    assert "a8w4 quantization: SQNR >= 15 dB" in held.basis
    assert tolerances.quantization("int8", None).get("sqnr_db") == tolerances.INT8_MIN_SQNR_DB
