"""The emulated Pi 5, for real: OpenSSH sshd on loopback, the aarch64 runner under
qemu-aarch64 -cpu cortex-a76, the SshTarget speaking the runner protocol over the SSH channel.
Faults are real too: sshd processes killed under a running step, the remote runner killed,
the host key swapped, a full or read-only disk (tmpfs mounts)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
import yaml
from debug_builds import with_debug_commands
from torch import nn

from hil import Case, cli, seeded
from hil.devices import DeviceRegistry
from hil.errors import DeployError, InfrastructureError, TargetCrash, TargetUnavailable
from hil.resources.ssh_remote import RemoteTree
from hil.session import Session
from hil.targets.runner_target import RunnerTarget
from hil.targets.ssh import RemoteRunner, SshTarget

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (
        os.path.exists("/usr/sbin/sshd")
        and shutil.which("qemu-aarch64")
        and shutil.which("aarch64-linux-gnu-g++")
        and os.geteuid() == 0
    ),
    reason="needs root, openssh-server, qemu-user and g++-aarch64-linux-gnu (make test installs "
    "them)",
)


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


TINY = Case("pi_tiny_mlp", tiny, seeded((2, 16)))


class PiLab:
    """Device files derived from devices/pi5-emu.yaml, sessions over them, private state."""

    def __init__(self, tmp_path: Path, cache: Path) -> None:
        self.tmp_path = tmp_path
        self.cache = cache
        self.folder = tmp_path / "devices"
        self.folder.mkdir()
        self.sessions: list[Session] = []

    def device(self, name: str, *, debug_commands: bool = False, **connection: object) -> str:
        """`debug_commands`: the runner is a test build (it obeys `--inject`)."""
        spec = yaml.safe_load((REPO / "devices" / "pi5-emu.yaml").read_text())
        if debug_commands:
            spec = with_debug_commands(spec)
        spec["name"] = name
        spec["connection"].update(connection)
        (self.folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
        return name

    def session(self) -> Session:
        session = Session(
            devices=DeviceRegistry.from_dirs([self.folder]),
            cache_dir=self.cache,
            results_dir=self.tmp_path / "results",
        )
        self.sessions.append(session)
        return session

    def close(self) -> None:
        for session in self.sessions:
            session.close()


@pytest.fixture
def lab(tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PiLab]:
    monkeypatch.setenv("HIL_EMU_DIR", str(tmp_path / "emu"))
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    lab = PiLab(tmp_path, shared_cache)
    yield lab
    lab.close()


def ssh_target(session: Session, name: str) -> SshTarget:
    target = session.target(name)
    assert isinstance(target, SshTarget)
    return target


def on_nth_run(log: Path, n: int, action: Callable[[], None]) -> threading.Thread:
    """Call `action` once the runner's stderr (in the local log) shows its n-th RUN from now."""
    start = log.stat().st_size

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with log.open("rb") as f:
                f.seek(start)
                if f.read().count(b"info: run:") >= n:
                    time.sleep(0.5)  # inside the RUN: the runner hangs there (--inject hang@2)
                    action()
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_firmware_build_for_the_pi_makes_the_runner_bundle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        cli.main(["--devices", str(REPO / "devices"), "firmware", "build", "--target", "pi5"]) == 0
    )
    folder = Path(capsys.readouterr().out.strip())
    names = {p.name for p in folder.iterdir()}
    assert {
        "hil-runner",
        "libexecutorch.so",
        "libexecutorch_backend_xnnpack.so",
        "libexecutorch_kernels_optimized.so",
        "libexecutorch_kernels_quantized.so",
        "libexecutorch_threadpool.so",
        "MANIFEST",
    } <= names
    assert "libexecutorch_backend_openvino.so" not in names  # only what the runner needs
    header = (folder / "hil-runner").read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183  # aarch64


def test_outputs_match_and_nothing_is_copied_twice(lab: PiLab) -> None:
    name = lab.device("pi-basic", cpus="1")
    session = lab.session()
    first = session.check(TINY, name, "xnnpack-fp32")
    target = ssh_target(session, name)
    pid = target.remote_runner_pid()
    assert pid is not None
    status = Path(f"/proc/{pid}/status").read_text()  # the emulated Pi is this machine
    assert "Cpus_allowed_list:\t1\n" in status  # pinned by taskset, as the device file says
    assert first.verdict == "PASS" and first.deploy_bytes > 0
    assert first.latency is not None and first.latency.timing == "emulated"
    assert target.runner_bytes_sent > 1_000_000  # runner + libraries, first time on this "Pi"
    again = session.check(TINY, name, "xnnpack-fp32")
    assert again.verdict == "PASS" and again.deploy_bytes == 0
    assert target.remote_runner_pid() == pid  # one runner for the session, not one per input
    facts = target.describe()
    assert facts["timing"] == "emulated" and facts["pinned_cpus"] == "1"
    assert "cortex-a76" in facts["emulator"] and facts["platform"] == "posix-aarch64"
    assert facts["remote_cpu"] and facts["host_key"].startswith("SHA256:")
    session.close()

    # A new session: a new sshd (new keys), a new runner; the "Pi's" disk still has it all.
    later = lab.session()
    third = later.check(TINY, name, "xnnpack-fp32")
    assert third.verdict == "PASS" and third.deploy_bytes == 0
    assert ssh_target(later, name).runner_bytes_sent == 0


def test_a_connection_dropped_mid_run_is_reconnected_once(lab: PiLab) -> None:
    name = lab.device("pi-drop", runner_args=["--inject", "hang@2"], debug_commands=True)
    session = lab.session()
    assert session.check(TINY, name, "xnnpack-fp32").verdict == "PASS"  # RUN 1
    target = ssh_target(session, name)
    hung = target.remote_runner_pid()
    assert hung is not None and target.emulator is not None
    log = Path(os.environ["HIL_RESULTS_DIR"]) / "boards" / f"{name}.log"
    watcher = on_nth_run(log, 1, target.emulator.drop_connections)
    result = session.check(TINY, name, "xnnpack-fp32")  # RUN 2 hangs; the connection drops
    watcher.join()
    assert result.verdict == "PASS"  # on the new connection's new runner
    assert target.reconnects == 1
    assert target.remote_runner_pid() != hung
    assert not alive(hung)  # the hung runner of the lost connection was stopped


@pytest.mark.parametrize(
    ("phase", "owner", "method", "reconnects"),
    [
        # each copy command is an `ssh` of its own: with the master gone, OpenSSH connects
        # afresh by itself, and nothing of hil's has to
        ("copying the runner", RemoteTree, "sync_runner", 0),
        # the runner's link is the dropped connection itself: hil connects again once
        ("the handshake", RunnerTarget, "_connect_runner", 1),
    ],
    ids=["copy", "handshake"],
)
def test_a_connection_dropped_while_provisioning_is_survived(
    lab: PiLab,
    monkeypatch: pytest.MonkeyPatch,
    phase: str,
    owner: type,
    method: str,
    reconnects: int,
) -> None:
    """The link drops while the target is provisioned (every sshd child killed, as a pulled
    cable, right before that phase the first time): the run goes on, and the record counts
    the reconnects hil made."""
    name = lab.device(f"pi-blip-{method.strip('_')}")
    real = getattr(owner, method)
    dropped: list[str] = []

    def drop_first(self: object, *args: object) -> object:
        if not dropped:
            dropped.append(phase)
            pi = next(t for t in targets if t.emulator is not None).emulator
            assert pi is not None
            pi.drop_connections()
            # the runner's own session may still have been opening when the sshd children were
            # listed (CI once saw it survive): drop again until the runner's link is gone
            runner = next((a for a in args if isinstance(a, RemoteRunner)), None)
            deadline = time.monotonic() + 10
            while runner is not None and runner.process.poll() is None:
                assert time.monotonic() < deadline, "the runner's SSH session outlived every drop"
                time.sleep(0.05)
                pi.drop_connections()
        return real(self, *args)

    targets: list[SshTarget] = []
    real_init = SshTarget.__init__

    def noted(self: SshTarget, *args: object) -> None:
        real_init(self, *args)  # type: ignore[arg-type]
        targets.append(self)

    monkeypatch.setattr(SshTarget, "__init__", noted)
    monkeypatch.setattr(owner, method, drop_first)
    session = lab.session()
    result = session.check(TINY, name, "xnnpack-fp32")
    assert dropped == [phase]
    assert result.verdict == "PASS", result.failure_message()
    assert ssh_target(session, name).reconnects == reconnects
    assert result.target_info["reconnects"] == str(reconnects)
    assert session.check(TINY, name, "xnnpack-fp32").verdict == "PASS"  # the run goes on


def test_a_device_that_stays_away_is_out_of_service_naming_the_host(lab: PiLab) -> None:
    name = lab.device("pi-gone", runner_args=["--inject", "hang@2"], debug_commands=True)
    session = lab.session()
    assert session.check(TINY, name, "xnnpack-fp32").verdict == "PASS"
    target = ssh_target(session, name)
    hung = target.remote_runner_pid()
    emulator = target.emulator
    assert emulator is not None and hung is not None
    log = Path(os.environ["HIL_RESULTS_DIR"]) / "boards" / f"{name}.log"
    watcher = on_nth_run(log, 1, emulator.go_away)
    try:
        with pytest.raises(InfrastructureError) as lost:
            session.check(TINY, name, "xnnpack-fp32")
        watcher.join()
        text = str(lost.value)
        assert "127.0.0.1" in text and "lost the SSH connection" in text and "fix:" in text
        assert not isinstance(lost.value, TargetUnavailable)  # a lab failure, not a skip
        with pytest.raises(InfrastructureError):  # and stays so, at once
            session.check(TINY, name, "xnnpack-fp32")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hung, signal.SIGKILL)  # no connection is left to stop it with


def test_a_killed_runner_is_a_crash_with_its_stderr(lab: PiLab) -> None:
    name = lab.device("pi-kill", runner_args=["--inject", "hang@2"], debug_commands=True)
    session = lab.session()
    assert session.check(TINY, name, "xnnpack-fp32").verdict == "PASS"
    target = ssh_target(session, name)
    pid = target.remote_runner_pid()
    assert pid is not None
    log = Path(os.environ["HIL_RESULTS_DIR"]) / "boards" / f"{name}.log"
    watcher = on_nth_run(log, 1, lambda: os.kill(pid, signal.SIGKILL))
    with pytest.raises(TargetCrash) as crash:
        session.check(TINY, name, "xnnpack-fp32")
    watcher.join()
    assert "crashed" in crash.value.message and "killed by a signal" in crash.value.message
    assert "info: run:" in crash.value.log_tail  # the runner's own stderr, from the device
    # the session dropped the target: the next case gets a fresh runner
    assert session.check(TINY, name, "xnnpack-fp32").verdict == "PASS"


def test_a_runner_fault_is_a_crash_with_the_fault_and_stderr(lab: PiLab) -> None:
    name = lab.device("pi-fault", runner_args=["--inject", "fault@1"], debug_commands=True)
    session = lab.session()
    with pytest.raises(TargetCrash) as crash:
        session.check(TINY, name, "xnnpack-fp32")
    assert "signal=11" in crash.value.message
    assert "fatal signal" in crash.value.log_tail


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    mounted: list[Path] = []

    def mount(size: str, read_only: bool = False) -> Path:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_full_disk_is_a_clear_deploy_error(lab: PiLab, tmpfs: Callable[..., Path]) -> None:
    disk = tmpfs("14m")  # the runner and its libraries (about 12 MB) fit; a 4 MB model not
    name = lab.device("pi-full", remote_dir=str(disk))
    session = lab.session()
    big = Case("pi_big_linear", lambda: nn.Linear(1024, 1024).eval(), seeded((1, 1024)))
    with pytest.raises(DeployError) as full:
        session.check(big, name, "xnnpack-fp32")
    text = str(full.value)
    assert "disk full" in text and "bytes free" in text and "fix:" in text
    assert not list((disk / "models").glob("*.part"))  # no half copy left behind


def test_a_read_only_folder_is_a_clear_deploy_error(lab: PiLab, tmpfs: Callable[..., Path]) -> None:
    disk = tmpfs("1m", read_only=True)
    name = lab.device("pi-readonly", remote_dir=str(disk / "hil"))
    session = lab.session()
    with pytest.raises(DeployError) as refused:
        session.check(TINY, name, "xnnpack-fp32")
    assert "Read-only file system" in str(refused.value) and str(disk) in str(refused.value)
