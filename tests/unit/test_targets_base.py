"""Target lifecycle states are enforced and named in the error."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.devices import TimingPolicy, parse_device
from hil.errors import TargetStateError, TargetUnavailable
from hil.targets.base import State
from hil.targets.host import HostTarget
from hil.timing import timed_runs

SPEC = parse_device({"name": "host", "kind": "host", "recipes": ["portable"]}, Path("host.yaml"))


def test_run_before_provision_is_refused_with_state_named() -> None:
    target = HostTarget(SPEC)
    with pytest.raises(
        TargetStateError,
        match=r"HostTarget\(host\)\.run\(\) needs state 'ready', but the target is 'new'",
    ):
        target.run(None, (), TimingPolicy())  # type: ignore[arg-type]


def test_teardown_is_idempotent_and_final() -> None:
    target = HostTarget(SPEC)
    target.provision()
    target.teardown()
    target.teardown()
    with pytest.raises(TargetStateError, match="'closed'"):
        target.deploy(None)  # type: ignore[arg-type]
    with pytest.raises(TargetStateError, match="provision once"):
        target.provision()


class HalfStarting(HostTarget):
    """Starts something, then fails to provision (an emulator up, its handshake refused)."""

    released: list[str]

    def _provision(self) -> None:
        self.released = []
        self.started = "emulator"
        raise TargetUnavailable("the handshake was refused")

    def _teardown(self) -> None:
        self.released.append(self.started)


def test_a_failed_provision_releases_what_it_started_and_closes_the_target() -> None:
    target = HalfStarting(SPEC)
    with pytest.raises(TargetUnavailable, match="refused"):
        target.provision()
    assert target.released == ["emulator"] and target.state is State.CLOSED
    target.teardown()  # nothing is released twice
    assert target.released == ["emulator"]


def test_timing_loop_honours_min_runs_and_max_runs() -> None:
    calls = []
    result, timings = timed_runs(
        lambda: calls.append(1) or len(calls),
        TimingPolicy(warmup=3, min_runs=4, min_time_s=0.0, max_runs=4),
    )
    assert len(timings) == 4 and len(calls) == 7 and result == 7
    _, capped = timed_runs(
        lambda: None, TimingPolicy(warmup=0, min_runs=2, min_time_s=60, max_runs=9, max_time_s=60)
    )
    assert len(capped) == 9
