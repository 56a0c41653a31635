"""LabTarget on a real loopback lab (coordinator, one exporter per board, ser2net, runners on
ptys behind power switches labgrid's NetworkPowerDriver works): leasing and releasing, a
runner that stops answering power-cycled before it is called an infrastructure error, a
board that fails provisioning left for the next one, reservation tokens made by a CI job,
places a hard-killed process left behind taken back, SIGTERM releasing places, and an SSH
board (the emulated Pi) reached through its place's NetworkService."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from lab_rack import (
    FIRMWARE_DIR,
    BoardKiller,
    lab_state,
    needs_lab,
    rack_device,
    virtual_rack,
)

from hil import Case, seeded
from hil.devices import DeviceRegistry, TimingPolicy
from hil.errors import InfrastructureError, InfrastructureRecovered, TargetCrash
from hil.lab.client import LabClient
from hil.lab.errors import NoFreeBoard
from hil.lab.target import LabTarget
from hil.lab.virtual_rack import VirtualRack
from hil.resources.emulated_pi import EmulatedPi
from hil.session import Session

pytestmark = needs_lab
REPO = Path(__file__).resolve().parents[2]


def linear(seed: int) -> Case:
    def make() -> torch.nn.Module:
        torch.manual_seed(seed)
        return torch.nn.Linear(8, 4)

    return Case(f"lab_linear{seed}", make, seeded((1, 8)))


def wide() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256)


# About 1.5 s of runs on the board: long enough for something to happen in the middle.
LONG = Case(
    "lab_long",
    wide,
    seeded((16, 256)),
    timing=TimingPolicy(warmup=0, min_runs=3, min_time_s=1.5, max_runs=99999, max_time_s=3.0),
)


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtualRack]:
    with virtual_rack(tmp_path_factory.mktemp("rack"), ["vb1", "vb2"]) as rack:
        yield rack


@pytest.fixture
def lab(
    rack: VirtualRack, tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LabSessions]:
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(FIRMWARE_DIR))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the lease notes
    for name in rack.names:  # every test starts on powered boards with live runners
        rack.switch(name, False)
        rack.switch(name, True)
    sessions = LabSessions(rack, tmp_path, shared_cache)
    yield sessions
    sessions.close()
    places, reservations = lab_state(rack.coordinator)
    assert places == {"vb1": None, "vb2": None}, "a place was left acquired"
    assert reservations == 0, "a reservation was left behind"


class LabSessions:
    def __init__(self, rack: VirtualRack, tmp_path: Path, cache: Path) -> None:
        self.rack = rack
        self.tmp_path = tmp_path
        self.cache = cache
        self.devices = tmp_path / "devices"
        self.sessions: list[Session] = []

    def session(self, retries: int = 0, **labgrid: object) -> tuple[Session, str]:
        """A session, and the name of a device file leasing the rack's boards."""
        name = f"rack{len(self.sessions)}"
        rack_device(self.devices, name, self.rack.coordinator, **labgrid)
        session = Session(
            devices=DeviceRegistry.from_dirs([REPO / "devices", self.devices]),
            cache_dir=self.cache,
            results_dir=self.tmp_path / "results",
            retries=retries,
        )
        self.sessions.append(session)
        return session, name

    def close(self) -> None:
        for session in self.sessions:
            session.close()


def test_a_case_runs_on_a_leased_board_which_is_released_at_the_end(lab: LabSessions) -> None:
    session, name = lab.session()
    result = session.check(linear(0), name, "portable")
    assert result.passed, result.failure_message()
    place = session.board_of(name)
    assert place in ("vb1", "vb2")
    assert result.target_info["place"] == place
    holders, reservations = lab_state(lab.rack.coordinator)
    assert holders[place] is not None and reservations == 1  # hil's own reservation
    # the fixture checks that closing the session released the place and the reservation


def test_two_sessions_get_different_boards_and_a_third_waits_then_gives_up(
    lab: LabSessions,
) -> None:
    places = set()
    for _ in range(2):
        session, name = lab.session()
        places.add(session.target(name).describe()["place"])
    assert places == {"vb1", "vb2"}
    third, name = lab.session(wait_s=1.0)
    with pytest.raises(NoFreeBoard) as caught:
        third.target(name)
    assert "became free within 1 s" in str(caught.value)
    assert "held by" in str(caught.value)


def test_a_silent_runner_is_power_cycled_and_the_case_retried_on_the_same_board(
    lab: LabSessions,
) -> None:
    session, name = lab.session(retries=1, place="vb1", reply_timeout_s=0.5)
    assert session.check(linear(1), name, "portable").passed
    runner = lab.rack.runner_pid("vb1")
    assert runner is not None
    log = lab.rack.boards["vb1"].log_path
    start = log.stat().st_size
    os.kill(runner, signal.SIGSTOP)  # alive, connected, silent: a hung board
    result = session.check(linear(2), name, "portable")  # a new model: its load goes unanswered
    assert result.passed
    attempts = session.last_attempts
    assert attempts is not None
    first, second = attempts.attempts
    assert (first.board, first.verdict, first.error_class) == ("vb1", "INFRA", "LinkTimeout")
    assert first.recovery == "power-cycled vb1"
    assert (second.board, second.verdict) == ("vb1", "PASS")
    assert lab.rack.runner_pid("vb1") not in (None, runner)  # a fresh runner after the cycle
    switched = [
        line.split()[-2:]
        for line in log.read_text()[start:].splitlines()
        if line.startswith("--- ")
    ]
    assert switched == [["power", "off"], ["power", "on"]]  # labgrid's driver worked the switch


def test_a_crash_on_a_lab_board_is_not_retried_and_the_board_comes_back_for_the_next_case(
    lab: LabSessions,
) -> None:
    session, name = lab.session(retries=2, place="vb1")
    assert session.check(linear(7), name, "portable").passed
    log = lab.rack.boards["vb1"].log_path
    start = log.stat().st_size
    crashed = threading.Event()

    def fault_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if b"run: 0 warm-up, 3..99999" in log.read_bytes()[start:]:
                os.kill(lab.rack.runner_pid("vb1"), signal.SIGSEGV)  # type: ignore[arg-type]
                crashed.set()
                return
            time.sleep(0.02)

    threading.Thread(target=fault_when_running, daemon=True).start()
    with pytest.raises(TargetCrash) as caught:
        session.check(LONG, name, "portable")
    assert crashed.is_set() and "faulted" in str(caught.value)
    assert session.last_attempts is not None and len(session.last_attempts.attempts) == 1
    assert session.check(linear(8), name, "portable").passed  # re-leased, runner restarted
    assert "power off" in log.read_text()[start:]  # the crashed board was power-cycled


def test_without_power_a_silent_board_is_an_infrastructure_error_and_the_target_moves_on(
    lab: LabSessions,
) -> None:
    session, name = lab.session(place="vb1", power=False, reply_timeout_s=0.5)
    assert session.check(linear(3), name, "portable").passed
    os.kill(lab.rack.runner_pid("vb1"), signal.SIGSTOP)  # type: ignore[arg-type]
    with pytest.raises(InfrastructureError) as caught:
        session.check(linear(4), name, "portable")
    assert "vb1 is out of service and no other board of name=vb1" in str(caught.value)
    assert session.broken_cause(name) is caught.value  # the rest skip with this first cause


def test_a_board_failing_provisioning_is_held_and_the_next_board_is_waited_for(
    lab: LabSessions,
) -> None:
    holder = LabClient(lab.rack.coordinator).connect()
    try:
        holder.acquire("vb2")  # another job holds vb2; vb1 is free but its runner is dead
        lab.rack.switch("vb1", False)
        session, name = lab.session(power=False, reply_timeout_s=0.5)

        def release_when_waited_for() -> None:  # the session's second reservation waits
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if any(r.state == "waiting" for r in holder.reservations()):
                    holder.release("vb2")
                    return
                time.sleep(0.1)

        releaser = threading.Thread(target=release_when_waited_for, daemon=True)
        releaser.start()
        target = session.target(name)
        releaser.join()
        assert isinstance(target, LabTarget)
        assert target.place == "vb2"
        assert type(target.failed_boards["vb1"]).__name__ == "LinkTimeout"
        assert session.check(linear(5), name, "portable").passed
        holders, _ = lab_state(lab.rack.coordinator)
        assert holders["vb1"] is not None  # the broken board stays held: not handed back
    finally:
        holder.close()


def test_a_reservation_token_from_the_ci_job_is_used_and_left_to_the_job(
    lab: LabSessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    ci = LabClient(lab.rack.coordinator).connect()
    try:
        token = ci.reserve({"board": "vboard"})  # labgrid-client reserve --wait board=vboard
        while ci.poll(token).state != "allocated":
            time.sleep(0.1)
        reserved = ci.poll(token).places[0]
        monkeypatch.setenv("LG_TOKEN", token)
        session, name = lab.session(token="$LG_TOKEN")
        assert session.check(linear(0), name, "portable").passed
        assert session.board_of(name) == reserved
        session.close()
        assert ci.poll(token).state == "allocated"  # released, and still the job's
    finally:
        ci.cancel(token)
        ci.close()


HOLD = """
import sys, time
from hil.lab.client import LabClient
from hil.settings import LabSettings
from hil.lab.target import LabLeases
client = LabClient(sys.argv[1]).connect()
leases = LabLeases(client, LabSettings(coordinator=sys.argv[1], filters={"name": "vb1"}), "holder")
leases.lease(time.monotonic() + 30)
print("held", flush=True)
time.sleep(600)
"""


def test_a_place_left_by_a_hard_killed_process_is_taken_back(lab: LabSessions) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, lab.rack.coordinator],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()  # SIGKILL: no release, no atexit
    holder.wait()
    holders, _ = lab_state(lab.rack.coordinator)
    assert holders["vb1"] is not None  # labgrid keeps it acquired: nobody released it
    session, name = lab.session(place="vb1", wait_s=20)
    assert session.check(linear(0), name, "portable").passed
    assert session.board_of(name) == "vb1"


SUITE = """
import pytest, torch
import hil
from hil.devices import TimingPolicy

def wide():
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256)

CASES = [hil.Case("long", wide, hil.seeded((16, 256)), timing=TimingPolicy(
    warmup=0, min_runs=3, min_time_s=60.0, max_runs=10**6, max_time_s=90.0))]

@pytest.mark.hil_cases(CASES)
def test_case(hil_check):
    hil_check()
"""


def test_sigterm_ends_the_run_and_releases_the_place(lab: LabSessions, tmp_path: Path) -> None:
    project = tmp_path / "project"
    rack_device(project / "devices", "rack", lab.rack.coordinator, place="vb1")
    (project / "test_suite.py").write_text(SUITE)
    log = lab.rack.boards["vb1"].log_path
    start = log.stat().st_size
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_suite.py",
            "--target=rack",
            "-p",
            "no:labgrid",
            "-p",
            "no:cacheprovider",
            f"--hil-cache-dir={lab.cache}",
            "-o",
            "addopts=",
        ],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "HIL_FIRMWARE_DIR": str(FIRMWARE_DIR)},
    )
    deadline = time.monotonic() + 120
    while b"run: 0 warm-up" not in log.read_bytes()[start:]:
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()[0][-3000:]
        time.sleep(0.1)
    assert lab_state(lab.rack.coordinator)[0]["vb1"] is not None
    run.send_signal(signal.SIGTERM)
    output = run.communicate(timeout=60)[0]
    assert run.returncode != 0
    assert "SIGTERM" in output, output[-3000:]
    # the fixture checks that vb1 is free again and no reservation is left


def test_without_retries_a_killed_boards_case_is_infra_and_the_next_runs_on_the_other(
    tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rack of its own: one of its boards dies for good."""
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(FIRMWARE_DIR))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with virtual_rack(tmp_path / "rack", ["vb1", "vb2"]) as rack:
        rack_device(tmp_path / "devices", "rack", rack.coordinator)
        registry = DeviceRegistry.from_dirs([REPO / "devices", tmp_path / "devices"])
        with Session(
            devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "results"
        ) as session:
            first = session.target("rack").describe()["place"]
            with (
                BoardKiller(rack, b"run: 0 warm-up, 3..99999 runs") as killer,
                pytest.raises(InfrastructureRecovered) as caught,
            ):
                session.check(LONG, "rack", "portable")
            assert killer.killed == first
            other = ({"vb1", "vb2"} - {first}).pop()
            assert caught.value.recovery == f"{first} out of service; moved to {other}"
            assert session.broken_cause("rack") is None  # still in service, on the other board
            assert session.check(linear(6), "rack", "portable").passed
            assert session.board_of("rack") == other
        places, reservations = lab_state(rack.coordinator)
    assert places == {"vb1": None, "vb2": None} and reservations == 0


@pytest.mark.skipif(
    not (os.path.exists("/usr/sbin/sshd") and shutil.which("qemu-aarch64") and os.geteuid() == 0),
    reason="needs root, openssh-server and qemu-user (make test installs them)",
)
def test_an_ssh_board_is_reached_through_the_places_network_service(
    tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The emulated Pi's sshd exported as a NetworkService of place pi1: the ssh device file
    names the place, and SshTarget gets host, port and user from it."""
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(FIRMWARE_DIR))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pi = EmulatedPi("lab-pi", root=tmp_path / "pi")
    with virtual_rack(tmp_path / "rack", []) as rack:
        endpoint = pi.start()
        try:
            rack.export_place(
                "pi1",
                {
                    "NetworkService": {
                        "address": endpoint.host,
                        "port": endpoint.port,
                        "username": endpoint.user,
                    }
                },
                {"board": "pi5"},
            )
            spec = yaml.safe_load((REPO / "devices" / "pi5-emu.yaml").read_text())
            spec["connection"].pop("virtual")
            spec["connection"].update(
                labgrid={"coordinator": rack.coordinator, "tags": {"board": "pi5"}},
                identity=str(endpoint.identity),
                known_hosts=str(endpoint.known_hosts),
                remote_dir=pi.remote_dir,
            )
            spec["name"] = "pi-lab"
            (tmp_path / "devices").mkdir()
            (tmp_path / "devices" / "pi-lab.yaml").write_text(yaml.safe_dump(spec))
            registry = DeviceRegistry.from_dirs([REPO / "devices", tmp_path / "devices"])
            with Session(
                devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "results"
            ) as session:
                result = session.check(linear(0), "pi-lab", "portable")
                assert result.passed, result.failure_message()
                assert result.target_info["place"] == "pi1"
                assert result.target_info["address"] == f"{endpoint.user}@127.0.0.1:{endpoint.port}"
            places, reservations = lab_state(rack.coordinator)
        finally:
            pi.stop()
    assert places == {"pi1": None} and reservations == 0


def test_a_leased_board_profiles_and_names_its_wrong_kernel_as_the_direct_one_does(
    tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leased = direct: a rack board whose runner has a kernel wrong on purpose (the build of
    tests/integration/test_device_etdump.py) gives, through the lab, the per-operator profile
    from its own ETDump and names the wrong kernel from the device's runtime."""
    from test_device_etdump import CASE, PLANTED

    from hil.sdk import firmware

    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(FIRMWARE_DIR))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = firmware.FirmwareConfig("host", {"HIL_PLANTED_FAULT": PLANTED})
    runner = firmware.build(config, root=FIRMWARE_DIR).binary
    (tmp_path / "rack").mkdir()
    with VirtualRack(tmp_path / "rack", runner, ["vp1"], {"board": "vboard"}).start() as rack:
        path = rack_device(tmp_path / "devices", "rack", rack.coordinator)
        spec = yaml.safe_load(path.read_text())
        spec["connection"]["firmware"] = {"preset": "host", "defines": dict(config.defines)}
        path.write_text(yaml.safe_dump(spec))
        registry = DeviceRegistry.from_dirs([REPO / "devices", tmp_path / "devices"])
        with Session(
            devices=registry, cache_dir=shared_cache, results_dir=tmp_path / "results"
        ) as session:
            result = session.check(CASE, "rack", "portable")
            assert isinstance(session.target("rack"), LabTarget)
    assert result.verdict == "MISMATCH"
    assert result.profile is not None, result.profiled  # each operator timed by the device
    divergence = result.divergence
    assert divergence is not None and divergence.first is not None, result.explained
    assert divergence.first.operator == PLANTED
    assert "from the device's runtime" in divergence.message()
