"""Device specs: valid files load into typed objects; malformed ones name file, key, expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.devices import DeviceRegistry, load_device
from hil.errors import DeviceSpecError, UsageError
from hil.settings import SerialSettings

VALID = """
name: board
kind: serial
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
    assert isinstance(spec.settings, SerialSettings) and spec.settings.port == "/dev/ttyACM0"
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        spec.settings.port = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        (VALID.replace("kind: serial", "kind: toaster"), "kind", "one of"),
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


FVP = """
name: fvp-x
kind: fvp
npu: ethos-u85-256
recipes: [{name: ethos-u, options: {accelerator_config: ethos-u85-256}}]
connection: {platform: corstone-320}
"""
SSH = """
name: pi-x
kind: ssh
recipes: [xnnpack-fp32]
connection: {host: pi5.lab, user: pi, identity: ~/.ssh/id, known_hosts: ~/.ssh/known_hosts}
"""


# The three mistakes a hand-written connection section makes (a misspelt key, a value of the
# wrong type, a part left out), for every kind: each is refused when the file loads, naming the
# file, the key's full path, what it must be and what it was.
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "host",
            "name: host\nkind: host\nrecipes: [portable]\nconnection: {thread: 2}\n",
            "key 'connection.thread' must be one of the known keys (threads), got 'thread'",
        ),
        (
            "host",
            "name: host\nkind: host\nrecipes: [portable]\nconnection: {threads: two}\n",
            "key 'connection.threads' must be a positive integer, got 'two'",
        ),
        (
            "board",
            VALID.replace("{port: /dev/ttyACM0}", "{port: /dev/ttyACM0, baud: 9600}"),
            "key 'connection.baud' must be one of the known keys (port, virtual, baudrate, ",
        ),
        (
            "board",
            VALID.replace("{port: /dev/ttyACM0}", "{port: /dev/ttyACM0, baudrate: fast}"),
            "key 'connection.baudrate' must be a positive integer, got 'fast'",
        ),
        (
            "board",
            VALID.replace("{port: /dev/ttyACM0}", "{baudrate: 9600}"),
            "key 'connection' must be exactly one of port (a device node or URL), virtual "
            "(host-runner, qemu-mps3-an547) or labgrid, got {'baudrate': 9600}",
        ),
        (
            "pi-x",
            SSH.replace("user: pi,", "usr: pi,"),
            "key 'connection.usr' must be one of the known keys (host, user, identity, ",
        ),
        (
            "pi-x",
            SSH.replace("host: pi5.lab", "host: [pi5]"),
            "key 'connection.host' must be a string, got ['pi5']",
        ),
        (
            "pi-x",
            SSH.replace("user: pi, ", ""),
            "key 'connection.user' must be a string (an ssh device needs host, user, identity and "
            "known_hosts, or virtual: emulated-pi, or labgrid), got nothing",
        ),
        (
            "fvp-x",
            FVP.replace("{platform: corstone-320}", "{platform: corstone-320, stats: true}"),
            "key 'connection.stats' must be one of the known keys (platform, num_macs, mode, ",
        ),
        (
            "fvp-x",
            FVP.replace("{platform: corstone-320}", "{platform: corstone-320, time_limit_s: soon}"),
            "key 'connection.time_limit_s' must be a positive number, got 'soon'",
        ),
        (
            "fvp-x",
            FVP.replace("{platform: corstone-320}", "{mode: fast}"),
            "key 'connection.platform' must be one of corstone-300, corstone-320, got nothing",
        ),
    ],
)
def test_each_kinds_connection_mistakes_are_refused_when_the_file_loads(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(DeviceSpecError) as info:
        load_device(path)
    assert str(info.value).startswith(f"{path}: {message}"), str(info.value)
    assert f"fix: edit {name}.yaml" in str(info.value)


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
