"""connection.labgrid of a device file: the pool (place or tags), tokens from the environment,
the coordinator's default, and refusals naming the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import parse_device
from hil.errors import DeviceSpecError
from hil.lab.client import PlaceView, ResourceView
from hil.lab.lease import Lease, matches
from hil.lab.resources import inner_spec
from hil.settings import LabSettings, SerialSettings, SshSettings, lab_settings
from hil.settings.lab import DEFAULT_COORDINATOR


def spec(labgrid: Any, kind: str = "serial", **connection: Any) -> Any:
    data = {
        "name": "rack",
        "kind": kind,
        "recipes": ["portable"],
        "connection": {"labgrid": labgrid, **connection},
    }
    return parse_device(data, Path("devices/rack.yaml"))


def lab(labgrid: Any, kind: str = "serial", **connection: Any) -> LabSettings:
    settings = lab_settings(spec(labgrid, kind, **connection).settings)
    assert settings is not None
    return settings


def test_tags_make_a_pool_and_the_rest_of_connection_is_the_inner_kinds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LG_COORDINATOR", raising=False)
    device = spec({"tags": {"board": "vboard", "rack": "r1"}}, reply_timeout_s=3.0)
    settings = lab_settings(device.settings)
    assert settings is not None
    assert dict(settings.filters) == {"board": "vboard", "rack": "r1"}
    assert settings.pool == "board=vboard rack=r1"
    assert settings.coordinator == DEFAULT_COORDINATOR
    assert settings.tokens == () and settings.power and settings.wait_s == 600.0
    assert device.settings.policy.reply_timeout_s == 3.0


def test_a_place_is_the_name_filter_and_env_values_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LG_COORDINATOR", "lab.example:20408")
    monkeypatch.setenv("LG_TOKEN", "AAA, BBB")
    settings = lab({"place": "rack1-vb3", "token": "$LG_TOKEN", "prio": 10, "power": False})
    assert dict(settings.filters) == {"name": "rack1-vb3"}
    assert settings.coordinator == "lab.example:20408"
    assert settings.tokens == ("AAA", "BBB")
    assert settings.prio == 10.0 and not settings.power


def test_an_unset_token_variable_means_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LG_TOKEN", raising=False)
    settings = lab({"place": "p1", "token": "${LG_TOKEN}", "coordinator": "${LG_NOWHERE}"})
    assert settings.tokens == ()
    assert settings.coordinator  # falls back to $LG_COORDINATOR or the default


@pytest.mark.parametrize(
    ("labgrid", "extra", "key"),
    [
        ({"place": "a", "tags": {"board": "x"}}, {}, "connection.labgrid"),
        ({}, {}, "connection.labgrid"),
        ({"tags": {}}, {}, "connection.labgrid.tags"),
        ({"tags": {"Board": "x"}}, {}, "connection.labgrid.tags.Board"),
        ({"place": "a", "wait": 3}, {}, "connection.labgrid.wait"),
        ({"place": "a", "wait_s": -1}, {}, "connection.labgrid.wait_s"),
        ({"place": "a", "power": "yes"}, {}, "connection.labgrid.power"),
        ({"place": "a"}, {"port": "/dev/ttyACM0"}, "connection.port"),
        ("rack1", {}, "connection.labgrid"),
    ],
)
def test_malformed_settings_name_the_file_and_key(
    labgrid: Any, extra: dict[str, Any], key: str
) -> None:
    with pytest.raises(DeviceSpecError) as caught:
        lab(labgrid, **extra)
    assert f"'{key}'" in str(caught.value) and "rack.yaml" in str(caught.value)


def test_pool_membership_follows_the_schedulers_rule() -> None:
    place = PlaceView("vb1", {"board": "vboard", "rack": "r1"}, None, None, ())
    assert matches(place, {"board": "vboard"})
    assert matches(place, {"name": "vb1"})
    assert not matches(place, {"board": "vboard", "rack": "r2"})


def test_the_inner_spec_reaches_the_leased_resources() -> None:
    serial = ResourceView(
        ("e", "vb1", "NetworkSerialPort", "RawSerialPort"),
        "NetworkSerialPort",
        {"host": "10.0.0.5", "port": 40123, "speed": 115200},
        True,
    )
    ssh = ResourceView(
        ("e", "pi", "NetworkService", "NetworkService"),
        "NetworkService",
        {"address": "10.0.0.7", "username": "pi", "port": 2222},
        True,
    )
    inner = inner_spec(spec({"place": "vb1"}, firmware="host"), Lease("vb1", (serial,), None))
    assert isinstance(inner.settings, SerialSettings)
    assert inner.settings.port == "telnet://10.0.0.5:40123"
    assert inner.settings.firmware.preset == "host" and inner.settings.labgrid is None
    inner = inner_spec(
        spec({"place": "pi"}, kind="ssh", identity="~/.ssh/id"), Lease("pi", (ssh,), None)
    )
    assert isinstance(inner.settings, SshSettings) and inner.settings.labgrid is None
    login = (inner.settings.host, inner.settings.port, inner.settings.user)
    assert login == ("10.0.0.7", 2222, "pi") and inner.settings.identity == "~/.ssh/id"
