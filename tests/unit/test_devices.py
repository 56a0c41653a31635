"""Device specs: valid files load into typed objects; malformed ones name file, key, expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.devices import DeviceRegistry, load_device
from hil.errors import DeviceSpecError, UsageError

VALID = """
name: board
kind: host
recipes:
  - portable
  - name: xnnpack-int8
    options: {per_channel: false}
latency: {scale: 2.5, budget_ms: 10, warmup: 0, min_runs: 3}
memory: {pte_max_bytes: 1000000}
connection: {port: /dev/ttyACM0}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def test_valid_file_loads_into_frozen_typed_spec(tmp_path: Path) -> None:
    spec = load_device(write(tmp_path, "board", VALID))
    assert spec.recipe_names == ("portable", "xnnpack-int8")
    assert spec.recipe("xnnpack-int8").options["per_channel"] is False
    assert spec.latency.scale == 2.5 and spec.latency.policy.warmup == 0
    assert spec.memory.pte_max_bytes == 1_000_000
    assert spec.connection["port"] == "/dev/ttyACM0"
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.connection["port"] = "x"  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        (VALID.replace("kind: host", "kind: toaster"), "kind", "one of"),
        (VALID.replace("scale: 2.5", "scale: fast"), "latency.scale", "a positive number"),
        (VALID.replace("warmup: 0", "warmup: -1"), "latency.warmup", "non-negative"),
        (VALID.replace("min_runs: 3", "min_runs: true"), "latency.min_runs", "positive integer"),
        (
            VALID.replace("  - portable\n", "  - portable\n  - portable\n"),
            "recipes",
            "without repeated",
        ),
        (
            VALID.replace("memory: {pte_max_bytes: 1000000}", "memory: {pte_max: 1}"),
            "memory.pte_max",
            "known keys",
        ),
        (VALID.replace("name: board", "name: other"), "name", "file's own name"),
        (VALID.replace("recipes:", "recipe:"), "recipe", "known keys"),
        ("- just\n- a list\n", "<top level>", "a mapping"),
    ],
)
def test_malformed_file_names_file_key_and_expectation(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = write(tmp_path, "board", text)
    with pytest.raises(DeviceSpecError) as info:
        load_device(path)
    message = str(info.value)
    assert str(path) in message and repr(key) in message and expected in message


def test_broken_yaml_is_a_device_spec_error(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match="not valid YAML"):
        load_device(write(tmp_path, "board", "name: [unclosed\n"))


def test_unknown_target_lists_valid_names(tmp_path: Path) -> None:
    write(tmp_path, "board", VALID)
    registry = DeviceRegistry.from_dirs([tmp_path])
    with pytest.raises(UsageError, match=r"unknown target 'bord'; valid targets: board"):
        registry.get("bord")


def test_repository_devices_all_load(repo_devices: DeviceRegistry) -> None:
    assert "host" in repo_devices
    for spec in repo_devices:
        assert spec.recipes, spec.name
