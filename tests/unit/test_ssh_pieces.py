"""The SSH target's pure pieces: remote facts, device-file keys, how ssh's words are read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import parse_device
from hil.errors import DeviceSpecError, TargetUnavailable
from hil.resources.ssh_remote import parse_facts, parse_temperature
from hil.targets.ssh import real_endpoint, ssh_settings
from hil.transports.ssh import HostKeyRefused, SshConnection, SshEndpoint

PI_FACTS = (
    "Cortex-A76\n--\n\n--\nRaspberry Pi 5 Model B Rev 1.0\n--\nondemand\n--\n51250\n--\n"
    "Linux 6.6.31+rpt-rpi-2712 aarch64\n--\n4\n"
)
CONTAINER_FACTS = (
    "\n--\nIntel(R) Xeon(R) Processor\n--\n\n--\n\n--\n\n--\nLinux 6.1 x86_64\n--\n2\n"
)


def test_a_pis_facts_are_read_where_readable() -> None:
    facts = parse_facts(PI_FACTS)
    assert facts.cpu_model == "Cortex-A76" and facts.board.startswith("Raspberry Pi 5")
    assert facts.governor == "ondemand" and facts.temperature_c == pytest.approx(51.25)
    assert facts.as_dict()["soc_temperature_c"] == "51.2"


def test_missing_facts_are_left_out_not_invented() -> None:
    facts = parse_facts(CONTAINER_FACTS)
    assert facts.cpu_model == "Intel(R) Xeon(R) Processor"  # lscpu empty: /proc/cpuinfo
    assert facts.temperature_c is None
    shown = facts.as_dict()
    assert "cpu_governor" not in shown and "soc_temperature_c" not in shown and "board" not in shown


@pytest.mark.parametrize(("text", "celsius"), [("48312\n", 48.312), ("", None), ("n/a", None)])
def test_temperature_is_millidegrees(text: str, celsius: float | None) -> None:
    assert parse_temperature(text) == (pytest.approx(celsius) if celsius else None)


def spec(tmp_path: Path, **connection: Any) -> Any:
    data = {"name": "rack", "kind": "ssh", "recipes": ["xnnpack-fp32"], "connection": connection}
    return parse_device(data, tmp_path / "rack.yaml")


def test_an_unknown_virtual_kind_is_a_device_file_error(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"'connection\.virtual' must be one of emulated-pi"):
        spec(tmp_path, virtual="vm")


def test_a_real_device_needs_its_login_keys_when_the_file_loads(tmp_path: Path) -> None:
    with pytest.raises(DeviceSpecError, match=r"'connection\.known_hosts' must be a string"):
        spec(tmp_path, host="pi", user="pi", identity="~/k")


def test_an_unset_variable_or_missing_key_file_makes_it_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RACK_HOST", raising=False)
    keys = {"user": "pi", "identity": str(tmp_path / "id"), "known_hosts": str(tmp_path / "kh")}
    unset = spec(tmp_path, host="$RACK_HOST", **keys)
    with pytest.raises(TargetUnavailable, match="RACK_HOST"):
        real_endpoint(unset, ssh_settings(unset))
    monkeypatch.setenv("RACK_HOST", "pi5.lab")
    with pytest.raises(TargetUnavailable, match="does not exist"):
        real_endpoint(unset, ssh_settings(unset))
    (tmp_path / "id").write_text("key")
    (tmp_path / "kh").write_text("")
    endpoint = real_endpoint(unset, ssh_settings(unset))
    assert endpoint.host == "pi5.lab" and endpoint.port == 22 and endpoint.user == "pi"


def connection(tmp_path: Path) -> SshConnection:
    endpoint = SshEndpoint("10.1.2.3", "pi", tmp_path / "id", tmp_path / "known_hosts", 2222)
    return SshConnection(endpoint, "rack", tmp_path)


CHANGED = """debug1: Server host key: ssh-ed25519 SHA256:AbCdEf0123
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
Host key verification failed.
"""
UNKNOWN = """debug1: Server host key: ssh-ed25519 SHA256:Zz9
No ED25519 host key is known for [10.1.2.3]:2222 and you have requested strict checking.
Host key verification failed.
"""


def test_a_changed_key_names_the_offered_fingerprint_and_the_fix(tmp_path: Path) -> None:
    error = connection(tmp_path)._login_failure(CHANGED)
    assert isinstance(error, HostKeyRefused) and error.fingerprint == "SHA256:AbCdEf0123"
    assert "CHANGED" in error.message and "SHA256:AbCdEf0123" in error.message
    assert error.fix is not None and "ssh-keygen -R '[10.1.2.3]:2222'" in error.fix


def test_an_unknown_key_names_the_offered_fingerprint_and_how_to_add_it(tmp_path: Path) -> None:
    error = connection(tmp_path)._login_failure(UNKNOWN)
    assert isinstance(error, HostKeyRefused) and "UNKNOWN" in error.message
    assert error.fix is not None and "ssh-keyscan -p 2222 10.1.2.3" in error.fix


def test_a_refused_login_and_an_unreachable_host_say_so(tmp_path: Path) -> None:
    denied = connection(tmp_path)._login_failure("pi@10.1.2.3: Permission denied (publickey).")
    assert isinstance(denied, TargetUnavailable) and "ssh-copy-id" in (denied.fix or "")
    refused = connection(tmp_path)._login_failure(
        "debug1: Connecting to 10.1.2.3 port 2222.\n"
        "ssh: connect to host 10.1.2.3 port 2222: Connection refused\n"
    )
    assert "Connection refused" in refused.message and "pi@10.1.2.3:2222" in refused.message


def test_the_summary_labels_emulated_latency_everywhere() -> None:
    from hil.report.summary import render

    latency = {"median_us": 1500.0, "p90_us": 2000.0, "timing": "emulated"}
    records = [
        {
            "target": "pi5-emu",
            "case": "c",
            "recipe": r,
            "verdict": "PASS",
            "metrics": {},
            "latency": latency,
            "eager_latency": {"median_us": 10.0},
        }
        for r in ("xnnpack-fp32", "portable")
    ]
    lines = render(records)
    assert "latency emulated" in lines[0]
    latency_rows = [line for line in lines if line.startswith("c ")]
    assert latency_rows and all(line.count("(emu)") >= 2 for line in latency_rows)


def test_doctor_says_what_a_real_pi_lacks_in_pytests_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hil.doctor import diagnose

    monkeypatch.delenv("RACK_HOST", raising=False)
    device = spec(tmp_path, host="$RACK_HOST", user="pi", identity="~/id", known_hosts="~/kh")
    diagnosis = diagnose(device)
    assert not diagnosis.ready
    assert diagnosis.verdict().startswith("skipped by pytest: target rack unavailable: ")
    assert "RACK_HOST" in diagnosis.verdict()
