"""LOAD_FILE (protocol 1.1) on the real runner, built for this machine (no QEMU needed): a model
already on the runner's disk is loaded without moving over the link; a missing, short or
altered file is refused with the runner's words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from hil import Case, seeded
from hil.errors import DeployError
from hil.recipes import make_recipe
from hil.resources.virtual_boards import HostRunnerBoard
from hil.runner.client import LinkPolicy, RunnerClient
from hil.runner.file_load import StaleModelFile, load_file
from hil.sdk import firmware
from hil.session import Session
from hil.transports.serial_link import SerialLink


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunnerClient]:
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    runner = firmware.build(firmware.FirmwareConfig("host"))
    board = HostRunnerBoard("loadfile", runner.binary)
    link = SerialLink(board.start()).open()
    try:
        peer = RunnerClient(link, name="loadfile", policy=LinkPolicy(reply_timeout_s=5.0))
        peer.hello()
        yield peer
    finally:
        link.close()
        board.stop()


@pytest.fixture
def pte(session: Session) -> Path:
    case = Case("loadfile_tiny", tiny, seeded((1, 8)))
    return session.artifact(session.built(case), make_recipe("portable")).pte_path


def sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_runner_says_it_can_load_files(client: RunnerClient) -> None:
    assert client.info is not None
    assert client.info.file_load and client.info.protocol >= (1, 1)


def test_a_file_on_the_runners_disk_loads_and_then_is_held(client: RunnerClient, pte: Path) -> None:
    size, digest = pte.stat().st_size, sha256(pte)
    first = load_file(client, str(pte), digest, size)
    assert first.bytes_sent == 0
    assert [s.dims for s in first.method.inputs] == [(1, 8)]
    sent_before = client.stats.bytes_sent
    again = load_file(client, "/nonexistent/path/not/read", digest, size)  # held: not read
    assert again.method == first.method
    assert client.stats.bytes_sent - sent_before < 200  # one small request frame


def test_a_missing_file_is_refused_with_the_systems_words(
    client: RunnerClient, tmp_path: Path
) -> None:
    with pytest.raises(StaleModelFile) as refused:  # the host then copies it
        load_file(client, str(tmp_path / "absent.pte"), "00" * 32, 10)
    assert "No such file or directory" in str(refused.value)
    assert isinstance(refused.value, DeployError)


def test_a_short_or_altered_copy_is_stale(client: RunnerClient, pte: Path, tmp_path: Path) -> None:
    data = pte.read_bytes()
    short = tmp_path / "short.pte"
    short.write_bytes(data[:-1])
    with pytest.raises(StaleModelFile):
        load_file(client, str(short), sha256(pte), len(data))
    altered = tmp_path / "altered.pte"
    altered.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    with pytest.raises(StaleModelFile) as stale:
        load_file(client, str(altered), sha256(pte), len(data))
    assert "sha256" in str(stale.value)
