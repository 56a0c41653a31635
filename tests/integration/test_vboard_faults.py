"""Bad input and faults on the virtual board: a killed, hung or faulting runner, a damaged
line, a model too large for the pool, a protocol version mismatch. Each uses the real runner
on a real pty; the only thing simulated is the fault itself."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from board_signals import signal_when_logged
from debug_builds import DEBUG_COMMANDS, with_debug_commands
from pty_relay import CorruptingRelay, Damage, ReplugPort
from torch import nn

from hil import Case, seeded
from hil.devices import DeviceRegistry, TimingPolicy
from hil.errors import (
    DeployError,
    HilError,
    InfrastructureError,
    LinkTimeout,
    ProtocolError,
    TargetCrash,
    TargetUnavailable,
)
from hil.recipes import make_recipe
from hil.resources.virtual_boards import HostRunnerBoard
from hil.runner import messages as m
from hil.runner.client import LinkPolicy, RunnerClient
from hil.sdk import firmware
from hil.session import Session
from hil.targets.serial import SerialTarget
from hil.transports.serial_link import SerialLink

REPO = Path(__file__).resolve().parents[2]


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def wide() -> nn.Module:
    """Seeded like tiny(): its weights must not depend on what ran before in the process."""
    torch.manual_seed(0)
    return nn.Linear(300, 300)


TINY = Case("tiny_mlp", tiny, seeded((2, 16)))
# Runs on the runner for 30 s unless stopped: long enough to be killed in the middle.
LONG = Case(
    "tiny_mlp_long",
    tiny,
    seeded((2, 16)),
    timing=TimingPolicy(warmup=0, min_runs=10**6, min_time_s=30.0, max_runs=10**7, max_time_s=60.0),
)


class Lab:
    """Sessions over the repo's devices plus device files a test writes for itself."""

    def __init__(self, tmp_path: Path, cache: Path) -> None:
        self.tmp_path = tmp_path
        self.cache = cache
        self.folder = tmp_path / "devices"
        self.folder.mkdir()
        self.sessions: list[Session] = []

    def device(
        self, name: str, connection: dict[str, object], *, debug_commands: bool = False
    ) -> None:
        """A device file of the test's own; `debug_commands`: its runner is a test build."""
        spec: dict[str, object] = {
            "name": name,
            "kind": "serial",
            "recipes": ["portable", "xnnpack-int8"],
            "latency": {"warmup": 1, "min_runs": 3, "min_time_s": 0.01, "max_runs": 50},
            "connection": connection,
        }
        if debug_commands:
            spec = with_debug_commands(spec)
        (self.folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))

    def session(self, *, profile: bool = True) -> Session:
        registry = DeviceRegistry.from_dirs([REPO / "devices", self.folder])
        session = Session(
            devices=registry,
            cache_dir=self.cache,
            results_dir=self.tmp_path / "results",
            profile=profile,
        )
        self.sessions.append(session)
        return session


@pytest.fixture
def lab(tmp_path: Path, shared_cache: Path) -> Iterator[Lab]:
    lab = Lab(tmp_path, shared_cache)
    yield lab
    for session in lab.sessions:
        session.close()


def test_runner_killed_mid_run_is_a_crash_with_its_log_and_the_next_case_restarts_it(
    lab: Lab,
) -> None:
    session = lab.session()
    session.check(TINY, "vboard", "portable")  # provisioned, model exported
    target = session.target("vboard")
    assert isinstance(target, SerialTarget)
    board = target.board
    assert isinstance(board, HostRunnerBoard)
    victim = board.pid
    # SIGKILL as soon as a run with no warm-up has started.
    killer = signal_when_logged(board, b"run: 0 warm-up", signal.SIGKILL)
    with pytest.raises(TargetCrash) as caught:
        session.check(LONG, "vboard", "portable")
    killer.join()
    crash = caught.value
    assert "killed by SIGKILL" in str(crash) and "while running the model" in str(crash)
    assert "run: 0 warm-up" in crash.log_tail  # the runner's last words, from its stderr
    again = session.check(TINY, "vboard", "portable")
    assert again.passed
    assert session.target("vboard").board.pid != victim  # type: ignore[attr-defined]


def test_runner_that_faults_is_a_crash_naming_the_signal(lab: Lab) -> None:
    lab.device(
        "vfault",
        {"virtual": "host-runner", "runner_args": ["--inject", "fault@1"]},
        debug_commands=True,
    )
    session = lab.session()
    with pytest.raises(TargetCrash) as caught:
        session.check(TINY, "vfault", "portable")
    text = str(caught.value)
    assert "signal=11" in text and "SIGSEGV" in text
    assert "fatal signal, fault report sent" in caught.value.log_tail


def test_runner_hang_times_out_and_takes_the_target_out_of_service(lab: Lab) -> None:
    lab.device(
        "vhang",
        {
            "virtual": "host-runner",
            "runner_args": ["--inject", "hang@1"],
            "reply_timeout_s": 1.0,
            "run_timeout_s": 1.5,
        },
        debug_commands=True,
    )
    session = lab.session()
    with pytest.raises(LinkTimeout, match="silent during RUN") as caught:
        session.check(TINY, "vhang", "portable")
    assert "board log:" in str(caught.value)
    assert session.broken_cause("vhang") is caught.value
    with pytest.raises(LinkTimeout) as again:
        session.check(TINY, "vhang", "xnnpack-int8")
    assert again.value is caught.value  # the first cause, at once


def _runners_with(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            found.append(int(proc.name))
    return found


def test_a_failed_provision_stops_the_runner_it_started(lab: Lab) -> None:
    """The runner starts and answers, but with the echo engine: the provision fails, and the
    runner process it started is gone before the error reaches the test."""
    marker = f"model={os.getpid() % 1000 + 100}K"  # a pool size only this test's runner has
    lab.device(
        "vecho", {"virtual": "host-runner", "runner_args": ["--engine", "echo", "--pool", marker]}
    )
    session = lab.session()
    with pytest.raises(TargetUnavailable, match="echo engine, which links no ExecuTorch"):
        session.check(TINY, "vecho", "portable")
    assert _runners_with(marker) == []


def test_model_larger_than_the_pool_is_refused_naming_both_sizes(lab: Lab) -> None:
    lab.device("vsmall", {"virtual": "host-runner", "runner_args": ["--pool", "model=2K"]})
    session = lab.session()
    with pytest.raises(DeployError) as caught:
        session.check(TINY, "vsmall", "portable")
    size = session.artifact(session.built(TINY), make_recipe("portable")).size
    assert f"the .pte is {size} bytes, larger than the runner's 2048-byte model pool" in str(
        caught.value
    )
    # The runner refuses it too, for a host that does not check first.
    target = session.target("vsmall")
    assert isinstance(target, SerialTarget)
    client = target.client
    with pytest.raises(DeployError, match=f"is {size} bytes, larger than the runner's 2048-byte"):
        client.request(m.LOAD_BEGIN, bytes(32), size.to_bytes(8, "little"))


@pytest.fixture
def runner_board() -> Iterator[HostRunnerBoard]:
    """A test build of the host runner: it obeys DEBUG (hang on request)."""
    runner = firmware.build(firmware.FirmwareConfig("host", DEBUG_COMMANDS))
    board = HostRunnerBoard("faults-runner", runner.binary)
    yield board
    board.stop()


def test_version_mismatch_is_refused_with_both_versions(runner_board: HostRunnerBoard) -> None:
    link = SerialLink(runner_board.start()).open()
    try:
        client = RunnerClient(link, name="future-host", protocol=(2, 0))
        with pytest.raises(ProtocolError, match=r"runner speaks 1\.\d+, this hil speaks 2\.0"):
            client.hello()
    finally:
        link.close()


def test_debug_hang_request_is_a_timeout_not_a_wrong_answer(runner_board: HostRunnerBoard) -> None:
    link = SerialLink(runner_board.start()).open()
    try:
        client = RunnerClient(link, name="hang", policy=LinkPolicy(reply_timeout_s=0.5, retries=1))
        client.hello()
        client.debug(m.DEBUG_HANG, during_next_run=False)
        with pytest.raises(LinkTimeout, match="no reply"):
            client.echo(b"are you there")
        assert runner_board.alive()
    finally:
        link.close()


def test_a_release_runner_refuses_debug_requests_and_fault_injection(
    lab: Lab, tmp_path: Path
) -> None:
    """The default build (what `hil firmware build` makes for every preset) will not hang or
    fault on request: DEBUG is answered "unsupported", `--inject` stops the runner at its start,
    and the handshake says so, in every record."""
    runner = firmware.build(firmware.FirmwareConfig("host")).binary
    board = HostRunnerBoard("release-runner", runner)
    link = SerialLink(board.start()).open()
    try:
        client = RunnerClient(link, name="release")
        assert not client.hello().debug_commands
        with pytest.raises(HilError, match="built without debug commands"):
            client.debug(m.DEBUG_HANG, during_next_run=True)
        assert client.echo(b"still here") == b"still here"
    finally:
        link.close()
        board.stop()
    refused = subprocess.run(
        [str(runner), "--stdio", "--inject", "hang@1"], capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 2
    assert "--inject needs a test build (HIL_DEBUG_COMMANDS=ON)" in refused.stderr
    lab.device("vrelease", {"virtual": "host-runner"})
    lab.device("vtest", {"virtual": "host-runner"}, debug_commands=True)
    session = lab.session()
    release, test_build = (session.check(TINY, name, "portable") for name in ("vrelease", "vtest"))
    assert release.passed and test_build.passed
    assert release.target_info["debug_commands"] == "refused" and not release.altered
    assert test_build.target_info["debug_commands"] == "accepted"
    assert any("HIL_DEBUG_COMMANDS=ON" in why for why in test_build.altered)


@pytest.fixture
def replug(tmp_path: Path) -> Iterator[ReplugPort]:
    """A release runner behind a port that can be unplugged and plugged in again."""
    board = HostRunnerBoard("replug-runner", firmware.build(firmware.FirmwareConfig("host")).binary)
    port = ReplugPort(board.start(), str(tmp_path / "ttyUSB-hil"))
    yield port
    port.close()
    board.stop()


def plug_in_after(port: ReplugPort, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, port.plug)
    timer.start()
    return timer


def test_a_port_that_goes_away_and_comes_back_is_reconnected(lab: Lab, replug: ReplugPort) -> None:
    """A USB serial adapter re-enumerating between steps (its node gone for a second, then a
    new one at the same path): the step is done again on the port that came back, every time,
    and the record counts the reconnects; a port that stays away takes the target out of
    service naming the port."""
    lab.device("replug", {"port": replug.path, "reply_timeout_s": 1.0, "port_return_s": 5})
    session = lab.session()
    assert session.check(TINY, "replug", "portable").passed
    for n, recipe in enumerate(("portable", "xnnpack-int8"), start=1):  # a run, then a deploy
        replug.unplug()
        plug_in_after(replug, 1.0)
        result = session.check(TINY, "replug", recipe)
        assert result.passed, result.failure_message()
        assert result.target_info["reconnects"] == str(n)
    replug.unplug()
    with pytest.raises(InfrastructureError, match="did not come back within 5 s") as caught:
        session.check(TINY, "replug", "portable")
    assert f"lost the port {replug.path} while" in caught.value.message
    assert session.broken_cause("replug") is caught.value


def test_a_port_that_goes_away_during_the_handshake_is_reconnected(
    lab: Lab, replug: ReplugPort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unplugged right as the target's first handshake starts: it waits for the port and
    shakes hands on the new one."""
    real = SerialTarget._connect_runner
    unplugged: list[threading.Timer] = []

    def unplug_first(self: SerialTarget, *args: object) -> object:
        if not unplugged:
            replug.unplug()
            unplugged.append(plug_in_after(replug, 1.0))
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SerialTarget, "_connect_runner", unplug_first)
    lab.device("replug-hello", {"port": replug.path, "reply_timeout_s": 1.0})
    result = lab.session().check(TINY, "replug-hello", "portable")
    assert unplugged and result.passed, result.failure_message()
    assert result.target_info["reconnects"] == "1"


def test_line_noise_is_caught_retried_and_outputs_still_match_host(
    lab: Lab, runner_board: HostRunnerBoard
) -> None:
    relay = CorruptingRelay(
        runner_board.start(), Damage(flip_every=97, drop_every=151, garbage_every=131), seed=7
    )
    try:
        lab.device(
            "noisy", {"port": relay.path, "reply_timeout_s": 1.0, "bytes_per_s": 5e6, "retries": 8}
        )
        # the judged runs' link is what is counted: a profile's trace lost to the noise (CI
        # saw one) takes the target down, and its fresh client's stats would start from zero
        session = lab.session(profile=False)
        big = Case("scale_noisy", wide, seeded((64, 300)))
        for case in (TINY, big):
            for recipe in ("portable", "xnnpack-int8"):
                noisy = session.check(case, "noisy", recipe)
                clean = session.check(case, "host", recipe)
                assert noisy.passed, noisy.failure_message()
                with np.load(noisy.arrays_path) as a, np.load(clean.arrays_path) as b:
                    assert np.array_equal(a["output0"], b["output0"])
        target = session.target("noisy")
        assert isinstance(target, SerialTarget)
        stats = target.client.stats
        assert relay.stats.damaged >= 3
        assert stats.naks + stats.corrupt_replies + stats.timeouts > 0
        assert stats.retransmits > 0
    finally:
        relay.close()


def test_a_line_that_damages_everything_fails_the_target_never_the_numbers(
    lab: Lab, runner_board: HostRunnerBoard
) -> None:
    relay = CorruptingRelay(runner_board.start(), Damage(flip_every=1, directions=("to_host",)))
    try:
        lab.device("deaf", {"port": relay.path, "reply_timeout_s": 0.5, "retries": 2})
        session = lab.session()
        started = time.monotonic()
        with pytest.raises(InfrastructureError):
            session.check(TINY, "deaf", "portable")
        assert time.monotonic() - started < 60  # bounded retries, not an endless loop
        assert isinstance(session.broken_cause("deaf"), InfrastructureError)
    finally:
        relay.close()


def test_model_chunks_damaged_in_transit_never_reach_the_model() -> None:
    """A 3 MiB model through a line that flips and drops bytes: damaged chunks are sent again,
    and only checked ones reach the model and its hash (the runner's sha256 check at LOAD_END
    refuses anything else), so the model the runner then runs is byte for byte the one sent."""
    runner = firmware.build(firmware.FirmwareConfig("host")).binary
    board = HostRunnerBoard("damaged-transfer", runner, ["--engine", "echo"])
    relay = CorruptingRelay(
        board.start(), Damage(flip_every=41, drop_every=67, directions=("to_runner",)), seed=3
    )
    link = SerialLink(relay.path).open()
    try:
        client = RunnerClient(
            link,
            name="damaged-transfer",
            policy=LinkPolicy(reply_timeout_s=1.0, bytes_per_s=5e6, retries=10),
        )
        client.hello()
        model = os.urandom(3 << 20)
        outcome = client.load(model)  # the runner checks the sha256 of what it took
        assert outcome.bytes_sent > len(model)
        assert client.stats.naks + client.stats.timeouts > 0 and relay.stats.damaged > 0
        spec, data = m.from_numpy(np.frombuffer(model[:4096], dtype=np.float32).copy())
        client.set_input(0, spec, data)
        client.run(0, 1, 1, 0.0, 1.0)
        assert client.get_output(0).tobytes() == model[:4096]
    finally:
        link.close()
        relay.close()
        board.stop()
