"""Host-key verification against a real sshd on loopback: an unknown or changed key is refused
with the offered key's fingerprint and what to do, and the known-hosts file is never changed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hil.devices import DeviceRegistry
from hil.errors import TargetUnavailable
from hil.resources.emulated_pi import EmulatedPi
from hil.session import Session
from hil.transports.ssh import HostKeyRefused, SshConnection, SshEndpoint

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/sbin/sshd") or os.geteuid() != 0,
    reason="needs root and openssh-server (make test installs it)",
)


@pytest.fixture
def pi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[EmulatedPi, SshEndpoint]]:
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    emulator = EmulatedPi("keys", tmp_path / "emu")
    endpoint = emulator.start()
    yield emulator, endpoint
    emulator.stop()


def fingerprint(public_key: Path) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(public_key)], capture_output=True, text=True, check=True
    ).stdout
    return out.split()[1]


def test_the_known_key_connects_and_is_recorded(
    pi: tuple[EmulatedPi, SshEndpoint], tmp_path: Path
) -> None:
    emulator, endpoint = pi
    connection = SshConnection(endpoint, "keys", tmp_path / "logs")
    connection.connect()
    try:
        assert connection.run("echo ok").stdout == b"ok\n"
        assert emulator.keys is not None
        assert connection.host_key_fingerprint == fingerprint(
            emulator.keys / "ssh_host_ed25519_key.pub"
        )
    finally:
        connection.close()


def test_a_changed_host_key_is_refused_with_its_fingerprint(
    pi: tuple[EmulatedPi, SshEndpoint], tmp_path: Path
) -> None:
    emulator, endpoint = pi
    emulator.replace_host_key()  # a re-imaged Pi, or someone in between
    assert emulator.keys is not None
    before = endpoint.known_hosts.read_bytes()
    connection = SshConnection(endpoint, "keys", tmp_path / "logs")
    with pytest.raises(HostKeyRefused) as refused:
        connection.connect()
    offered = fingerprint(emulator.keys / "ssh_host_ed25519_key.pub")
    assert refused.value.fingerprint == offered
    text = str(refused.value)
    assert offered in text and "CHANGED" in text and "ssh-keygen -R" in text
    assert endpoint.known_hosts.read_bytes() == before  # nothing learned


def test_an_unknown_host_key_is_refused_never_learned(
    pi: tuple[EmulatedPi, SshEndpoint], tmp_path: Path
) -> None:
    emulator, endpoint = pi
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    unknown = SshEndpoint(endpoint.host, endpoint.user, endpoint.identity, empty, endpoint.port)
    with pytest.raises(HostKeyRefused) as refused:
        SshConnection(unknown, "keys", tmp_path / "logs").connect()
    assert emulator.keys is not None
    offered = fingerprint(emulator.keys / "ssh_host_ed25519_key.pub")
    text = str(refused.value)
    assert offered in text and "UNKNOWN" in text and "ssh-keyscan" in text
    assert empty.read_text() == ""


def test_a_real_device_file_with_a_wrong_key_is_an_error_not_a_skip(
    pi: tuple[EmulatedPi, SshEndpoint], tmp_path: Path
) -> None:
    """The real-Pi path (host/user/identity/known_hosts from the device file) refuses too,
    and no secret reaches the message or the logs."""
    emulator, endpoint = pi
    emulator.replace_host_key()
    devices = tmp_path / "devices"
    devices.mkdir()
    spec = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "devices" / "pi5.yaml").read_text()
    )
    spec["name"] = "rackpi"
    spec["connection"].update(
        host=endpoint.host,
        port=endpoint.port,
        user=endpoint.user,
        identity=str(endpoint.identity),
        known_hosts=str(endpoint.known_hosts),
    )
    (devices / "rackpi.yaml").write_text(yaml.safe_dump(spec))
    session = Session(devices=DeviceRegistry.from_dirs([devices]), results_dir=tmp_path / "results")
    with session, pytest.raises(HostKeyRefused) as refused:
        session.target("rackpi")
    assert not isinstance(refused.value, TargetUnavailable)  # the plugin errors, never skips
    secret = endpoint.identity.read_text().splitlines()[1]
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "results").rglob("*.log"))
    assert secret not in str(refused.value) and secret not in logs


def test_an_unset_host_variable_makes_the_real_pi_unavailable_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HIL_PI5_HOST", raising=False)
    repo = Path(__file__).resolve().parents[2]
    session = Session(
        devices=DeviceRegistry.from_dirs([repo / "devices"]), results_dir=tmp_path / "results"
    )
    with session, pytest.raises(TargetUnavailable) as missing:
        session.target("pi5")
    assert "HIL_PI5_HOST" in str(missing.value) and "fix:" in str(missing.value)
