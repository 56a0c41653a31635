"""Retries on a local virtual board (no lab): a runner that stops answering is an
infrastructure error, retried on a freshly provisioned target; a crash and a verdict on the
model are never retried; every attempt is kept."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml
from board_signals import signal_when_logged
from debug_builds import with_debug_commands

from hil import Case, seeded
from hil.devices import DeviceRegistry, TimingPolicy
from hil.errors import LinkTimeout, TargetCrash
from hil.resources.virtual_boards import HostRunnerBoard
from hil.session import Session
from hil.targets.serial import SerialTarget

REPO = Path(__file__).resolve().parents[2]


def wide() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(256, 256)


# About 1.5 s of runs: long enough to stop the runner in the middle.
LONG = Case(
    "retry_long",
    wide,
    seeded((16, 256)),
    timing=TimingPolicy(warmup=0, min_runs=3, min_time_s=1.5, max_runs=99999, max_time_s=3.0),
)
OVER = Case("retry_over_budget", wide, seeded((4, 256)), budget_ms={"*": 1e-9})


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Session]]:
    """Device files of two local virtual boards (one whose runners fault on their first run);
    the sessions a test opens are closed after it."""
    monkeypatch.setenv("HIL_FIRMWARE_DIR", str(REPO / ".hil" / "firmware"))
    folder = tmp_path / "devices"
    folder.mkdir()
    for name, args in (("vb_plain", []), ("vb_faults", ["--inject", "fault@1"])):
        spec: dict[str, object] = {
            "name": name,
            "kind": "serial",
            "recipes": ["portable"],
            "latency": {"warmup": 0, "min_runs": 2, "min_time_s": 0.01, "max_runs": 10},
            "connection": {
                "virtual": "host-runner",
                "runner_args": args,
                "reply_timeout_s": 1.0,
                "run_timeout_s": 1.0,
            },
        }
        if args:  # a test build: --inject is refused by a release runner
            spec = with_debug_commands(spec)
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    made: list[Session] = []
    yield made
    for session in made:
        session.close()


def new_session(tmp_path: Path, cache: Path, retries: int) -> Session:
    return Session(
        devices=DeviceRegistry.from_dirs([REPO / "devices", tmp_path / "devices"]),
        cache_dir=cache,
        results_dir=tmp_path / "results",
        retries=retries,
    )


@pytest.mark.parametrize("retries", [0, 1])
def test_a_silent_runner_is_retried_on_a_fresh_target(
    sessions: list[Session], tmp_path: Path, shared_cache: Path, retries: int
) -> None:
    session = new_session(tmp_path, shared_cache, retries)
    sessions.append(session)
    target = session.target("vb_plain")
    assert isinstance(target, SerialTarget) and isinstance(target.board, HostRunnerBoard)
    # SIGSTOP once the long run has started: the runner is alive and silent.
    stopper = signal_when_logged(target.board, b"run: 0 warm-up, 3..99999", signal.SIGSTOP)
    if retries == 0:
        with pytest.raises(LinkTimeout):
            session.check(LONG, "vb_plain", "portable")
        assert session.broken_cause("vb_plain") is not None  # out of service, as before
    else:
        assert session.check(LONG, "vb_plain", "portable").passed
        assert session.broken_cause("vb_plain") is None
    stopper.join()
    attempts = session.last_attempts
    assert attempts is not None
    first = attempts.attempts[0]
    assert (first.board, first.verdict, first.error_class) == ("vb_plain", "INFRA", "LinkTimeout")
    if retries:
        assert first.recovery == "the target is provisioned afresh"
        assert [a.verdict for a in attempts.attempts] == ["INFRA", "PASS"]
    else:
        assert len(attempts.attempts) == 1


def test_a_crash_is_never_retried(
    sessions: list[Session], tmp_path: Path, shared_cache: Path
) -> None:
    session = new_session(tmp_path, shared_cache, retries=3)
    sessions.append(session)
    with pytest.raises(TargetCrash):  # every fresh runner faults on its first run
        session.check(LONG, "vb_faults", "portable")
    assert session.last_attempts is not None
    assert [a.verdict for a in session.last_attempts.attempts] == ["CRASH"]


def test_a_verdict_on_the_model_is_never_retried(
    sessions: list[Session], tmp_path: Path, shared_cache: Path
) -> None:
    session = new_session(tmp_path, shared_cache, retries=3)
    sessions.append(session)
    result = session.check(OVER, "vb_plain", "portable")
    assert result.verdict == "OVER BUDGET"
    assert session.last_attempts is not None
    assert [a.verdict for a in session.last_attempts.attempts] == ["OVER BUDGET"]
