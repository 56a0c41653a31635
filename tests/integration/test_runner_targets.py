"""The three runner targets (serial, ssh, fvp) share one base, RunnerTarget, and so one meaning
for each failure. Every kind here is the real thing that runs on this machine: the host runner
on a pty (serial), the aarch64 runner under qemu-aarch64 behind a real sshd on loopback (ssh),
the bare-metal runner in QEMU behind the fake FVP's terminal (fvp: the one stand-in, honouring
the FVP's contract in tests/fakes/fvp/CONTRACT.md). The faults are the runner's own: a DEBUG
request makes it fault or hang at its next RUN, as a broken model would."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml
from debug_builds import with_debug_commands
from fakes.fvp import ARTIFACTS_ENV, install
from fvp_devices import device as fvp_device

from hil import Case
from hil.devices import DeviceRegistry
from hil.errors import InfrastructureError, LinkTimeout, TargetCrash, TargetUnavailable
from hil.runner import messages as m
from hil.session import Session
from hil.targets import make_target
from hil.targets.fvp import FvpTarget
from hil.targets.runner_target import RunnerTarget
from hil.targets.serial import SerialTarget
from hil.targets.ssh import SshTarget

REPO = Path(__file__).resolve().parents[2]
SILENCE_S = 4.0  # run_timeout_s of every device here: how long a hung runner is waited for


def _relu() -> torch.nn.Module:
    return torch.nn.ReLU()


# Non-negative inputs: the echo runner of the fake FVP returns its inputs, which ReLU keeps.
CASE = Case(
    "runner_kinds_relu",
    _relu,
    lambda: (torch.rand(1, 8, 4, 4, generator=torch.Generator().manual_seed(0)),),
)


@dataclass(frozen=True)
class Kind:
    name: str
    cls: type[RunnerTarget]
    recipe: str
    missing: tuple[str, ...]  # what this machine lacks to run it for real

    def skip_reason(self) -> str | None:
        if not self.missing:
            return None
        return f"{', '.join(self.missing)} missing (make test installs them)"


def _missing(*tools: str) -> tuple[str, ...]:
    return tuple(t for t in tools if shutil.which(t) is None and not os.path.exists(t))


KINDS = [
    Kind("serial", SerialTarget, "portable", _missing("cmake", "g++")),
    Kind(
        "ssh",
        SshTarget,
        "portable",
        _missing("/usr/sbin/sshd", "qemu-aarch64", "aarch64-linux-gnu-g++")
        + (() if os.geteuid() == 0 else ("root",)),
    ),
    Kind("fvp", FvpTarget, "ethos-u", _missing("qemu-system-arm", "arm-none-eabi-gcc")),
]


def _device_file(kind: Kind, folder: Path) -> str:
    """A device of `kind` whose runner (a test build: it hangs or faults on request) may stay
    silent SILENCE_S inside a run."""
    name = f"{kind.name}-faults"
    if kind.name == "fvp":
        fvp_device(folder, name, run_timeout_s=SILENCE_S, debug_commands=True)
        return name
    source = {"serial": "vboard.yaml", "ssh": "pi5-emu.yaml"}[kind.name]
    spec = with_debug_commands(yaml.safe_load((REPO / "devices" / source).read_text()))
    spec["name"] = name
    spec["connection"]["run_timeout_s"] = SILENCE_S
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return name


@pytest.fixture(params=KINDS, ids=lambda kind: kind.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    chosen: Kind = request.param
    reason = chosen.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    return chosen


@pytest.fixture
def on_kind(
    kind: Kind, tmp_path: Path, shared_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Session, str]]:
    """A session over one device of `kind`, its runner provisioned and run once."""
    monkeypatch.setenv("HIL_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("HIL_EMU_DIR", str(tmp_path / "emu"))
    if kind.name == "fvp":
        monkeypatch.setenv("PATH", f"{install(tmp_path / 'fvp-bin')}:{os.environ['PATH']}")
        monkeypatch.setenv(ARTIFACTS_ENV, str(shared_cache))
        monkeypatch.delenv("HIL_FVP_DIR", raising=False)
    folder = tmp_path / "devices"
    folder.mkdir()
    name = _device_file(kind, folder)
    with Session(
        devices=DeviceRegistry.from_dirs([folder]),
        cache_dir=shared_cache,
        results_dir=tmp_path / "results",
    ) as session:
        session.check(CASE, name, kind.recipe)  # provisioned, the model held by the runner
        yield session, name


def _runner(session: Session, name: str, kind: Kind) -> RunnerTarget:
    target = session.target(name)
    assert isinstance(target, kind.cls)
    return target


def test_a_runner_that_faults_is_a_crash_on_every_kind(
    on_kind: tuple[Session, str], kind: Kind
) -> None:
    session, name = on_kind
    _runner(session, name, kind).client.debug(m.DEBUG_FAULT, during_next_run=True)
    with pytest.raises(TargetCrash) as crash:
        session.check(CASE, name, kind.recipe)
    assert "the runner crashed while running the model" in crash.value.message
    assert session.broken_cause(name) is None  # a crash does not retire the target
    session.check(CASE, name, kind.recipe)  # the next case gets a fresh runner


def test_a_runner_that_goes_silent_is_infrastructure_on_every_kind(
    on_kind: tuple[Session, str], kind: Kind
) -> None:
    session, name = on_kind
    _runner(session, name, kind).client.debug(m.DEBUG_HANG, during_next_run=True)
    with pytest.raises(LinkTimeout) as silent:
        session.check(CASE, name, kind.recipe)
    assert "while running the model" in silent.value.message
    assert isinstance(session.broken_cause(name), InfrastructureError)  # out of service


def test_every_kind_records_the_runner_it_gave_and_what_the_runner_says(
    on_kind: tuple[Session, str], kind: Kind
) -> None:
    """The build hil made for the device file and the sha256 of the binary it started, copied
    (ssh) or gave to the emulator (fvp), beside the runner's own account of its build: a test
    build here (it obeys DEBUG), with no kernel wrong on purpose."""
    session, name = on_kind
    facts = _runner(session, name, kind).describe()
    assert facts["expected_build_id"] == facts["build_id"]
    binary = Path(facts["runner_path"])
    assert facts["runner_sha256"] == hashlib.sha256(binary.read_bytes()).hexdigest()
    assert facts["protocol"] == "{}.{}".format(*m.PROTOCOL_VERSION)
    assert facts["debug_commands"] == "accepted" and facts["build"] == "test"
    assert "planted_fault" not in facts


@pytest.mark.parametrize("kind_name", [k.name for k in KINDS])
def test_no_runner_is_the_same_infrastructure_error_on_every_kind(
    kind_name: str, tmp_path: Path
) -> None:
    """Before provisioning (and after a runner is lost) no driver is held: the same class on
    all three, and describe() still answers."""
    kind = next(k for k in KINDS if k.name == kind_name)
    name = _device_file(kind, tmp_path)
    target = make_target(DeviceRegistry.from_dirs([tmp_path]).get(name))
    assert isinstance(target, kind.cls)
    with pytest.raises(InfrastructureError) as lost:
        target.client  # noqa: B018 - the property is what is tested
    assert not isinstance(lost.value, TargetUnavailable)
    assert f"{name}: no runner is connected" in lost.value.message
    assert target.describe()["name"] == name
